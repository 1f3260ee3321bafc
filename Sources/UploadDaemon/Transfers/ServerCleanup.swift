import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// What the queue asks a server to drop, off the actor: the partial upload of a canceled or
/// removed job, and a finished upload (`job.delete`). The target is resolved as an attempt would,
/// and the protocol's `Transfer` does the asking.
struct ServerCleanup: Sendable {
    let config: DaemonConfig
    let environment: [String: String]
    let umask: mode_t
    let http: any HTTPSending
    let makeTransfer: @Sendable (UploadProtocol, any HTTPSending) throws -> any Transfer

    /// The waits before each try of a discard: a server that is down for a minute still hears it.
    static let discardDelays = [0, 1, 4, 15, 60]

    /// Asks the server to drop what it holds of `job`'s unfinished upload, trying again after each
    /// of `discardDelays`; false if no try went through (the next start tries again).
    func discardPartialUpload(of job: Job) async -> Bool {
        for delay in Self.discardDelays {
            if delay > 0 { try? await Task.sleep(for: .seconds(delay)) }
            do {
                let target = try TargetResolver(config: config, environment: environment).resolve(job)
                if !target.needsProbe {
                    try await makeTransfer(target.uploadProtocol, http).discardPartialUpload(job, target: target)
                }
                return true
            } catch {
                Log.job(.warning, JobLogContext(job), "could not discard the partial upload on the server: \(error)")
            }
        }
        return false
    }

    /// Deletes a completed job's upload from the server: whether it was there to delete.
    func deleteFromServer(_ job: Job) async throws -> DeleteOutcome {
        let target = try TargetResolver(config: config, environment: environment, umask: umask).resolve(job)
        return try await makeTransfer(target.uploadProtocol, http).deleteFromServer(job, target: target)
    }
}
