import Foundation
import Glibc
import CShims
import UploadCore

/// Protects a job's bytes from changes between `add` and upload: a reflink into the cache when the
/// file system can, else a copy when there is room, else the original with an identity guard.
struct SnapshotCache: Sendable {
    let directory: String

    init(cacheDirectory: String) {
        directory = cacheDirectory + "/snapshots"
    }

    func prepare() throws {
        try FileOps.makeDirectory(directory)
    }

    func path(for id: JobID) -> String { "\(directory)/\(id)" }

    /// Checks the source and takes its snapshot. Blocking: call it off the cooperative pool.
    /// The file itself, as it is now (what `--snapshot none` uploads): checked to be a regular
    /// file and readable.
    func original(of source: String) throws(TransferFailure) -> SourceSnapshot {
        let fd = try SourceCheck.openRegularFile(source)
        defer { close(fd) }
        return Self.original(source, fd: fd)
    }

    private static func original(_ source: String, fd: Int32) -> SourceSnapshot {
        var info = stat()
        fstat(fd, &info)
        return SourceSnapshot(
            kind: .original, path: source, size: Int64(info.st_size), device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    func snapshot(source: String, id: JobID, mode: SnapshotMode) throws(TransferFailure) -> SourceSnapshot {
        let sourceFD = try SourceCheck.openRegularFile(source)
        defer { close(sourceFD) }
        let original = Self.original(source, fd: sourceFD)
        if mode == .none { return original }

        let target = path(for: id)
        unlink(target)
        let targetFD = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard targetFD >= 0 else {
            let error = SystemError("create snapshot", path: target)
            if mode == .auto {
                Log.warning("\(error); uploading job \(id) from the original file")
                return original
            }
            throw .io(error.description)
        }
        var done = false
        defer {
            close(targetFD)
            if !done { unlink(target) }
        }
        if CShims_reflink(targetFD, sourceFD) == 0 {
            done = true
            return SourceSnapshot(
                kind: .reflink, path: target, size: original.size, device: original.device, inode: original.inode,
                modificationTimeNanoseconds: original.modificationTimeNanoseconds)
        }
        // Leave some room for everything else on that file system: a copy never takes the last 64 MiB.
        let reserve: Int64 = 64 << 20
        if let free = FileOps.availableBytes(at: directory), free < original.size + reserve {
            if mode == .auto { return original }
            throw TransferFailure(
                JobError(
                    code: "no_space",
                    message: "no room for a copy of \(source) (\(ByteSize.format(original.size))) in \(directory):"
                        + " \(ByteSize.format(free)) free; free some space or add it with --snapshot none"),
                retryable: false)
        }
        do {
            try copyContents(from: sourceFD, to: targetFD, length: original.size, target: target)
        } catch {
            let noSpace = (error as? SystemError)?.isNoSpace ?? false
            if noSpace && mode == .auto { return original }
            throw TransferFailure(
                JobError(code: noSpace ? "no_space" : "io", message: "snapshot of \(source): \(error)"), retryable: false)
        }
        done = true
        return SourceSnapshot(
            kind: .copy, path: target, size: original.size, device: original.device, inode: original.inode,
            modificationTimeNanoseconds: original.modificationTimeNanoseconds)
    }

    /// Deletes a job's cached file, if it has one.
    func discard(_ snapshot: SourceSnapshot?) {
        guard let snapshot, snapshot.isCached, snapshot.path.hasPrefix(directory + "/") else { return }
        unlink(snapshot.path)
    }

    /// Deletes cached files no job refers to (left by a crash between snapshot and journal).
    func removeOrphans(keeping paths: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where !paths.contains(directory + "/" + name) {
            unlink(directory + "/" + name)
            Log.debug("removed orphaned snapshot \(name)")
        }
    }

    /// FileCopy in a loop (copy_file_range where the kernel can), then fdatasync so the
    /// copy is on disk before the job that relies on it is journaled.
    private func copyContents(from source: Int32, to target: Int32, length: Int64, target path: String) throws {
        var copied: Int64 = 0
        while copied < length {
            let chunk = Int(min(length - copied, 1 << 30))
            let count = FileCopy.copyRange(from: source, offset: &copied, to: target, length: chunk)
            if count < 0 { throw SystemError("copy into", path: path) }
            if count == 0 { break }
        }
        try syscall("fdatasync", path: path) { fdatasync(target) }
    }
}

/// Checks that a path is a regular, readable file, with messages that say what to do.
enum SourceCheck {
    static func openRegularFile(_ path: String) throws(TransferFailure) -> Int32 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let error = SystemError("read", path: path)
            if error.errno == ENOENT { throw .source("\(path) does not exist") }
            throw .source(error.description)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .source("\(path) is a directory; add the files in it (for example uploadctl add \(path)/*)")
        case S_IFIFO: throw .source("\(path) is a FIFO; only regular files can be uploaded (their size must be known)")
        case S_IFCHR, S_IFBLK: throw .source("\(path) is a device; only regular files can be uploaded")
        case S_IFSOCK: throw .source("\(path) is a socket; only regular files can be uploaded")
        default: throw .source("\(path) is not a regular file")
        }
        // O_NONBLOCK: a FIFO swapped in after the stat must not hang the open (regular files ignore it).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw .source(SystemError("read", path: path).description) }
        return fd
    }
}
