import CCurl
import CShims
import Glibc
import UploadPlatform

/// The HTTP thread's wait, by libcurl's socket interface: one epoll set holding the sockets libcurl
/// asks to watch (CURLMOPT_SOCKETFUNCTION) and an eventfd other threads write to wake the thread,
/// with libcurl's next timeout (CURLMOPT_TIMERFUNCTION).
///
/// `curl_multi_socket_action` is then told which socket is ready for what, where
/// `curl_multi_perform` would check every transfer's socket with a poll of its own: with many small
/// uploads that was 15 polls a file, now about 2 (libcurl's "hiperfifo" example works the same way).
package final class SocketEvents: @unchecked Sendable {
    // Invariant: everything but `wake()` is used by the HTTP thread only (libcurl calls the
    // callbacks from inside curl_multi_socket_action and curl_multi_add_handle, on that thread).
    private let epoll: Int32
    private let wakeFD: Int32
    /// When libcurl wants `CURL_SOCKET_TIMEOUT` handled, in ms of CLOCK_MONOTONIC (nil: never).
    private var timerDeadline: Int64?
    private static let capacity = 64
    private var readyFDs = [Int32](repeating: 0, count: capacity)
    private var readiness = [Int32](repeating: 0, count: capacity)
    /// Sockets libcurl stopped watching that were left in the epoll set, by number (`watch`).
    private var parked: [Bool] = []

    package init() {
        epoll = CShims_epoll_create()
        wakeFD = CShims_eventfd()
        precondition(epoll >= 0 && wakeFD >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        precondition(CShims_epoll_watch(epoll, wakeFD, 1, 0, 0) == 0, "epoll_ctl failed: errno \(errno)")
    }

    deinit {
        close(epoll)
        close(wakeFD)
    }

    /// The multi handle attached, for marking the sockets in the epoll set (curl_multi_assign).
    private var multi: UnsafeMutableRawPointer?

    /// Has libcurl tell this object what to watch and when to time out.
    package func attach(to multi: UnsafeMutableRawPointer) {
        self.multi = multi
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = CCurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        _ = CCurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        _ = CCurl_multi_setopt_socket_function(multi, socketCallback)
        _ = CCurl_multi_setopt_timer_function(multi, timerCallback)
    }

    /// Wakes the HTTP thread from `wait`; safe from any thread.
    package func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Whether libcurl's timeout is due (it wants `CURL_SOCKET_TIMEOUT` handled). The timer is
    /// one-shot: taking it clears it, and libcurl sets the next one while it handles this one.
    package func takeDueTimeout() -> Bool {
        guard let timerDeadline, timerDeadline <= Self.nowMillis() else { return false }
        self.timerDeadline = nil
        return true
    }

    /// Waits until a socket is ready, the thread is woken, libcurl's timeout is due, or
    /// `longest` ms have passed (0: only looks; -1: no limit of its own). Calls `ready` with each
    /// socket ready and its CURL_CSELECT_* bits for curl_multi_socket_action.
    package func wait(longest: Int32, ready: (_ socket: Int32, _ bits: Int32) -> Void) {
        var timeout = longest
        if let timerDeadline {
            let untilTimer = max(0, timerDeadline - Self.nowMillis())
            timeout = Int32(clamping: longest < 0 ? untilTimer : min(Int64(longest), untilTimer))
        }
        let count = readyFDs.withUnsafeMutableBufferPointer { fds in
            readiness.withUnsafeMutableBufferPointer { readiness in
                CShims_epoll_wait(epoll, fds.baseAddress, readiness.baseAddress, Int32(Self.capacity), timeout)
            }
        }
        for index in 0..<Int(max(count, 0)) {
            let fd = readyFDs[index]
            if fd == wakeFD {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
                continue
            }
            if unpark(fd) {
                // A parked connection became ready: the server closed it, or sent what no request
                // asked for. libcurl finds that out when it next looks at the connection; here it
                // only leaves the set, or it would be reported again at every wait.
                _ = CShims_epoll_forget(epoll, fd)
                continue
            }
            let flags = readiness[index]
            var bits: Int32 = 0
            if flags & Int32(CSHIMS_READABLE) != 0 { bits |= CCurl_CSELECT_IN }
            if flags & Int32(CSHIMS_WRITABLE) != 0 { bits |= CCurl_CSELECT_OUT }
            if flags & Int32(CSHIMS_FAILED) != 0 { bits |= CCurl_CSELECT_ERR }
            ready(fd, bits)
        }
    }

    /// `watched`: whether the socket is in the epoll set already (libcurl keeps the mark set by
    /// curl_multi_assign until it removes the socket).
    ///
    /// A socket libcurl stops watching is parked, not taken out of the set: most are connections
    /// kept for the next request, which libcurl watches again a moment later, so each small upload
    /// saves an epoll_ctl. Watching a parked socket again changes its entry; when the socket was
    /// closed meanwhile (the kernel drops a closed socket from the set by itself) and the number
    /// now names a new one, the change fails and the socket is added (`add_or_change`). A parked
    /// socket that becomes ready leaves the set (`wait`). This relies on no other process holding
    /// libcurl's sockets, or a closed one would stay in the set under a number reused since: the
    /// daemon's only fork (`CShims_spawn`) closes every descriptor above 3 in the child at once.
    fileprivate func watch(_ socket: Int32, what: Int32, watched: Bool) {
        if what == CCurl_POLL_REMOVE {
            park(socket)
            return
        }
        let inSet = unpark(socket) || watched
        if CShims_epoll_watch(epoll, socket, what & CCurl_POLL_IN, what & CCurl_POLL_OUT, inSet ? 1 : 0) != 0 {
            Log.warning("HTTP: cannot watch socket \(socket): \(String(cString: strerror(errno)))")
        } else if !watched, let multi {
            curl_multi_assign(multi, socket, Self.watchedMark)
        }
    }

    private func park(_ socket: Int32) {
        guard socket >= 0 else { return }
        let index = Int(socket)
        if index >= parked.count { parked += Array(repeating: false, count: index + 1 - parked.count) }
        parked[index] = true
    }

    /// Whether `socket` was parked; it is not any more.
    private func unpark(_ socket: Int32) -> Bool {
        let index = Int(socket)
        guard index >= 0, index < parked.count, parked[index] else { return false }
        parked[index] = false
        return true
    }

    /// The mark of a socket in the epoll set: any pointer but nil.
    private static var watchedMark: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: 1) }

    fileprivate func setTimer(_ milliseconds: Int) {
        timerDeadline = milliseconds < 0 ? nil : Self.nowMillis() + Int64(milliseconds)
    }

    private static func nowMillis() -> Int64 { MonotonicClock.nanoseconds() / 1_000_000 }
}

private let socketCallback: curl_socket_callback = { easy, socket, what, context, mark in
    guard let context else { return 0 }
    Unmanaged<SocketEvents>.fromOpaque(context).takeUnretainedValue().watch(socket, what: what, watched: mark != nil)
    // The transfer this is for learns its socket here when its connection is a kept one (the
    // socket-open callback only tells new connections), for the bytes the peer has not acknowledged.
    if let easy, what != CCurl_POLL_REMOVE {
        var privatePointer: UnsafeMutableRawPointer?
        _ = CCurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &privatePointer)
        if let privatePointer { Unmanaged<CurlRequest>.fromOpaque(privatePointer).takeUnretainedValue().uses(socket) }
    }
    return 0
}

private let timerCallback: curl_multi_timer_callback = { _, milliseconds, context in
    guard let context else { return 0 }
    Unmanaged<SocketEvents>.fromOpaque(context).takeUnretainedValue().setTimer(milliseconds)
    return 0
}
