import Foundation
import Synchronization
import Testing
import UploadClient
import UploadWire

@testable import UploadControl

@Suite struct DaemonConnectionTests {
    @Test func batchAnswersAreMatchedByIDWhateverTheirOrder() throws {
        let daemon = try FakeDaemon { line in
            let requests = Wire.requests(line)
            // Answer in reverse order, with a notification first, as one array.
            let answers = requests.reversed().map { request -> String in
                if request.method == "job.cancel" {
                    return Wire.error(id: request.id, RPCError(code: -32001, message: "no job 9"))
                }
                return Wire.result(id: request.id, ["method": request.method])
            }
            return [Wire.notification(.state, sampleJob(state: .paused)), "[" + answers.joined(separator: ",") + "]"]
        }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        let outcomes = try connection.callBatch([
            (.hello, .object([:])), (.cancel, .object([:])), (.status, .object([:])),
        ])
        #expect(outcomes.count == 3)
        #expect(try outcomes[0].get().decode(JSONValue.self) == .object(["method": .string("daemon.hello")]))
        #expect(throws: RPCError(code: -32001, message: "no job 9")) { try outcomes[1].get() }
        #expect(try outcomes[2].get().decode(JSONValue.self) == .object(["method": .string("daemon.status")]))
        #expect(daemon.requestLines.count == 1)
        #expect(daemon.requestLines[0].hasPrefix("[{"))

        // The notification that came before the answers is kept for later.
        let notification = try #require(try connection.nextNotification(until: .now + .seconds(5)))
        #expect(notification.method == "job.state")
        #expect(try notification.params.decode(JobInfo.self).state == .paused)
    }

    /// Two batches in flight: the second's answers come first and wait for their own turn.
    @Test func answersOfBatchesInFlightAreKeptForTheirOwnTurn() throws {
        let held = Mutex<[String]>([])
        let daemon = try FakeDaemon { line in
            let answers = Wire.requests(line).map { Wire.result(id: $0.id, ["method": $0.method]) }
            let answer = answers.count == 1 ? answers[0] : "[" + answers.joined(separator: ",") + "]"
            // The first line's answer is held until the second line has come, then sent after it.
            return held.withLock { first in
                guard !first.isEmpty else {
                    first = [answer]
                    return []
                }
                return [answer] + first
            }
        }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        let first = try connection.startBatch([(.hello, .object([:])), (.status, .object([:]))])
        let second = try connection.startBatch([(.list, .object([:]))])
        let firstAnswers = try connection.answers(to: first).map { try $0.get().decode(JSONValue.self) }
        #expect(
            firstAnswers == [
                .object(["method": .string("daemon.hello")]), .object(["method": .string("daemon.status")]),
            ])
        let secondAnswers = try connection.answers(to: second).map { try $0.get().decode(JSONValue.self) }
        #expect(secondAnswers == [.object(["method": .string("job.list")])])
        #expect(daemon.requestLines.count == 2)
    }

    @Test func requestIDsCountUpFromOne() throws {
        let daemon = try FakeDaemon { line in Wire.requests(line).map { Wire.result(id: $0.id, [String: String]()) } }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        _ = try connection.call(.hello)
        _ = try connection.callBatch([(.list, .object([:])), (.status, .object([:]))])
        let ids = daemon.requestLines.flatMap(Wire.requests).map(\.id)
        #expect(ids == [.number(1), .number(2), .number(3)])
    }

    @Test func daemonErrorIsThrown() throws {
        let daemon = try FakeDaemon { line in
            [Wire.error(id: Wire.requests(line)[0].id, RPCError.invalidParams("unknown key 'x'"))]
        }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        #expect(throws: RPCError.invalidParams("unknown key 'x'")) { try connection.call(.list) }
    }

    @Test func waitingForNotificationsStopsAtTheDeadline() throws {
        let daemon = try FakeDaemon { line in [Wire.result(id: Wire.requests(line)[0].id, [String: String]())] }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        _ = try connection.call(.subscribe)
        let start = ContinuousClock.now
        #expect(try connection.nextNotification(until: start + .milliseconds(100)) == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(100))
    }

    @Test func closedConnectionIsReported() throws {
        let daemon = try FakeDaemon { _ in nil }
        defer { daemon.stop() }
        let connection = try DaemonConnection(socketPath: daemon.socketPath)
        #expect(
            throws: ControlClientError.connectionLost(
                socketPath: daemon.socketPath, reason: "the daemon closed the connection")
        ) {
            try connection.call(.status)
        }
    }

    @Test func missingSocketIsUnreachable() {
        #expect(
            throws: ControlClientError.unreachable(
                socketPath: "/nonexistent/s.sock", reason: "No such file or directory")
        ) {
            try DaemonConnection(socketPath: "/nonexistent/s.sock")
        }
    }

    @Test func timeoutMillisecondsRoundUp() {
        #expect(DaemonConnection.milliseconds(until: nil) == -1)
        #expect(DaemonConnection.milliseconds(until: .now - .seconds(1)) == 0)
        let soon = DaemonConnection.milliseconds(until: .now + .microseconds(1500))
        #expect(soon >= 1 && soon <= 2)
        #expect(DaemonConnection.milliseconds(until: .now + .seconds(1_000_000_000)) == Int32.max)
    }
}

@Suite struct IncomingMessageTests {
    @Test func notificationHasNoID() throws {
        guard
            case .notification(let notification) = try IncomingMessage.decode(
                line: Array(#"{"jsonrpc":"2.0","method":"job.progress","params":{"id":3}}"#.utf8))
        else {
            Issue.record("not a notification")
            return
        }
        #expect(notification.method == "job.progress")
    }

    @Test func errorWithNullIDHasNoID() throws {
        let line = #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: x"}}"#
        guard case .replies(let replies) = try IncomingMessage.decode(line: Array(line.utf8)) else {
            Issue.record("not a reply")
            return
        }
        #expect(replies == [RPCReply(id: nil, outcome: .failure(RPCError(code: -32700, message: "parse error: x")))])
    }

    @Test func uploaddsOwnAnswerLayoutKeepsTheResultAsItCame() throws {
        let result = #"{"jobs":[{"id":1,"source":"/a \"b\"}"}]}"#
        let line = #"{"id":42,"jsonrpc":"2.0","result":"# + result + "}"
        guard case .replies(let replies) = try IncomingMessage.decode(line: Array(line.utf8)) else {
            Issue.record("not a reply")
            return
        }
        #expect(replies == [RPCReply(id: 42, outcome: .success(RPCResult(json: Array(result.utf8))))])
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#, #"{"id":7,"result":{"a":1},"jsonrpc":"2.0"}"#,
        #"{"id":7,"jsonrpc":"2.0","result":{"a":1} }"#,
    ])
    func otherLayoutsAreParsedTheGeneralWay(line: String) throws {
        guard case .replies(let replies) = try IncomingMessage.decode(line: Array(line.utf8)),
            let reply = replies.first, replies.count == 1
        else {
            Issue.record("not one reply")
            return
        }
        #expect(reply.id == 7)
        #expect(try reply.outcome.get().decode(JSONValue.self) == .object(["a": .number(1)]))
    }

    @Test(arguments: ["not json", "42", #"[1]"#, #"{"id":1,"error":{"nope":true}}"#])
    func garbageIsAnUnexpectedAnswer(line: String) {
        #expect(throws: ControlClientError.self) { try IncomingMessage.decode(line: Array(line.utf8)) }
    }
}

@Suite struct RequestLineTests {
    @Test func oversizedBatchIsSplitIntoLinesWithinTheLimitInOrder() throws {
        let path = String(repeating: "p", count: 1000)
        let requests = (1...3000).map {
            RPCRequest(id: .number(Double($0)), method: "job.add", params: .object(["source": .string(path)]))
        }
        let lines = try DaemonConnection.encodeLines(requests[...])
        #expect(lines.count > 2)
        #expect(lines.allSatisfy { $0.count <= ControlProtocol.maxLineLength && $0.last == UInt8(ascii: "\n") })
        let ids = lines.flatMap { Wire.requests(String(decoding: $0.dropLast(), as: UTF8.self)) }.map(\.id)
        #expect(ids == requests.map(\.id))
    }

    @Test func loneRequestIsAPlainObjectAndSmallBatchesOneLine() throws {
        let one = [RPCRequest(id: .number(1), method: "daemon.hello", params: .object([:]))]
        #expect(try DaemonConnection.encodeLines(one[...]).map { $0.first } == [UInt8(ascii: "{")])
        let two = one + [RPCRequest(id: .number(2), method: "daemon.status", params: .object([:]))]
        #expect(try DaemonConnection.encodeLines(two[...]).map { $0.first } == [UInt8(ascii: "[")])
    }
}
