import Foundation
import Testing

@testable import UploadDaemon
@testable import UploadHTTP

/// The HTTP thread's epoll set keeps the sockets of connections libcurl stops watching (parked,
/// `SocketEvents.watch`): a connection must go on working when it is reused, and a new socket
/// under the number of a closed one must be watched afresh. In the suite of the easy handles'
/// pool, whose counts any other real request running at the same time would upset.
extension EasyHandlePoolTests {
    func put(_ client: HTTPClient, _ url: String) async throws -> Int {
        var request = HTTPRequest(method: "PUT", url: url, body: .bytes(Array("bytes".utf8)))
        // A socket left unwatched would wait for an answer that never comes: fail fast instead.
        request.responseTimeout = 10
        return try await client.send(request).status
    }

    @Test func aKeptConnectionServesTheNextRequestsAfterItWasParked() async throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let client = HTTPClient()
        defer { client.shutdown() }
        for index in 0..<20 {
            #expect(try await put(client, server.url + "/kept-\(index)") == 201)
        }
        #expect(server.connectionsAccepted == 1, "one connection, reused")
    }

    @Test func requestsGoOnWhenTheServerClosesEachConnectionWhileItIsParked() async throws {
        // Closed 20 ms after its answer, while parked: the closed socket is reported ready and
        // leaves the set; the next request opens another connection, often under the same number.
        let server = try LoopbackHTTPServer(closingAfter: .milliseconds(20))
        defer { server.stop() }
        let client = HTTPClient()
        defer { client.shutdown() }
        for index in 0..<10 {
            #expect(try await put(client, server.url + "/closed-\(index)") == 201)
            try await Task.sleep(for: .milliseconds(60))
        }
        #expect(server.connectionsAccepted == 10, "a new connection for each request")
        #expect(server.requestHeads.count == 10)
    }

    @Test func aNewSocketUnderTheNumberOfAParkedOneThatLibcurlClosedIsWatched() async throws {
        // `Connection: close`: libcurl stops watching the socket (parked) and closes it itself, which
        // takes it out of the epoll set unseen; the next connection's socket usually gets its number.
        let server = try LoopbackHTTPServer(announcingClose: true)
        defer { server.stop() }
        let client = HTTPClient()
        defer { client.shutdown() }
        // Left unwatched, a socket is only looked at on libcurl's next timeout: each answer then
        // came ~160 ms late (4.8 s for these 30), where a watched one takes a fraction of a ms.
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<30 {
            #expect(try await put(client, server.url + "/announced-\(index)") == 201)
        }
        #expect(clock.now - started < .seconds(2), "answers were heard late: a socket went unwatched")
        #expect(server.connectionsAccepted == 30, "a new connection for each request")
    }
}
