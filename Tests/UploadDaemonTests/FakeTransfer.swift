import Foundation
import Synchronization
import UploadCore
import UploadWire

@testable import UploadDaemon

/// A scripted `Transfer`: each attempt of a file (by its name) takes the next step of its script,
/// and everything the scheduler asks of it is recorded for the test to check.
final class FakeTransfer: Transfer {
    enum Step: Sendable {
        case succeed
        /// Succeeds with no progress committed before the end, as one request's upload (PUT, POST).
        case succeedInOneRequest
        case fail(TransferFailure)
        /// Journals a checkpoint (as a server's upload URL would be), then fails.
        case failHoldingUpload(TransferFailure)
        /// Runs until `release(name)` has been called (then succeeds) or until the task is canceled.
        case hold
    }

    struct Record {
        var scripts: [String: [Step]] = [:]
        var started: [String] = []
        var running: Set<String> = []
        var maxRunning = 0
        var released: Set<String> = []
        var canceled: [String] = []
        var discarded: [String] = []
        var deleted: [String] = []
        /// While set, discards of partial uploads wait (as a slow server's DELETE).
        var discardsHeld = false
        /// What each upload sent (by the source's name): the name on the server and the bytes.
        var sent: [String: (fileName: String, bytes: [UInt8])] = [:]
    }

    private let record = Mutex(Record())
    /// The step for a file with no script left.
    let defaultStep: Step

    init(defaultStep: Step = .succeed) { self.defaultStep = defaultStep }

    func script(_ name: String, _ steps: [Step]) { record.withLock { $0.scripts[name] = steps } }
    func release(_ name: String) { _ = record.withLock { $0.released.insert(name) } }
    func holdDiscards(_ held: Bool) { record.withLock { $0.discardsHeld = held } }
    var snapshot: Record { record.withLock { $0 } }
    var started: [String] { snapshot.started }

    func upload(_ context: TransferContext) async throws -> JobResult {
        let name = (context.job.spec.source as NSString).lastPathComponent
        let step = record.withLock { record -> Step in
            record.started.append(name)
            record.running.insert(name)
            record.maxRunning = max(record.maxRunning, record.running.count)
            if var steps = record.scripts[name], !steps.isEmpty {
                let step = steps.removeFirst()
                record.scripts[name] = steps
                return step
            }
            return defaultStep
        }
        defer { _ = record.withLock { $0.running.remove(name) } }
        switch step {
        case .succeed, .succeedInOneRequest:
            break
        case .fail(let failure):
            throw failure
        case .failHoldingUpload(let failure):
            try await context.commit(0, Checkpoint(kind: "fake", payload: Array(name.utf8)), true)
            throw failure
        case .hold:
            while !record.withLock({ $0.released.contains(name) }) {
                do {
                    try await Task.sleep(for: .milliseconds(2))
                } catch {
                    record.withLock { $0.canceled.append(name) }
                    throw error
                }
            }
        }
        // As a request body would pause, for a copy made alongside.
        while let growing = context.source.growing, !growing.isCopied { try await Task.sleep(for: .milliseconds(2)) }
        var bytes: [UInt8] = []
        try context.source.forEachPiece(offset: 0, length: context.source.size) { bytes += $0 }
        record.withLock { $0.sent[name] = (context.target.fileName, bytes) }
        context.meter.add(Int(context.source.size))
        if case .succeedInOneRequest = step { return JobResult(url: context.target.url, status: 201) }
        try await context.commit(context.source.size, nil, true)
        return JobResult(url: context.target.url, status: 201)
    }

    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {
        while record.withLock({ $0.discardsHeld }) { try await Task.sleep(for: .milliseconds(2)) }
        record.withLock { $0.discarded.append((job.spec.source as NSString).lastPathComponent) }
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        record.withLock { $0.deleted.append((job.spec.source as NSString).lastPathComponent) }
    }
}
