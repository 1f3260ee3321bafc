import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Runs a job's preparation steps in order, from its snapshot to one file in the cache, and
/// describes that file for the journal: its size, its SHA-256, the name and type it goes out with.
/// What a step leaves behind is removed, whether it succeeds, fails or is cancelled.
struct Preparer: Sendable {
    let steps: [String: any PreparationStep]
    let cache: SnapshotCache

    /// Refuses steps this daemon lacks and options they refuse: `add` fails with the message.
    func validate(_ requests: [PreparationRequest]) throws(PreparationFailure) {
        for request in requests {
            guard let step = steps[request.step] else {
                let option = request.step == "image" ? " (--image)" : ""
                throw PreparationFailure(
                    "\(request.step) preparation\(option) is not available in this uploadd; add the file without it")
            }
            try step.validate(options: request.options)
        }
    }

    /// Prepares `source` (the job's snapshot, open). When no step changed a byte, the prepared
    /// file is the snapshot itself.
    /// Prepares a queued job from its snapshot: the file its upload sends, or why not.
    func prepare(_ job: Job) async -> Result<PreparedFile, any Error> {
        do {
            guard let snapshot = job.snapshot else {
                throw TransferFailure.source("job \(job.id) has no source snapshot")
            }
            let source = try SourceFile(snapshot: snapshot, displayPath: job.spec.source)
            let fileName = SafeFileName.component(from: job.spec.source) ?? "file"
            return .success(try await prepare(job, source: source, fileName: fileName))
        } catch {
            return .failure(error)
        }
    }

    func prepare(_ job: Job, source: SourceFile, fileName: String) async throws -> PreparedFile {
        let finalPath = cache.newPreparedPath(for: job.id)
        var current = source
        var name = fileName
        var contentType: String?
        var details: [KeyValue] = []
        var partials: [String] = []
        defer { for path in partials { unlink(path) } }
        // A step reads its input from the file's first byte: a pack holds other jobs' bytes too,
        // so `add` never packs a job that has steps.
        guard source.start == 0 else {
            throw TransferFailure.source("the copy of \(job.spec.source) is in a pack; add the file again")
        }
        for (index, request) in job.spec.preparation.enumerated() {
            guard let step = steps[request.step] else {
                throw TransferFailure.config(
                    "this uploadd has no \(request.step) preparation (another version added the job); clear it and add the file again"
                )
            }
            let path = "\(finalPath).\(index).partial"
            let output = try cache.createPreparedFile(path)
            partials.append(path)
            let outcome: PreparationOutcome
            do {
                defer { close(output) }
                outcome = try await step.prepare(
                    PreparationInput(
                        fd: current.fd, size: current.size, fileName: name,
                        temporaryRoot: cache.helperTemporaryDirectory), into: output,
                    options: request.options)
                if !outcome.unchanged, fsync(output) != 0 {
                    // The disk's problem, not the file's: retried, never taken for a bad image.
                    let error = SystemError("fsync", path: path)
                    throw TransferFailure.io("preparation: \(error)", noSpace: error.isNoSpace, retryable: true)
                }
            } catch let failure as PreparationFailure {
                throw TransferFailure.source("\(request.step) preparation of \(job.spec.source): \(failure)")
            } catch let failure as HelperProcess.Failure {
                throw TransferFailure.source("\(request.step) preparation of \(job.spec.source): \(failure)")
            }
            details += outcome.details
            guard !outcome.unchanged else { continue }
            name = outcome.fileName ?? name
            contentType = outcome.contentType ?? contentType
            current = try SourceFile(cachedFile: path, displayPath: job.spec.source)
        }
        if current !== source {
            try syscall("rename", path: finalPath) { rename(current.snapshot.path, finalPath) }
            // Removed too if anything below fails; kept once this returns.
            partials = partials.map { $0 == current.snapshot.path ? finalPath : $0 }
            try cache.syncPreparedFolder()
            current = try SourceFile(cachedFile: finalPath, displayPath: job.spec.source)
        }
        let sha256 = try current.sha256Hex()
        partials.removeAll { $0 == finalPath }
        return PreparedFile(
            path: current.snapshot.path, size: current.size, sha256: sha256,
            fileName: name == fileName ? nil : name, contentType: contentType, details: details)
    }
}
