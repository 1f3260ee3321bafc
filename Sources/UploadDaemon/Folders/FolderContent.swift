import Glibc
import UploadHTTP
import UploadPlatform
import UploadWire

/// The content of a watched folder's file, for `match = content`.
enum FolderContent {
    /// The SHA-256 (lowercase hex) of the file at `path`, when it is still the file settled (its
    /// identity, size and modification time); nil when it is not, or cannot be read. A symlink is
    /// followed only as the rule follows them.
    static func sha256(of path: String, rule: FolderRule, expecting file: FolderWatcher.Settled) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (rule.followSymlinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, SourceIdentity(info) == file.identity,
            Int64(info.st_size) == file.size, FolderScan.modified(info) == file.modifiedNanoseconds
        else { return nil }
        let digest = MessageDigest.sha256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        return Hex.encode(digest.finish())
    }
}
