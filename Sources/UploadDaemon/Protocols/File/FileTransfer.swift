import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// Copies into a local directory: a new file under a random name in the target folder, fsync,
/// rename, and an fsync of the folder, so the final name only ever holds the whole file. Works
/// with no server at all.
///
/// The target folder may be shared with other users, who must not be able to redirect the copy:
/// the folder is reached through `OpenDirectory` (no symlink of theirs is followed), the new file
/// is made with `O_CREAT | O_EXCL | O_NOFOLLOW` under a name nobody can guess, and the rename
/// happens only while that name still holds our file.
struct FileTransfer: Transfer {
    /// Modes of what the copy creates: the user's umask applies (`ResolvedTarget.umask`), as for `cp`.
    static func fileMode(umask: mode_t) -> mode_t { 0o666 & ~umask }
    static func folderMode(umask: mode_t) -> mode_t { 0o777 & ~umask }

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        let canceled = Atomic<Bool>(false)
        let source = context.source
        let meter = context.meter
        let id = context.job.id
        let umask = target.umask
        let url = try await withTaskCancellationHandler {
            try await Blocking.run {
                let url = try Self.fileURL(of: target)
                try Self.copy(
                    source, to: try Self.path(of: url), jobID: id, umask: umask, meter: meter, canceled: canceled)
                return url
            }
        } onCancel: {
            canceled.store(true, ordering: .relaxed)
        }
        try Task.checkCancellation()
        try source.verifyUnchanged()
        return JobResult(url: url)
    }

    /// The file's URL: `target.url`, or in it when that names an existing folder (looked at here,
    /// on a thread of its own: a hung mount holds up this job only).
    static func fileURL(of target: ResolvedTarget) throws(TransferFailure) -> String {
        guard target.fileURLMayNameFolder else { return target.url }
        let path = try path(of: target.url)
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return target.url }
        return TargetResolver.fileURL(named: target.fileName, inFolder: path)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        try await Blocking.run {
            // Where the upload put it: the destination may name another folder since.
            let path = try Self.path(of: job.result?.url ?? Self.fileURL(of: target))
            let (folder, name) = try Self.split(path)
            let directory: OpenDirectory
            do {
                directory = try OpenDirectory.open(folder)
            } catch let error as SystemError where error.errno == ENOENT {
                return  // the folder is gone, and the file with it
            } catch {
                throw TransferFailure.io("cannot delete \(path): \(error)")
            }
            if unlinkat(directory.fd, name, 0) != 0 && errno != ENOENT {
                throw TransferFailure.io(SystemError("delete", path: path).description)
            }
            try? directory.sync()
        }
    }

    private static func path(of url: String) throws(TransferFailure) -> String {
        guard let parsed = URL(string: url), parsed.isFileURL, parsed.path.hasPrefix("/") else {
            throw .config("not a file destination: \(url)")
        }
        return parsed.path
    }

    /// The folder and the file name of a destination path.
    private static func split(_ path: String) throws(TransferFailure) -> (folder: String, name: String) {
        let name = (path as NSString).lastPathComponent
        let folder = (path as NSString).deletingLastPathComponent
        guard SafeFileName.isSafe(name), folder.hasPrefix("/") else {
            throw .config("\(path) does not name a file in a folder")
        }
        return (folder, name)
    }

    private static func copy(
        _ source: SourceFile, to destination: String, jobID: JobID, umask: mode_t, meter: ProgressMeter,
        canceled: borrowing Atomic<Bool>
    ) throws {
        let (folder, name) = try split(destination)
        let directory: OpenDirectory
        do {
            directory = try OpenDirectory.open(folder, creatingMissingWith: folderMode(umask: umask))
        } catch let refusal as OpenDirectory.Refusal {
            throw TransferFailure(JobError(code: "config", message: refusal.description), retryable: false)
        } catch {
            let error = error as? SystemError
            throw TransferFailure.io(
                "\(error.map(\.description) ?? "cannot open \(folder)")", retryable: error?.isNoSpace ?? false)
        }
        LeftoverCopies.sweepOnce(directory)
        // Short, whatever the name's length (names may use all 255 bytes NAME_MAX allows), and
        // unguessable: nobody can plant a file or symlink under it beforehand.
        let temp = LeftoverCopies.temporaryName(for: jobID)
        let fd = openat(directory.fd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let error = SystemError("create", path: "\(folder)/\(temp)")
            throw TransferFailure.io(error.description, retryable: error.isNoSpace)
        }
        var renamed = false
        defer {
            if !renamed { Self.removeIfOurs(temp, in: directory, fd: fd) }
            close(fd)
        }
        var created = stat()
        guard fstat(fd, &created) == 0 else { throw TransferFailure.io(SystemError("stat", path: temp).description) }
        // Exactly the user's mode, whatever the daemon's own umask.
        guard fchmod(fd, fileMode(umask: umask)) == 0 else {
            throw TransferFailure.io(SystemError("chmod", path: "\(folder)/\(temp)").description)
        }
        // Offsets in the source file: a packed copy's bytes begin at `start`.
        var offset = source.start
        let end = source.start + source.size
        let chunk = 8 << 20
        while offset < end {
            if canceled.load(ordering: .relaxed) { throw CancellationError() }
            let want = Int(min(Int64(chunk), end - offset))
            let before = offset
            let copied = FileCopy.copyRange(from: source.fd, offset: &offset, to: fd, length: want)
            if copied < 0 {
                let error = SystemError("write", path: "\(folder)/\(temp)")
                throw TransferFailure.io(error.description, retryable: error.isNoSpace)
            }
            if copied == 0 { throw TransferFailure.source("\(source.displayPath) is shorter than when it was added") }
            meter.add(Int(offset - before))
        }
        guard fsync(fd) == 0 else {
            throw TransferFailure.io(SystemError("fsync", path: "\(folder)/\(temp)").description)
        }
        // Checked before the rename: a file that changed while it was copied never gets the final name.
        try source.verifyUnchanged()
        // In a folder others can write to, our file could have been swapped for theirs meanwhile:
        // only our own inode gets the final name.
        guard let entry = try directory.entryStatus(temp), entry.st_dev == created.st_dev,
            entry.st_ino == created.st_ino
        else {
            throw TransferFailure.io(
                "\(folder)/\(temp) was replaced by someone else while it was written; not renaming it")
        }
        guard renameat(directory.fd, temp, directory.fd, name) == 0 else {
            throw TransferFailure.io(SystemError("rename", path: destination).description)
        }
        renamed = true
        // Until the folder is synced the new name may not survive a power cut: a failure is retried
        // (the copy is made again and takes the name again), not reported as stored.
        do {
            try directory.sync()
        } catch {
            throw TransferFailure.io("\(error); the copy in \(folder) may not survive a power cut", retryable: true)
        }
    }

    /// Removes the temporary name, unless it no longer holds the file we opened.
    private static func removeIfOurs(_ temp: String, in directory: OpenDirectory, fd: Int32) {
        var opened = stat()
        guard fstat(fd, &opened) == 0, let entry = try? directory.entryStatus(temp),
            entry.st_dev == opened.st_dev, entry.st_ino == opened.st_ino
        else { return }
        unlinkat(directory.fd, temp, 0)
    }
}
