import Foundation
import UploadCore

/// Running transfer attempts: start, progress, and the outcome fed back into the state machine.
extension Scheduler {
    func startAttempt(_ queued: Job) {
        var job = queued
        job.start(at: Date())
        let target: ResolvedTarget
        do {
            target = try TargetResolver(config: config, environment: dependencies.environment).resolve(job)
            if !target.probeForTus { _ = try dependencies.makeTransfer(target.uploadProtocol, dependencies.http) }
        } catch {
            store.apply(.job(job))
            finishWithoutTransfer(job, failure: error)
            return
        }
        if job.resolvedProtocol == nil && !target.probeForTus { job.resolvedProtocol = target.uploadProtocol }
        job.record("attempt \(job.attempts) started (\(target.probeForTus ? "auto" : target.uploadProtocol.rawValue))", at: Date())
        Log.job(.debug, JobLogContext(job), job.history.last?.message ?? "started")
        store.apply(.job(job))
        dependencies.events.publishState(info(for: job))
        dependencies.journal.append([.job(job)])

        let meter = ProgressMeter()
        let id = job.id
        let startedJob = job
        let makeTransfer = dependencies.makeTransfer
        let http = dependencies.http
        let task = Task { [weak self] in
            guard let self else { return }
            let outcome = await Self.runAttempt(
                job: startedJob, target: target, meter: meter, scheduler: self,
                makeTransfer: { try makeTransfer($0, http) }, http: http)
            await self.attemptEnded(id, outcome: outcome)
        }
        running[id] = RunningAttempt(task: task, meter: meter, ackedAtStart: job.bytesAcked, target: target)
    }

    /// The protocol `auto` chose for an http destination, journaled so later attempts keep it.
    func protocolResolved(_ id: JobID, _ uploadProtocol: UploadProtocol) {
        guard var job = store.jobs[id] else { return }
        job.resolvedProtocol = uploadProtocol
        job.record("the server speaks \(uploadProtocol.rawValue)", at: Date())
        store.apply(.job(job))
        dependencies.journal.append([.job(job)])
    }

    /// Runs one attempt; nil means it was stopped (pause, cancel, shutdown) rather than finished.
    private static func runAttempt(
        job: Job, target initialTarget: ResolvedTarget, meter: ProgressMeter, scheduler: Scheduler,
        makeTransfer: @Sendable (UploadProtocol) throws -> any Transfer, http: HTTPClient
    ) async -> AttemptOutcome? {
        var target = initialTarget
        do {
            guard let snapshot = job.snapshot else { throw TransferFailure.source("job \(job.id) has no source snapshot") }
            let source = try SourceFile(snapshot: snapshot, displayPath: job.spec.source)
            let id = job.id
            if target.probeForTus {
                target.settle(try await TusServer.speaksTus(http: http, target: target) ? .tus : .put)
                await scheduler.protocolResolved(id, target.uploadProtocol)
            }
            let transfer = try makeTransfer(target.uploadProtocol)
            let context = TransferContext(
                job: job, target: target, source: source, meter: meter,
                commit: { [weak scheduler] acked, checkpoint, durable in
                    try await scheduler?.commitProgress(id, bytesAcked: acked, checkpoint: checkpoint, durable: durable)
                },
                note: { [weak scheduler] message in await scheduler?.note(id, message) })
            return .completed(try await transfer.upload(context))
        } catch is CancellationError {
            return nil
        } catch let failure as TransferFailure {
            if Task.isCancelled { return nil }
            return .failed(failure.error, retryable: failure.retryable, retryAfter: failure.retryAfter)
        } catch {
            if Task.isCancelled { return nil }
            return .failed(JobError(code: "internal", message: "\(error)"), retryable: true, retryAfter: nil)
        }
    }

    /// Journals bytes the server has committed, and the protocol's checkpoint.
    func commitProgress(_ id: JobID, bytesAcked: Int64, checkpoint: Checkpoint?, durable: Bool) async throws {
        guard let job = store.jobs[id], job.state == .running else { throw CancellationError() }
        let progress = JobProgress(id: id, bytesAcked: max(bytesAcked, 0), checkpoint: checkpoint)
        store.apply(.progress(progress))
        try await journal([.progress(progress)], durable: durable)
    }

    /// A transfer's remark for the job's history.
    func note(_ id: JobID, _ message: String) {
        guard var job = store.jobs[id] else { return }
        job.record(message, at: Date())
        store.apply(.job(job))
        dependencies.journal.append([.job(job)])
        Log.job(.notice, JobLogContext(job), message)
    }

    /// An attempt ended: feed its outcome to the job's state machine and find more work.
    func attemptEnded(_ id: JobID, outcome: AttemptOutcome?) async {
        guard let attempt = running.removeValue(forKey: id) else { return }
        defer { fillSlots() }
        guard var job = store.jobs[id] else { return }
        guard let outcome else {
            // Stopped on purpose. A job paused and resumed meanwhile is queued again: let it start.
            enqueue(job)
            return
        }
        let madeProgress = job.bytesAcked > attempt.ackedAtStart
        let effects = job.finishAttempt(outcome, madeProgress: madeProgress, policy: config.retry, at: Date())
        guard !effects.isEmpty else { return }
        logOutcome(job)
        // The next job starts while this one's new state is being synced.
        store.apply(.job(job))
        enqueue(job)
        fillSlots()
        do {
            // Terminal states are durable before anyone hears of them: `wait` returning 0 means it stays done.
            // Only once that is on disk may the cached copy go: before the sync, a crash would bring
            // the job back without its bytes.
            let snapshots = dependencies.snapshots
            try await commit(job, durable: job.state.isTerminal) {
                if effects.contains(.deleteCachedFile) { snapshots.discard(job.snapshot) }
            }
        } catch {
            Log.error("job \(id): cannot journal its new state: \(error)")
        }
    }

    /// The attempt could not even start (unknown remote, unsupported protocol): the same rules apply.
    private func finishWithoutTransfer(_ started: Job, failure: any Error) {
        var job = started
        let transferFailure = failure as? TransferFailure ?? .config("\(failure)")
        _ = job.finishAttempt(
            .failed(transferFailure.error, retryable: transferFailure.retryable, retryAfter: transferFailure.retryAfter),
            madeProgress: false, policy: config.retry, at: Date())
        logOutcome(job)
        store.apply(.job(job))
        dependencies.events.publishState(info(for: job))
        dependencies.journal.append([.job(job)])
        enqueue(job)
    }

    private func logOutcome(_ job: Job) {
        let context = JobLogContext(job)
        switch job.state {
        case .completed:
            Log.job(.info, context, "completed: \(job.spec.source) -> \(job.result?.url ?? Redaction.redactURL(job.spec.destination))")
        case .failed:
            Log.job(.warning, context, "failed: \(job.error?.message ?? "unknown error")")
        case .queued:
            Log.job(.notice, context, job.history.last?.message ?? "retrying")
        default:
            break
        }
    }
}
