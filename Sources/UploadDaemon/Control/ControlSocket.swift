import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Binds the control socket when systemd did not pass one.
enum ControlSocket {
    struct SetupError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Creates the socket's directory (0700, ours, not a symlink), removes a stale socket, binds,
    /// sets 0600, listens. Returns the listening descriptor.
    static func listen(at path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try prepareDirectory(directory)
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw SetupError(message: "\(path) exists and is not a socket; move it away or choose another --socket")
            }
            guard info.st_uid == getuid() else {
                throw SetupError(
                    message: "\(path) is a socket of uid \(info.st_uid), not ours; remove it or choose another --socket"
                )
            }
            if isServing(path) {
                throw SetupError(
                    message: "another uploadd is already serving \(path); stop it first (systemctl --user stop uploadd)"
                )
            }
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw SetupError(
                message: "socket path \(path) is longer than \(capacity - 1) bytes; choose a shorter --socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let fd = try syscall("create socket") {
            socket(
                AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        do {
            try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    _ = try syscall("bind", path: path) {
                        bind(fd, socketAddress, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            try syscall("chmod", path: path) { chmod(path, 0o600) }
            try syscall("listen", path: path) { Glibc.listen(fd, 512) }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Creates the socket's folder (0700) when missing; a folder we did not create must already be
    /// private (ours, not a symlink, mode 700): it is refused, never chmod'ed, since `--socket`
    /// could name a shared folder such as /tmp.
    private static func prepareDirectory(_ directory: String) throws {
        var info = stat()
        if lstat(directory, &info) != 0 {
            let parent = (directory as NSString).deletingLastPathComponent
            guard access(parent, F_OK) == 0 else {
                throw SetupError(
                    message:
                        "\(parent) does not exist; create it, or choose another --socket (without XDG_RUNTIME_DIR the default is \(SocketLocation.fallbackDirectory())/\(SocketLocation.fileName))"
                )
            }
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw SystemError("create directory", path: directory)
            }
        }
        if let problem = SocketLocation.problem(withFolder: directory) {
            throw SetupError(
                message:
                    "refusing to put the control socket in \(directory): \(problem); remove it (another user may have made it to catch your commands), or choose another --socket"
            )
        }
        // And the folders above it: whoever could rename one could put a folder of theirs in its place.
        do {
            _ = try TrustedPath.check(directory, what: "the control socket's folder")
        } catch {
            throw SetupError(message: "\(error), or choose another --socket")
        }
    }

    /// The path a listening Unix socket is bound to (for a socket systemd passed).
    static func path(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: &address.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    /// Whether a daemon answers on `path` (connect succeeds).
    private static func isServing(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8.prefix(raw.count - 1))
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
