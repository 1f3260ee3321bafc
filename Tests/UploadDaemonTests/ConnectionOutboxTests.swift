import Dispatch
import Glibc
import Testing

@testable import UploadDaemon

/// Events and answers for one control connection cross to its queue together and leave in one write.
@Suite("ConnectionOutbox")
struct ConnectionOutboxTests {
    @Test func onlyThePostThatFindsItIdleSchedulesATake() {
        let outbox = ConnectionOutbox()
        #expect(outbox.post(.event(Array("a\n".utf8))))
        #expect(!outbox.post(.finished(answer: nil, requestBytes: 1)))
        #expect(!outbox.post(.event(Array("b\n".utf8))))
        let taken = outbox.take()
        #expect(taken.count == 3)
        guard case .event(let first) = taken[0], case .finished(nil, 1) = taken[1], case .event(let last) = taken[2]
        else {
            Issue.record("items out of order: \(taken)")
            return
        }
        #expect(first == Array("a\n".utf8) && last == Array("b\n".utf8))
        #expect(outbox.take().isEmpty)
        #expect(outbox.post(.event([])))
    }

    @Test func itemsTakenTogetherLeaveInOneWrite() throws {
        var fds: [Int32] = [0, 0]
        // A packet socket keeps each write's bytes apart: one recv returns what one send sent.
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let queue = DispatchQueue(label: "test.connection")
        let lines = (0..<50).map {
            Array("{\"jsonrpc\":\"2.0\",\"method\":\"job.state\",\"params\":{\"n\":\($0)}}\n".utf8)
        }
        let closed = DispatchSemaphore(value: 0)
        let (connection, watcher) = ControlConnection.served(fd: fds[0], on: queue) { closed.signal() }
        defer { watcher.stop() }
        queue.sync { connection.receive(lines.map { .event($0) }) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = buffer.withUnsafeMutableBytes { recv(fds[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        // All fifty in the first packet read, not the first line alone.
        #expect(count == lines.joined().count)
        #expect(
            String(decoding: buffer[0..<max(count, 0)], as: UTF8.self)
                == String(decoding: lines.joined(), as: UTF8.self))
        queue.sync { connection.shutDown() }
        closed.wait()
    }
}

/// A client that reads almost as fast as it is sent to never drains the buffer: what it has read
/// must still leave the daemon's memory.
@Suite("ControlConnection: output buffer")
struct ControlConnectionBufferTests {
    @Test func writtenBytesLeaveTheBufferThoughItNeverDrains() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let queue = DispatchQueue(label: "test.connection.buffer")
        let closed = DispatchSemaphore(value: 0)
        let (connection, watcher) = ControlConnection.served(fd: fds[0], on: queue) { closed.signal() }
        defer { watcher.stop() }
        // More than the socket holds: the rest waits in the buffer from now on.
        let backlog = [UInt8](repeating: 0xFF, count: 512 << 10)
        queue.sync { connection.receive([.event(backlog)]) }
        let piece = 4096
        let rounds = 2000
        var expected: [UInt8] = backlog
        var expectedHead = 0
        var largest = 0
        var buffer = [UInt8](repeating: 0, count: piece)
        for round in 0..<rounds {
            let bytes = [UInt8](repeating: UInt8(round % 251), count: piece)
            expected += bytes
            // Answers too, whose places in the buffer must follow the bytes that leave it.
            queue.sync {
                if round % 7 == 0 { connection.send(bytes) } else { connection.receive([.event(bytes)]) }
            }
            var got = 0
            while got < piece {
                let count = buffer.withUnsafeMutableBytes { read(fds[1], $0.baseAddress! + got, piece - got) }
                guard count > 0 else {
                    Issue.record("read failed: \(count), errno \(errno)")
                    return
                }
                got += count
            }
            guard buffer == Array(expected[expectedHead..<(expectedHead + piece)]) else {
                Issue.record("round \(round): bytes out of order")
                return
            }
            expectedHead += piece
            if expectedHead > 1 << 20 {
                expected.removeSubrange(0..<expectedHead)
                expectedHead = 0
            }
            largest = max(largest, queue.sync { connection.outputBufferCount })
        }
        // Never more than twice what is unsent (the backlog, 512 KiB) plus a little; without
        // compaction it held all 8 MiB sent since it was last empty.
        #expect(largest < 2 << 20, "the buffer grew to \(largest) bytes")
        #expect(queue.sync { !connection.isClosed })
        queue.sync { connection.shutDown() }
        closed.wait()
    }
}

extension ControlConnection {
    /// A connection on `fd` served on `queue` as the control server serves its clients: a watcher
    /// of its own says when `fd` is ready.
    static func served(
        fd: Int32, on queue: DispatchQueue, onClose: @escaping @Sendable () -> Void
    ) -> (ControlConnection, ReadinessWatcher) {
        nonisolated(unsafe) var connection: ControlConnection?
        let watcher = ReadinessWatcher(name: "test-control") { reports in
            queue.async { for report in reports { connection?.ready(report) } }
        }
        queue.sync {
            connection = ControlConnection(
                fd: fd, token: 1, watcher: watcher, budget: ControlBudget(descriptorLimit: 1024),
                onRequest: { _, _ in },
                onClose: { _ in onClose() })
            connection!.start()
        }
        return (queue.sync { connection! }, watcher)
    }
}
