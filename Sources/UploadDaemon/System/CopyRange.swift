import Glibc
import CShims

/// copy_file_range: the kernel copies between files without a user-space buffer.
enum CShimsCopy {
    /// Copies up to `length` bytes from `source` at `offset` (advanced) to `target`'s position.
    /// Returns the bytes copied, 0 at the end of the source, or -1 with errno.
    static func copyRange(from source: Int32, offset: inout Int64, to target: Int32, length: Int) -> Int {
        var position = off_t(offset)
        while true {
            let result = CShims_copy_file_range(source, &position, target, length)
            if result < 0 && errno == EINTR { continue }
            offset = Int64(position)
            return result
        }
    }
}
