import Foundation
import Glibc
import UploadCore
import UploadWire

/// An exclusive flock on the state directory, so two daemons never share a journal.
final class StateLock: Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    struct HeldError: Error, CustomStringConvertible {
        var directory: String
        var holder: String
        var description: String {
            "another uploadd\(holder) is already running with the state directory \(directory); stop it first, or use --state-dir"
        }
    }

    static func acquire(directory: String) throws -> StateLock {
        let path = directory + "/lock"
        let fd = try syscall("open", path: path) { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            let holder = (try? FileOps.readFile(path, followSymlinks: false)).map {
                String(decoding: $0, as: UTF8.self)
            }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            close(fd)
            if error == EWOULDBLOCK {
                throw HeldError(directory: directory, holder: holder.map { " (pid \($0))" } ?? "")
            }
            throw SystemError("lock", path: path, errno: error)
        }
        ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return StateLock(fd: fd)
    }
}
