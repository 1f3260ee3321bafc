import Foundation
import Glibc
import Synchronization

/// Files too big to write or hash the ordinary way in a test's time budget.
enum BigFiles {
    /// A sparse file of `size` bytes: holes, except `pieces` written at their offsets.
    static func sparse(at path: String, size: Int64, pieces: [(offset: Int64, bytes: [UInt8])]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else {
            throw TestFailure("truncate \(path): \(String(cString: strerror(errno)))")
        }
        for piece in pieces {
            let written = piece.bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(piece.offset)) }
            guard written == piece.bytes.count else { throw TestFailure("pwrite \(path) at \(piece.offset) failed") }
        }
    }

    /// SHA-256 of a file, with OpenSSL where there is one: it uses the CPU's SHA instructions and
    /// is several times faster than coreutils on gigabytes.
    static func sha256(_ path: String) throws -> String {
        let openssl = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: openssl) else { return try Command.sha256(path) }
        let result = try Command.run(openssl, ["dgst", "-sha256", "-r", path], timeout: 300)
        guard result.status == 0, let hash = result.stdout.split(separator: " ").first else {
            throw TestFailure("openssl dgst \(path) failed: \(result)")
        }
        return String(hash)
    }

    /// Starts hashing `path` on another thread (to overlap with other work); the function returned
    /// waits for the hash.
    static func sha256InBackground(_ path: String) -> @Sendable () throws -> String {
        let result = Mutex<Result<String, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let hash = Result { try sha256(path) }
            result.withLock { $0 = hash }
            done.signal()
        }
        return {
            done.wait()
            done.signal()
            return try result.withLock { $0! }.get()
        }
    }
}
