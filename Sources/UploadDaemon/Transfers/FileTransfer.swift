import Dispatch
import Foundation
import Glibc
import Synchronization
import UploadCore

/// Copies into a local directory: a temporary name in the target directory, fsync, rename, and a
/// directory fsync, so the final name only ever holds the whole file. Works with no server at all.
struct FileTransfer: Transfer {
    func upload(_ context: TransferContext) async throws -> JobResult {
        guard let url = URL(string: context.target.url), url.isFileURL else {
            throw TransferFailure.config("not a file destination: \(context.target.url)")
        }
        let destination = url.path
        let canceled = Atomic<Bool>(false)
        let source = context.source
        let meter = context.meter
        let id = context.job.id
        try await withTaskCancellationHandler {
            try await Blocking.run {
                try Self.copy(source, to: destination, jobID: id, meter: meter, canceled: canceled)
            }
        } onCancel: {
            canceled.store(true, ordering: .relaxed)
        }
        try Task.checkCancellation()
        try source.verifyUnchanged()
        return JobResult(url: context.target.url)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        guard let path = URL(string: target.url)?.path else { return }
        if unlink(path) != 0 && errno != ENOENT {
            throw TransferFailure.io(SystemError("delete", path: path).description)
        }
    }

    private static func copy(
        _ source: SourceFile, to destination: String, jobID: JobID, meter: ProgressMeter, canceled: borrowing Atomic<Bool>
    ) throws {
        let directory = (destination as NSString).deletingLastPathComponent
        do {
            try FileOps.makeDirectory(directory, mode: 0o755)
        } catch {
            throw TransferFailure.io("\(error)")
        }
        // Short, whatever the name's length (names may use all 255 bytes NAME_MAX allows).
        let temp = "\(directory)/.uploadd-\(jobID).part"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TransferFailure.io(SystemError("create", path: temp).description) }
        var renamed = false
        defer {
            close(fd)
            if !renamed { unlink(temp) }
        }
        var offset: Int64 = 0
        let chunk = 8 << 20
        while offset < source.size {
            if canceled.load(ordering: .relaxed) { throw CancellationError() }
            let want = Int(min(Int64(chunk), source.size - offset))
            let before = offset
            let copied = FileCopy.copyRange(from: source.fd, offset: &offset, to: fd, length: want)
            if copied < 0 {
                let error = SystemError("write", path: temp)
                throw TransferFailure.io(error.description, retryable: error.isNoSpace)
            }
            if copied == 0 { throw TransferFailure.source("\(source.displayPath) is shorter than when it was added") }
            meter.add(Int(offset - before))
        }
        guard fsync(fd) == 0 else { throw TransferFailure.io(SystemError("fsync", path: temp).description) }
        // Checked before the rename: a file that changed while it was copied never gets the final name.
        try source.verifyUnchanged()
        guard rename(temp, destination) == 0 else {
            throw TransferFailure.io(SystemError("rename", path: destination).description)
        }
        renamed = true
        try? FileOps.syncDirectory(directory)
    }
}

/// Runs blocking work on a thread outside the cooperative pool.
enum Blocking {
    private static let queue = DispatchQueue(label: "uploadd.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
