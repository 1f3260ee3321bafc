import Foundation
import Glibc
import UploadCore
import UploadWire

/// An exclusive flock on a directory the daemon must have to itself, held for the daemon's life:
/// the state directory, so two daemons never share a journal, and the cache directory, so they
/// never share snapshot copies (named by job ID, which both would number from 1, and swept as
/// orphans by the other's start).
package final class DirectoryLock: Sendable {
    /// What a directory is to the daemon: it names the lock file and what the error says.
    package enum Use: Sendable {
        case state
        case cache

        /// Different names, so that one directory given as both takes two locks that do not
        /// conflict: a second flock of the same file from this process would fail.
        package var fileName: String {
            switch self {
            case .state: return "lock"
            case .cache: return "cache.lock"
            }
        }
    }

    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    package struct HeldError: Error, CustomStringConvertible {
        package var directory: String
        package var use: Use
        /// " (pid N)" when the holder wrote its pid, else empty.
        package var holder: String
        package var description: String {
            switch use {
            case .state:
                return
                    "another uploadd\(holder) is already running with the state directory \(directory); stop it first, or use --state-dir"
            case .cache:
                return
                    "another uploadd\(holder) uses the cache directory \(directory); stop it first, or give this one its own with --cache-dir"
            }
        }
    }

    /// Locks `directory` for `use` (the file is opened without following a link, created 0600),
    /// or throws `HeldError` when another process holds it.
    package static func acquire(directory: String, for use: Use) throws -> DirectoryLock {
        let path = directory + "/" + use.fileName
        let fd = try syscall("open", path: path) { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            let holder = (try? FileOps.readFile(path, followSymlinks: false)).map {
                String(decoding: $0, as: UTF8.self)
            }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            close(fd)
            if error == EWOULDBLOCK {
                throw HeldError(directory: directory, use: use, holder: holder.map { " (pid \($0))" } ?? "")
            }
            throw SystemError("lock", path: path, errno: error)
        }
        ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return DirectoryLock(fd: fd)
    }
}
