import Glibc

/// A failed system call: the operation, what it was done to, and errno, worded for people and the
/// log. The daemon and uploadctl both use it.
public struct SystemError: Error, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String?
    public var errno: Int32

    public init(_ operation: String, path: String? = nil, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// The C library's text for the errno, as `%m` prints it.
    public var errnoText: String { String(cString: strerror(errno)) }

    public var description: String {
        if let path { return "cannot \(operation) \(path): \(errnoText)" }
        return "\(operation) failed: \(errnoText)"
    }

    public var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }
}

/// Calls `body` until it does not fail with EINTR; a -1 result throws with errno read at once.
///
/// Never use this for `close`: on Linux the descriptor is gone even when close reports EINTR, and
/// retrying could close a descriptor another thread just opened.
@discardableResult
public func syscall<T: BinaryInteger>(_ operation: String, path: String? = nil, _ body: () -> T) throws(SystemError)
    -> T
{
    while true {
        let result = body()
        if result != -1 { return result }
        let error = errno
        if error == EINTR { continue }
        throw SystemError(operation, path: path, errno: error)
    }
}
