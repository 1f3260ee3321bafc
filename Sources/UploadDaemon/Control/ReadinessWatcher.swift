import CShims
import Glibc
import Synchronization
import UploadPlatform
import UploadWire

/// Tells the control server which of its descriptors (the listening socket and each client) are
/// ready, from a thread of its own with an epoll set of its own.
///
/// libdispatch's read and write sources did this before. Its epoll backend keeps one registration
/// per descriptor for all the sources on it, and deletes it on a hang-up behind the sources' backs;
/// twice in CI a client's hang-up crashed the daemon inside libdispatch ("BUG IN LIBDISPATCH:
/// Source finalized twice"; swift-corelibs-libdispatch issues 833 and 949 describe the same
/// bookkeeping). Here nothing is shared: each descriptor is armed for one report at a time
/// (EPOLLONESHOT) under a token that is never reused, so a report that arrives after its client
/// has gone names no one, even when a new client got the same descriptor number.
///
/// Threading: `arm`, `forget` and `stop` may be called from any thread; `onReady` runs on the
/// watcher's thread, with every report of one wake-up.
final class ReadinessWatcher: Sendable {
    struct Report: Sendable {
        let token: UInt64
        let readable: Bool
        let writable: Bool
        /// An error or a hang-up: reading or writing says which.
        let failed: Bool
    }

    private let epoll: Int32
    private let wakeFD: Int32
    private let stopping = Atomic<Bool>(false)
    private static let wakeToken = UInt64.max
    private static let capacity: Int32 = 64

    /// Starts the thread. `name`: at most 15 bytes (NamedThread).
    init(name: String, onReady: @escaping @Sendable ([Report]) -> Void) {
        epoll = CShims_epoll_create()
        wakeFD = CShims_eventfd()
        precondition(epoll >= 0 && wakeFD >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        precondition(
            CShims_epoll_arm_once(epoll, wakeFD, Self.wakeToken, 1, 0) == 0, "epoll_ctl failed: errno \(errno)")
        // The thread holds the watcher until it ends, so the descriptors outlive it.
        NamedThread.start(name) { self.run(onReady: onReady) }
    }

    deinit {
        close(epoll)
        close(wakeFD)
    }

    /// Asks for one report when `fd` is readable or writable as asked (or fails), under `token`.
    func arm(_ fd: Int32, token: UInt64, readable: Bool, writable: Bool) throws(SystemError) {
        guard CShims_epoll_arm_once(epoll, fd, token, readable ? 1 : 0, writable ? 1 : 0) == 0 else {
            throw SystemError("epoll_ctl")
        }
    }

    /// Takes `fd` out of the set (if it is in it); call before closing it.
    func forget(_ fd: Int32) {
        _ = CShims_epoll_forget(epoll, fd)
    }

    /// Ends the thread; no report is made after it has seen this.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func run(onReady: @Sendable ([Report]) -> Void) {
        let capacity = Self.capacity
        var tokens = [UInt64](repeating: 0, count: Int(capacity))
        var readiness = [Int32](repeating: 0, count: Int(capacity))
        while !stopping.load(ordering: .acquiring) {
            let count = tokens.withUnsafeMutableBufferPointer { tokens in
                readiness.withUnsafeMutableBufferPointer { readiness in
                    CShims_epoll_wait_tokens(epoll, tokens.baseAddress, readiness.baseAddress, capacity, -1)
                }
            }
            guard count > 0 else {
                precondition(count == 0 || errno == EINTR, "epoll_wait failed: errno \(errno)")
                continue
            }
            var reports: [Report] = []
            reports.reserveCapacity(Int(count))
            for index in 0..<Int(count) where tokens[index] != Self.wakeToken {
                let bits = readiness[index]
                reports.append(
                    Report(
                        token: tokens[index], readable: bits & Int32(CSHIMS_READABLE) != 0,
                        writable: bits & Int32(CSHIMS_WRITABLE) != 0, failed: bits & Int32(CSHIMS_FAILED) != 0))
            }
            if !reports.isEmpty && !stopping.load(ordering: .acquiring) { onReady(reports) }
        }
    }
}
