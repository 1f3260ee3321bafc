import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// One attempt of a job's upload, run off the scheduler: the source opened, the network asked,
/// `auto` probed, the protocol's `Transfer` run. It owns nothing of the queue; what it tells the
/// queue goes through `Queue`, and its outcome goes back to `Scheduler.attemptEnded`.
struct AttemptRun: Sendable {
    /// What an attempt tells the queue while it runs.
    struct Queue: Sendable {
        /// The protocol `auto` chose, and why.
        var protocolResolved: @Sendable (UploadProtocol, String) async -> Void
        /// Waits until the job's copy, made alongside, is saved: nil, or why its add was undone.
        var untilSaved: @Sendable () async -> RPCError?
        var commit: @Sendable (_ bytesAcked: Int64, _ checkpoint: Checkpoint?, _ durable: Bool) async throws -> Void
        var note: @Sendable (_ message: String) async -> Void
    }

    let job: Job
    /// The copy of the job's file, while it is being made (`Scheduler+CopyAlongside`).
    let growing: GrowingCopy?
    let target: ResolvedTarget
    /// Made when the attempt started, unless `auto` must probe first.
    let transfer: (any Transfer)?
    let meter: ProgressMeter
    let http: any HTTPSending
    let makeTransfer: @Sendable (UploadProtocol) throws -> any Transfer
    let reachability: @Sendable (String, Bool) async -> Reachability.Answer
    let probeAnswers: ProbeAnswers
    let queue: Queue

    /// Runs the attempt; nil means it was stopped (pause, cancel, shutdown) rather than finished.
    func run() async -> AttemptOutcome? {
        var target = self.target
        let usesNetwork = TransferRegistry.entry(target.uploadProtocol).usesNetwork
        do {
            guard let snapshot = job.snapshot else {
                throw TransferFailure.source("job \(job.id) has no source snapshot")
            }
            let source = try Self.openSource(of: job, snapshot: snapshot, growing: growing)
            // Offline, nothing is tried: the job waits for the network and spends no attempt.
            if usesNetwork, case .unreachable(let reason) = await reachability(target.url, false) {
                return .noNetwork(reason)
            }
            if target.needsProbe {
                let (chosen, why) = try await TransferRegistry.resolveAuto(
                    http: http, target: target, remembering: probeAnswers)
                target.settle(chosen)
                await queue.protocolResolved(target.uploadProtocol, why)
            }
            if growing != nil && !TransferRegistry.entry(target.uploadProtocol).readsWhileCopying,
                await queue.untilSaved() != nil
            {
                throw CancellationError()  // the add is undone, and the job with it
            }
            try Task.checkCancellation()
            let transfer = try self.transfer ?? makeTransfer(target.uploadProtocol)
            let context = TransferContext(
                job: job, target: target, source: source, meter: meter,
                commit: queue.commit, note: queue.note)
            return .completed(try await transfer.upload(context))
        } catch is CancellationError {
            return nil
        } catch let failure as TransferFailure {
            if Task.isCancelled { return nil }
            // The network may have gone away during the attempt: then it did not count either.
            if usesNetwork, ["network", "timeout", "stalled"].contains(failure.error.code),
                case .unreachable(let reason) = await reachability(target.url, true)
            {
                return .noNetwork(reason)
            }
            return .failed(failure.error, retryable: failure.retryable, retryAfter: failure.retryAfter)
        } catch {
            if Task.isCancelled { return nil }
            return .failed(JobError(code: "internal", message: "\(error)"), retryable: true, retryAfter: nil)
        }
    }

    /// What an attempt sends: the prepared file when preparation made one (checked against the
    /// journaled SHA-256, so that a resume sends the bytes the server already has part of), else
    /// the snapshot.
    private static func openSource(of job: Job, snapshot: SourceSnapshot, growing: GrowingCopy?) throws -> SourceFile {
        guard let prepared = job.prepared, prepared.path != snapshot.path else {
            return try SourceFile(snapshot: snapshot, displayPath: job.spec.source, growing: growing)
        }
        let source = try SourceFile(cachedFile: prepared.path, displayPath: job.spec.source)
        guard source.size == prepared.size, try source.sha256Hex() == prepared.sha256 else {
            throw TransferFailure.source(
                "the prepared copy of \(job.spec.source) (\(prepared.path)) changed in the cache since it was made; add the file again"
            )
        }
        return source
    }
}
