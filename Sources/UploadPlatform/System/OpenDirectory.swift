import CShims
import Glibc
import UploadCore
import UploadWire

/// A directory opened by walking its path one component at a time, so that nobody else's symlink
/// can point our writes somewhere else.
///
/// Every component is opened with `O_NOFOLLOW`. A symlink on the way is followed only when the
/// user or root owns it: in a shared folder another user can plant `drop -> ~victim/private`, and
/// the kernel's `protected_symlinks` only covers sticky, world-writable folders. This is what
/// `openat2(RESOLVE_NO_SYMLINKS)` would do, minus the symlinks we trust (a user's own
/// `~/uploads -> /mnt/nas`), which that flag would refuse as well.
///
/// The descriptor is `O_RDONLY | O_DIRECTORY`: good for the `*at()` calls and for `fsync`.
package final class OpenDirectory: Sendable {
    package let fd: Int32
    /// The path as the caller gave it, for messages.
    package let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Why a path was refused: a symlink of another user, or something that is not a folder.
    package struct Refusal: Error, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var description: String { "refusing \(path): \(reason)" }
    }

    /// Symlinks followed at most on one walk, as the kernel's MAXSYMLINKS.
    private static let maxSymlinks = 40

    /// Opens `path`, creating missing folders with exactly `mode` when it is given (whatever the
    /// daemon's umask; the folders then belong to the user).
    package static func open(_ path: String, creatingMissingWith mode: mode_t? = nil) throws -> OpenDirectory {
        guard path.hasPrefix("/") else { throw Refusal(path: path, reason: "not an absolute path") }
        let walkFlags = CShims_open_path_flag() | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        var current = try syscall("open", path: "/") { Glibc.open("/", walkFlags) }
        var walked: [String] = []
        var pending = components(of: path)
        var symlinksFollowed = 0
        /// The folder made by the last step, to give `mode` once opened; and the name whose creation
        /// was attempted, so that a name that keeps vanishing cannot loop forever.
        var justCreated: String?
        var creationTried: String?
        /// A folder someone else made between our look and our mkdir: entered only if it is ours
        /// (another uploadd of the user) or root's, never another user's.
        var madeMeanwhile: String?
        do {
            while !pending.isEmpty {
                let name = pending.removeFirst()
                if name == "." { continue }
                let next = openat(current, name, walkFlags)
                if next >= 0 {
                    close(current)
                    current = next
                    if justCreated == name { try setMode(of: next, to: mode ?? 0o700, path: display(walked + [name])) }
                    if madeMeanwhile == name { try requireOwnFolder(next, path: display(walked + [name])) }
                    justCreated = nil
                    madeMeanwhile = nil
                    creationTried = nil
                    if name == ".." { _ = walked.popLast() } else { walked.append(name) }
                    continue
                }
                let error = errno
                let here = display(walked + [name])
                switch error {
                case EINTR:
                    pending.insert(name, at: 0)
                case ENOENT where mode != nil && creationTried != name:
                    creationTried = name
                    if mkdirat(current, name, 0o700) == 0 {
                        justCreated = name
                        // The new folder's name survives a power cut with the file put in it.
                        let parent = openat(current, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                        if parent >= 0 {
                            fsync(parent)
                            close(parent)
                        }
                    } else if errno == EEXIST {
                        madeMeanwhile = name
                    } else {
                        throw SystemError("create directory", path: here)
                    }
                    pending.insert(name, at: 0)
                case ENOTDIR, ELOOP:
                    var info = stat()
                    guard fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                        throw SystemError("stat", path: here)
                    }
                    guard info.st_mode & S_IFMT == S_IFLNK else {
                        throw Refusal(path: here, reason: "it is not a folder")
                    }
                    guard TrustedPath.isTrusted(owner: info.st_uid) else {
                        throw Refusal(
                            path: here,
                            reason:
                                "it is a symlink owned by another user (uid \(info.st_uid)); only your own and root's symlinks are followed"
                        )
                    }
                    symlinksFollowed += 1
                    guard symlinksFollowed <= maxSymlinks else { throw SystemError("open", path: path, errno: ELOOP) }
                    let target = try readLink(current, name, path: here)
                    if target.hasPrefix("/") {
                        let root = try syscall("open", path: "/") { Glibc.open("/", walkFlags) }
                        close(current)
                        current = root
                        walked = []
                    }
                    pending = components(of: target) + pending
                default:
                    throw SystemError("open", path: here, errno: error)
                }
            }
            let readable = try syscall("open", path: path) { openat(current, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            close(current)
            return OpenDirectory(fd: readable, path: path)
        } catch {
            close(current)
            throw error
        }
    }

    /// fsync of the folder itself, so that a create or rename in it survives a power loss.
    package func sync() throws {
        try syscall("fsync", path: path) { fsync(fd) }
    }

    /// `lstat` of an entry (a symlink is described, not followed); nil when it does not exist.
    package func entryStatus(_ name: String) throws -> stat? {
        var info = stat()
        if fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return info }
        if errno == ENOENT { return nil }
        throw SystemError("stat", path: "\(path)/\(name)")
    }

    private static func components(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    private static func display(_ walked: [String]) -> String { "/" + walked.joined(separator: "/") }

    private static func requireOwnFolder(_ pathDescriptor: Int32, path: String) throws {
        var info = stat()
        try syscall("stat", path: path) { fstat(pathDescriptor, &info) }
        guard TrustedPath.isTrusted(owner: info.st_uid) else {
            throw Refusal(
                path: path,
                reason:
                    "another user (uid \(info.st_uid)) created this folder while uploadd was creating it; choose a folder of your own"
            )
        }
    }

    private static func setMode(of pathDescriptor: Int32, to mode: mode_t, path: String) throws {
        // An O_PATH descriptor cannot be chmod'ed: open the folder we just made for real.
        let fd = try syscall("open", path: path) { openat(pathDescriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try syscall("chmod", path: path) { fchmod(fd, mode) }
    }

    private static func readLink(_ directory: Int32, _ name: String, path: String) throws -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = try buffer.withUnsafeMutableBytes { raw in
            try syscall("read the symlink", path: path) {
                readlinkat(directory, name, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
            }
        }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
