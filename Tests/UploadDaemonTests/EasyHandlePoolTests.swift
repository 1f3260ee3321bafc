import Foundation
import Glibc
import Synchronization
import Testing
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// The pool of easy handles, and what a reused handle must not carry over: libcurl's reset has to
/// forget the credentials of the request before.
@Suite("HTTP thread: the easy handles' pool and the sockets of kept connections", .serialized)
struct EasyHandlePoolTests {
    init() { HTTPClient.globalInit() }

    @Test func aSmallRequestsHandleIsKeptUpToTheCapacityAndABigOnesIsNot() throws {
        EasyHandlePool.drain()
        let handles = try (0...EasyHandlePool.capacity).map { _ in try #require(EasyHandlePool.take()) }
        for handle in handles { EasyHandlePool.giveBack(handle, uploadBufferSize: 16 << 10) {} }
        #expect(EasyHandlePool.idleCount == EasyHandlePool.capacity, "one past the capacity is cleaned up")
        let taken = try #require(EasyHandlePool.take())
        #expect(handles.contains(taken), "a kept handle is handed out again")
        EasyHandlePool.giveBack(taken, uploadBufferSize: EasyHandlePool.largestKeptUploadBuffer + 1) {}
        #expect(EasyHandlePool.idleCount == EasyHandlePool.capacity - 1, "a handle with a big upload buffer goes")
        EasyHandlePool.drain()
        #expect(EasyHandlePool.idleCount == 0)
    }

    /// The HTTP code does not read the scheduler's slots; this keeps the pool as wide as they can be.
    @Test func thePoolKeepsAHandleForEverySmallFileThatRunsAtOnce() {
        #expect(EasyHandlePool.capacity >= TransferSlots.widest)
    }

    @Test func aReusedHandleSendsNoneOfTheLastRequestsCredentials() async throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let client = HTTPClient()
        defer { client.shutdown() }
        EasyHandlePool.drain()

        var withPassword = HTTPRequest(method: "PUT", url: server.url + "/a", body: .bytes(Array("first".utf8)))
        withPassword.credentials = BasicCredentials(user: "user", password: "secret")
        #expect(try await client.send(withPassword).status == 201)
        // The finished request gives its handle back once its last reference goes.
        for _ in 0..<100 where EasyHandlePool.idleCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(EasyHandlePool.idleCount == 1)
        let plain = HTTPRequest(method: "PUT", url: server.url + "/b", body: .bytes(Array("second".utf8)))
        #expect(try await client.send(plain).status == 201)

        let heads = server.requestHeads
        try #require(heads.count == 2)
        #expect(heads[0].lowercased().contains("authorization: basic"))
        #expect(!heads[1].lowercased().contains("authorization"), "the second request: \(heads[1])")
        #expect(heads[1].hasPrefix("PUT /b "))
    }
}

/// A loopback HTTP/1.1 server that answers every request 201 and keeps the heads it received.
/// `closingAfter`: each connection is closed that long after its first answer, as a server that
/// keeps idle connections only briefly does, without saying so; with `announcingClose` the answer
/// says `Connection: close` (then libcurl closes the connection itself).
final class LoopbackHTTPServer: Sendable {
    let url: String
    private let listener: Int32
    private let heads = Mutex<[String]>([])
    private let closingAfter: Duration?
    private let announcingClose: Bool
    /// Connections accepted so far.
    private let accepted = Atomic<Int>(0)

    var requestHeads: [String] { heads.withLock { $0 } }
    var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }

    init(closingAfter: Duration? = nil, announcingClose: Bool = false) throws {
        self.closingAfter = announcingClose ? .zero : closingAfter
        self.announcingClose = announcingClose
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = fd
        url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        Thread.detachNewThread { self.serve() }
    }

    /// Stops accepting. The listener is closed by the thread that accepts, once its `accept` fails:
    /// closed here, its number could be reused (by the next test's server) while that thread still
    /// accepts on it.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                close(listener)
                return
            }
            accepted.add(1, ordering: .relaxed)
            guard let closingAfter else {
                answerAll(connection, closingAfter: nil)
                continue
            }
            Thread.detachNewThread { self.answerAll(connection, closingAfter: closingAfter) }
        }
    }

    private func answerAll(_ connection: Int32, closingAfter: Duration?) {
        defer { close(connection) }
        var buffered: [UInt8] = []
        while let head = Self.readHead(connection, &buffered) {
            heads.withLock { $0.append(head) }
            let length =
                head.split(separator: "\r\n").lazy
                .compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }
                .first ?? 0
            while buffered.count < length, Self.readMore(connection, &buffered) {}
            buffered.removeFirst(min(length, buffered.count))
            let close = announcingClose ? "Connection: close\r\n" : ""
            let answer = Array("HTTP/1.1 201 Created\r\n\(close)Content-Length: 0\r\n\r\n".utf8)
            guard answer.withUnsafeBytes({ send(connection, $0.baseAddress, $0.count, 0) }) == answer.count else {
                return
            }
            if let closingAfter {
                let (seconds, attoseconds) = closingAfter.components
                Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
                return
            }
        }
    }

    /// The next request's head (through its blank line), taken out of `buffered`; nil at the end.
    private static func readHead(_ connection: Int32, _ buffered: inout [UInt8]) -> String? {
        let end = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffered.firstRange(of: end) {
                let head = String(decoding: buffered[..<range.lowerBound], as: UTF8.self)
                buffered.removeFirst(range.upperBound)
                return head
            }
            guard readMore(connection, &buffered) else { return nil }
        }
    }

    private static func readMore(_ connection: Int32, _ buffered: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffered += chunk[..<count]
        return true
    }
}
