import CShims
import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Watches the kernel's links, addresses and routes (a NETLINK_ROUTE socket: no polling) and says
/// when they changed, so that jobs waiting for the network start within a second of it coming back.
///
/// Threading: one thread of its own blocks in poll(2) on the netlink socket and a pipe that `stop`
/// writes to; `onChange` is called on that thread, at most every 200 ms.
final class NetworkMonitor: Sendable {
    private let netlink: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)

    /// Nil when the kernel refuses a netlink socket (a sandbox): jobs then wait for their backoff.
    init?(onChange: @escaping @Sendable () -> Void) {
        let fd = CShims_netlink_watch_socket()
        guard fd >= 0 else {
            Log.warning(
                "cannot watch the network (\(SystemError("open a netlink socket"))); jobs waiting for the network retry on their own"
            )
            return nil
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            close(fd)
            return nil
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        netlink = fd
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        NamedThread.start("uploadd-network") { [netlink, wakeRead, finished] in
            Self.run(netlink: netlink, wake: wakeRead, onChange: onChange)
            finished.signal()
        }
    }

    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        finished.wait()
        close(netlink)
        close(wakeRead)
        close(wakeWrite)
    }

    private static func run(netlink: Int32, wake: Int32, onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var descriptors = [
            pollfd(fd: netlink, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || descriptors[1].revents != 0 { return }
            guard descriptors[0].revents != 0 else { continue }
            // A burst of changes (an interface coming up brings links, addresses and routes):
            // let it settle, drain it, and report it once.
            usleep(200_000)
            while buffer.withUnsafeMutableBytes({ recv(netlink, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
            onChange()
        }
    }
}
