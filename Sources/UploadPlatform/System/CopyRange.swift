import CShims
import Glibc

/// Copies between files: copy_file_range when the kernel can (no user-space buffer, reflinks on
/// some file systems), else sendfile (across file systems), else pread and write.
package enum FileCopy {
    /// Copies up to `length` bytes from `source` at `offset` (advanced) to `target`'s position.
    /// Returns the bytes copied, 0 at the end of the source, or -1 with errno.
    package static func copyRange(from source: Int32, offset: inout Int64, to target: Int32, length: Int) -> Int {
        var position = off_t(offset)
        while true {
            let result = CShims_copy_file_range(source, &position, target, length)
            if result < 0 && errno == EINTR { continue }
            if result < 0 && [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, EBADF].contains(errno) {
                // Across file systems (tmpfs to ext4, NFS, ...) Linux refuses copy_file_range;
                // sendfile still copies from page cache to page cache, without a trip through ours.
                let sent = sendFile(from: source, offset: &offset, to: target, length: length)
                if sent >= 0 || ![EINVAL, ENOSYS, EOPNOTSUPP].contains(errno) { return sent }
                return copyWithBuffer(from: source, offset: &offset, to: target, length: length)
            }
            offset = Int64(position)
            return result
        }
    }

    private static func sendFile(from source: Int32, offset: inout Int64, to target: Int32, length: Int) -> Int {
        var position = off_t(offset)
        while true {
            let result = sendfile(target, source, &position, min(length, 1 << 30))
            if result < 0 && errno == EINTR { continue }
            offset = Int64(position)
            return result
        }
    }

    private static func copyWithBuffer(from source: Int32, offset: inout Int64, to target: Int32, length: Int) -> Int {
        let size = min(length, 1 << 20)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        let count = FileOps.readAt(source, into: buffer, count: size, at: offset)
        guard count > 0 else { return count }
        var written = 0
        while written < count {
            let result = write(target, buffer + written, count - written)
            if result < 0 {
                if errno == EINTR { continue }
                return -1
            }
            written += result
        }
        offset += Int64(count)
        return count
    }
}
