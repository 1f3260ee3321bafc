import CShims
import Foundation
import Glibc
import UploadCore
import UploadWire

/// Small file-system operations the daemon needs, each with a clear error.
package enum FileOps {
    /// `pread`, again when a signal interrupted it: the bytes read, 0 at the end, or -1 with errno.
    package static func readAt(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
        while true {
            let result = pread(fd, buffer, count, off_t(offset))
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    /// Creates `path` and its parents with `mode` if missing.
    ///
    /// Each folder it makes is made durable in its parent (fsync of the parent): a power cut must
    /// not take away the folder that holds an acknowledged journal or snapshot.
    package static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path, parent != "/" { try makeDirectory(parent, mode: mode) }
        if mkdir(path, mode) == 0 {
            try syncDirectory(parent.isEmpty ? "/" : parent)
        } else if errno != EEXIST {
            throw SystemError("create directory", path: path)
        }
    }

    /// Makes `path` (and missing parents, 0700) and checks that it is a folder only we can change:
    /// ours, not a symlink, not writable by group or others, and so is every folder above it up to
    /// `/` (`TrustedPath`: the user's or root's, and not writable by others unless sticky, as /tmp
    /// is). Files in it are then safe from other users: nobody else can plant a symlink or swap a
    /// file there, nor swap the folder itself by renaming one above it. `what` and `option` name it
    /// in the refusal ("the state directory", "--state-dir").
    package static func preparePrivateDirectory(_ path: String, what: String, option: String) throws {
        try makeDirectory(path)
        var info = stat()
        guard lstat(path, &info) == 0 else { throw SystemError("stat", path: path) }
        func refuse(_ reason: String, _ fix: String) -> PrivateDirectoryError {
            PrivateDirectoryError(
                message: "refusing \(path) as \(what): \(reason); \(fix), or choose another with \(option)")
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            throw refuse("it is a symlink", "point \(option) at the real folder")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw refuse("it is not a folder", "move it away") }
        guard info.st_uid == getuid() else {
            throw refuse("it belongs to uid \(info.st_uid), not to you (uid \(getuid()))", "use a folder of your own")
        }
        guard info.st_mode & 0o022 == 0 else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            throw refuse("others can write to it (mode \(mode))", "run chmod go-w \(path)")
        }
        do {
            _ = try TrustedPath.check(path, what: what)
        } catch {
            throw PrivateDirectoryError(message: "\(error), or choose another with \(option)")
        }
    }

    /// A new folder of ours beneath `parent` (made 0700 if missing), 0700, with an unguessable
    /// name starting `prefix-` (mkdtemp).
    package static func makeTemporaryDirectory(in parent: String, prefix: String) throws -> String {
        try makeDirectory(parent)
        var template = Array("\(parent)/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError("create a temporary folder in", path: parent)
        }
        return String(cString: made)
    }

    /// Removes the folder `path` and everything in it, following no symlink. What another process
    /// of ours left there may have taken its own rights away (a folder chmod 000): folders are
    /// opened up (they are ours) before they are read. True when `path` is gone.
    @discardableResult
    package static func removeTree(_ path: String) -> Bool {
        chmod(path, 0o700)
        let folder = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if folder >= 0 {
            removeContents(of: folder, depth: 0)
            close(folder)
        }
        return rmdir(path) == 0 || errno == ENOENT
    }

    /// Empties the open folder `folder`; folders deeper than 64 levels are left (and so is their
    /// parent, which then fails to go).
    private static func removeContents(of folder: Int32, depth: Int) {
        let listing = dup(folder)
        guard listing >= 0, let stream = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            return
        }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = FolderNames.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(stream)
        for name in names {
            if unlinkat(folder, name, 0) == 0 || errno == ENOENT { continue }
            // EISDIR: a folder, removed with what is in it.
            guard errno == EISDIR, depth < 64 else { continue }
            fchmodat(folder, name, 0o700, 0)
            let inner = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard inner >= 0 else { continue }
            removeContents(of: inner, depth: depth + 1)
            close(inner)
            unlinkat(folder, name, AT_REMOVEDIR)
        }
    }

    /// fsync of a directory, so a rename or create in it survives a power loss.
    package static func syncDirectory(_ path: String) throws {
        let fd = try syscall("open", path: path) { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try syscall("fsync", path: path) { fsync(fd) }
    }

    /// Writes all of `bytes` at the descriptor's position.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = try syscall("write", path: path) {
                write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
            offset += written
        }
    }

    /// A new, empty file of ours at `path`, open for writing: a leftover there (of a crash) is
    /// removed first and never written through (O_EXCL | O_NOFOLLOW).
    package static func createFresh(_ path: String, mode: mode_t = 0o600, operation: String = "create")
        throws(SystemError)
        -> Int32
    {
        unlink(path)
        return try syscall(operation, path: path) {
            open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        }
    }

    /// Writes a small file atomically: temp file, fsync, rename, directory fsync.
    package static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let temp = path + ".tmp"
        let fd = try createFresh(temp, mode: mode)
        do {
            try bytes.withUnsafeBytes { (buffer) in try writeAll(fd, buffer, path: temp) }
            try syscall("fsync", path: temp) { fsync(fd) }
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
        close(fd)
        try syscall("rename", path: temp) { rename(temp, path) }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Makes `fd` `size` bytes long with its blocks taken at once (fallocate), so that what is
    /// written into it later cannot run out of space halfway, and the free space every later check
    /// sees counts it: true. Where the file system cannot (NFS, FUSE: EOPNOTSUPP), the file is only
    /// made that long, sparse: false. Throws ENOSPC when the space is not there.
    package static func reserve(_ fd: Int32, size: Int64, path: String) throws(SystemError) -> Bool {
        guard size > 0 else { return true }
        if CShims_fallocate(fd, size) == 0 { return true }
        guard errno == EOPNOTSUPP || errno == ENOSYS else { throw SystemError("reserve space for", path: path) }
        guard ftruncate(fd, off_t(size)) == 0 else { throw SystemError("size", path: path) }
        return false
    }

    /// Free bytes for an unprivileged user on the file system holding `path`.
    package static func availableBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// What the symlink at `path` points to, as written in it; nil when it cannot be read (errno
    /// says why: nothing else runs after the `readlink` then).
    package static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length >= 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads a whole file (a config, a key, the journal), as bytes. `followSymlinks: false` for files
    /// in our own folders.
    package static func readFile(_ path: String, followSymlinks: Bool = true) throws -> [UInt8] {
        let flags = O_RDONLY | O_CLOEXEC | (followSymlinks ? 0 : O_NOFOLLOW)
        let fd = try syscall("open", path: path) { open(path, flags) }
        defer { close(fd) }
        // Read into one array sized by the file: a 250 MB journal is then one allocation and one
        // copy from the kernel, not a doubling array copied again at each growth.
        var info = stat()
        let expected = fstat(fd, &info) == 0 && info.st_size > 0 ? Int(info.st_size) : 0
        var result = [UInt8](repeating: 0, count: max(expected + 1, 4096))  // + 1: to see the end
        var count = 0
        while true {
            if count == result.count { result.append(contentsOf: repeatElement(0, count: result.count)) }
            let got = try result.withUnsafeMutableBytes { (buffer) in
                try syscall("read", path: path) { read(fd, buffer.baseAddress! + count, buffer.count - count) }
            }
            if got == 0 { break }
            count += got
        }
        result.removeLast(result.count - count)
        return result
    }
}

/// A state, cache or socket folder that other users could tamper with.
package struct PrivateDirectoryError: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
