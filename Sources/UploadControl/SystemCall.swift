import Glibc

/// A failed system call: the operation and the errno it left, with the C library's text for it.
struct SystemCallError: Error, Equatable, CustomStringConvertible {
    /// The C call that failed, for messages (`connect`, `poll`, ...).
    var operation: String
    var errorNumber: Int32

    /// The `strerror` text, e.g. "No such file or directory".
    var message: String { String(cString: strerror(errorNumber)) }
    var description: String { "\(operation): \(message)" }
}

/// Runs a system call that returns -1 and sets errno on failure, retrying when a signal interrupted it.
///
/// errno is read at once, before any other call can overwrite it. Never use this for `close`:
/// on Linux the descriptor is gone even when `close` reports EINTR, so a retry could close another one.
@discardableResult
func systemCall<Result: BinaryInteger>(
    _ operation: String, _ body: () -> Result
) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let errorNumber = errno
        if errorNumber == EINTR { continue }
        throw SystemCallError(operation: operation, errorNumber: errorNumber)
    }
}
