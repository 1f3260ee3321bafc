import Foundation
import Glibc
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// The control server on a real socket: what one connection asked never reaches another.
@Suite("ControlServer: connections")
struct ControlServerTests {
    /// A `daemon.reload` that runs until the test lets it end.
    final class HeldReload: Sendable {
        let started = Atomic(false)
        let released = Atomic(false)

        func run() async -> [String] {
            started.store(true, ordering: .sequentiallyConsistent)
            while !released.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(5)) }
            return []
        }
    }

    static func connect(to path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw SystemError("connect", path: path) }
        // Long enough for a machine busy building beside the test (a 5 s limit once let two
        // answers come after it, which the test then took for answers of another connection).
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func send(_ line: String, to fd: Int32) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// One line read from `fd` (waiting up to 5 s), without its newline.
    static func readLine(from fd: Int32) -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// Bytes waiting on `fd`, read without waiting.
    static func pending(on fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }

    /// Runs `body` on a thread outside the cooperative pool.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    /// A connection torn down (ECONNRESET) while its request runs, then new connections: the old
    /// request's answer goes to none of them. Keyed by the connection object's address, the answer
    /// went to the new connection that got the freed object's address.
    @Test func anAnswerOfAClosedConnectionReachesNoLaterOne() async throws {
        let harness = try await SchedulerHarness(start: false)
        let reload = HeldReload()
        var handler = ControlHandlerTests.handler(harness)
        handler.reload = { await reload.run() }
        let path = harness.directory.path + "/run/control.sock"
        let server = ControlServer(
            listenFD: try ControlSocket.listen(at: path), handler: handler, budget: ControlBudget(descriptorLimit: 1024)
        )
        server.start()

        // The sockets are driven from a thread of their own: waiting for them on the test's task
        // would hold a thread of the pool that runs the daemon's requests.
        let seen = try await Self.offThePool { () throws -> (answers: [String], strays: [String], again: [String]) in
            let old = try Self.connect(to: path)
            Self.send(#"{"jsonrpc":"2.0","id":"hello","method":"daemon.hello"}"#, to: old)
            Self.send(#"{"jsonrpc":"2.0","id":"old-reload","method":"daemon.reload"}"#, to: old)
            var byte: UInt8 = 0
            _ = recv(old, &byte, 1, Int32(MSG_PEEK))  // the hello's answer waits, unread
            _ = Self.eventually { reload.started.load(ordering: .sequentiallyConsistent) }
            // Closed with an answer unread: the daemon's next read fails with ECONNRESET.
            close(old)
            usleep(200_000)

            var later: [Int32] = []
            var answers: [String] = []
            for index in 0..<32 {
                let fd = try Self.connect(to: path)
                later.append(fd)
                Self.send(#"{"jsonrpc":"2.0","id":\#(index),"method":"daemon.hello"}"#, to: fd)
                answers.append(Self.readLine(from: fd) ?? "")
            }
            reload.released.store(true, ordering: .sequentiallyConsistent)
            usleep(300_000)
            var strays: [String] = []
            var again: [String] = []
            for fd in later {
                strays.append(Self.pending(on: fd))
                Self.send(#"{"jsonrpc":"2.0","id":"again","method":"daemon.hello"}"#, to: fd)
                again.append(Self.readLine(from: fd) ?? "")
                close(fd)
            }
            return (answers, strays, again)
        }
        let started = reload.started.load(ordering: .sequentiallyConsistent)
        #expect(started)
        for (index, answer) in seen.answers.enumerated() {
            #expect(answer.contains(#""id":\#(index)"#), "a new connection is served: \(answer)")
        }
        let strays = seen.strays.filter { !$0.isEmpty }
        #expect(strays.isEmpty, "a later connection got another's answer: \(strays)")
        let unserved = seen.again.filter { !$0.contains(#""id":"again""#) }
        #expect(unserved.isEmpty, "later connections still served: \(unserved)")
        server.stop()
        await harness.stop()
    }
}
