import Foundation
import Glibc
import Synchronization
import Testing
import UploadCore
import UploadWire

/// Hostile or broken clients on the control socket: each case gets a JSON-RPC error or a closed
/// connection, another client's `uploadctl status` is answered promptly during and after, and the
/// daemon's RSS stays bounded (the figures are printed).
@Suite(.serialized)
final class HostileClientTests {
    /// How much a case may grow the daemon's RSS at its peak, and how close to the baseline it must
    /// come back once the clients are gone.
    static let peakGrowthLimitKiB = 64 << 10
    static let afterGrowthLimitKiB = 32 << 10

    let daemon: DaemonProcess

    init() throws {
        daemon = try DaemonProcess(name: "hostile")
        try daemon.start()
    }

    deinit { daemon.stop() }

    // MARK: Helpers

    /// A normal `uploadctl status` from another connection answers within a second.
    private func expectPromptStatus(_ moment: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (seconds, result) = try daemon.timedStatus()
        print("status \(moment): \(Int(seconds * 1000)) ms")
        #expect(result.status == 0, "status \(moment): \(result)", sourceLocation: sourceLocation)
        #expect(seconds < 1, "status \(moment) took \(seconds) s", sourceLocation: sourceLocation)
    }

    private func expectBounded(_ report: MemoryReport, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.peak - report.before < Self.peakGrowthLimitKiB, "\(report)", sourceLocation: sourceLocation)
        #expect(report.after - report.before < Self.afterGrowthLimitKiB, "\(report)", sourceLocation: sourceLocation)
        #expect(kill(daemon.pid, 0) == 0, "the daemon is still running", sourceLocation: sourceLocation)
    }

    private func request(_ id: Int, _ method: String, _ params: String? = nil) -> String {
        "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\"\(params.map { ",\"params\":\($0)" } ?? "")}"
    }

    private static func errorCode(_ answer: [String: Any]) -> Int? {
        (answer["error"] as? [String: Any])?["code"] as? Int
    }

    /// After the hostile lines, the same connection still answers a good request.
    private func expectStillAnswers(_ client: RawClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        client.send(line: request(424242, "daemon.hello"))
        let answer = try client.readResponse()
        #expect(answer["id"] as? Int == 424242, "\(answer)", sourceLocation: sourceLocation)
        #expect(answer["result"] is [String: Any], "\(answer)", sourceLocation: sourceLocation)
    }

    // MARK: Cases

    @Test func malformedJSONGetsParseErrors() throws {
        let nonJSON: [String] = [
            "{", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", "nul", "not json at all",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}{\"x\":1}",
            "{'jsonrpc':'2.0','id':1}",
            "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"daemon.status\"}", "[1,2,", "\"unterminated",
            // Deep nesting: a recursive decoder must not overflow its stack.
            String(repeating: "[", count: 100_000),
            String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "x",
            String(repeating: "{\"a\":", count: 50_000),
        ]
        let notRequests: [String] = [
            "123", "true", "null", "\"a string\"", "{}", "{\"jsonrpc\":\"2.0\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"daemon.status\"}",
            "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"daemon.status\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
            "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"daemon.status\"}",
            // Valid JSON nested deeply: decodes, but is no request.
            String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000),
        ]
        let client = try RawClient(daemon.socket)
        let report = try MemoryReport.measure("malformed JSON", pid: daemon.pid) {
            // Blank lines are skipped without an answer.
            client.send(line: "")
            client.send(line: "   \t ")
            for line in nonJSON {
                client.send(line: line)
                let answer = try client.readResponse()
                #expect(Self.errorCode(answer) == RPCError.parseErrorCode, "\(line.prefix(80)): \(answer)")
                #expect(answer["id"] is NSNull, "\(answer)")
                #expect(((answer["error"] as? [String: Any])?["message"] as? String)?.isEmpty == false)
            }
            for line in notRequests {
                client.send(line: line)
                let answer = try client.readResponse()
                let code = Self.errorCode(answer)
                #expect(
                    code == RPCError.invalidRequestCode || code == RPCError.parseErrorCode,
                    "\(line.prefix(80)): \(answer)")
            }
            // A batch of things that are not requests: one error each, in an array.
            client.send(line: "[1,\"two\",null]")
            let batch = try client.readJSON() as? [[String: Any]]
            #expect(
                batch?.count == 3 && batch?.allSatisfy { Self.errorCode($0) == RPCError.invalidRequestCode } == true,
                "\(String(describing: batch))")
            try expectPromptStatus("during malformed JSON")
            try expectStillAnswers(client)
        }
        try expectPromptStatus("after malformed JSON")
        expectBounded(report)
    }

    @Test func invalidUTF8GetsParseErrors() throws {
        let prefix = Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.st".utf8)
        let suffix = Array("atus\"}".utf8)
        let lines: [[UInt8]] = [
            [0xFF, 0xFE, 0xFD],
            prefix + [0xFF] + suffix,
            prefix + [0xC0, 0xAF] + suffix,  // overlong "/"
            prefix + [0xE2, 0x82] + suffix,  // truncated sequence
            prefix + [0xED, 0xA0, 0x80] + suffix,  // an encoded surrogate
            prefix + [0xF4, 0x90, 0x80, 0x80] + suffix,  // above U+10FFFF
            Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}".utf8) + [0x00],
            [0x00, 0x00, 0x00],
            Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800\"}".utf8),  // a lone surrogate escape
            Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\",\"params\":{\"k\\udfff\":1}}".utf8),
        ]
        let client = try RawClient(daemon.socket)
        let report = try MemoryReport.measure("invalid UTF-8", pid: daemon.pid) {
            for line in lines {
                client.send(line + [UInt8(ascii: "\n")])
                let answer = try client.readResponse()
                let code = Self.errorCode(answer)
                #expect(code != nil, "\(line.prefix(60)): an error, not \(answer)")
                #expect(answer["result"] == nil, "\(answer)")
            }
            // Bytes that are not UTF-8 are a parse error.
            for line in lines.prefix(6) {
                client.send(line + [UInt8(ascii: "\n")])
                let answer = try client.readResponse()
                #expect(Self.errorCode(answer) == RPCError.parseErrorCode, "\(line.prefix(60)): \(answer)")
            }
            try expectPromptStatus("during invalid UTF-8")
            try expectStillAnswers(client)
        }
        try expectPromptStatus("after invalid UTF-8")
        expectBounded(report)
    }

    @Test func aLineOfExactly1MiBIsServedAndOneByteMoreIsRefusedAndClosed() throws {
        let limit = ControlProtocol.maxLineLength
        let report = try MemoryReport.measure("lines over 1 MiB", pid: daemon.pid) {
            // Exactly the limit: a good request padded with spaces is answered.
            let atLimit = try RawClient(daemon.socket)
            let request = request(7, "daemon.hello")
            atLimit.send(line: request + String(repeating: " ", count: limit - request.utf8.count))
            let answer = try atLimit.readResponse()
            #expect(answer["id"] as? Int == 7 && answer["result"] is [String: Any], "\(answer)")

            // One byte over, with a newline: an error, then the connection closes.
            let over = try RawClient(daemon.socket)
            over.send(line: request + String(repeating: " ", count: limit + 1 - request.utf8.count))
            let overAnswer = try over.readResponse()
            #expect(Self.errorCode(overAnswer) == RPCError.invalidRequestCode, "\(overAnswer)")
            #expect((((overAnswer["error"] as? [String: Any])?["message"]) as? String)?.contains("longer than") == true)
            #expect(over.isClosed(within: 5), "the connection is closed after a line over 1 MiB")

            // 8 MiB without any newline, while another client asks for the status: the error, then close.
            let endless = try RawClient(daemon.socket)
            let sender = Thread {
                let block = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
                for _ in 0..<8 { guard endless.send(block) else { break } }
            }
            sender.start()
            try expectPromptStatus("during an 8 MiB line")
            let endlessAnswer = try endless.readResponse(timeout: 20)
            #expect(Self.errorCode(endlessAnswer) == RPCError.invalidRequestCode, "\(endlessAnswer)")
            #expect(endless.isClosed(within: 10), "the connection is closed after an endless line")

            // 20 clients at once, each sending 2 MiB of junk without a newline.
            let clients = try (0..<20).map { _ in try RawClient(daemon.socket) }
            let group = DispatchGroup()
            for client in clients {
                DispatchQueue.global().async(group: group) {
                    client.send([UInt8](repeating: UInt8(ascii: "{"), count: 2 << 20))
                }
            }
            try expectPromptStatus("during 20 clients sending 2 MiB lines")
            #expect(group.wait(timeout: .now() + 30) == .success)
            for (index, client) in clients.enumerated() {
                let answer = try client.readResponse(timeout: 20)
                #expect(Self.errorCode(answer) == RPCError.invalidRequestCode, "client \(index): \(answer)")
                #expect(client.isClosed(within: 10), "client \(index) is closed")
            }
        }
        try expectPromptStatus("after lines over 1 MiB")
        expectBounded(report)
    }

    @Test func wrongTypesInParamsGetInvalidParams() throws {
        let bad: [(String, String)] = [
            ("job.get", "{\"id\":\"seven\"}"), ("job.get", "{\"id\":-1}"), ("job.get", "{\"id\":1.5}"),
            ("job.get", "{\"id\":1e30}"), ("job.get", "{\"id\":null}"), ("job.get", "{\"id\":[1]}"),
            ("job.get", "{\"ids\":\"1\"}"), ("job.get", "{\"ids\":[true]}"), ("job.get", "[1]"), ("job.get", "7"),
            ("job.add", "[]"), ("job.add", "\"file\""), ("job.add", "{\"source\":1,\"destination\":2}"),
            ("job.add", "{\"source\":\"/etc/hostname\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"priority\":\"high\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"priority\":1e100}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"chunk_size\":-5}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"chunk_size\":\"lots\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"headers\":\"X: y\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"fields\":5}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"metadata\":{\"a\":1}}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"protocol\":\"ftp\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"snapshot\":\"maybe\"}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"client_token\":5}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"user\":[\"a\"]}"),
            ("job.add", "{\"source\":\"/etc/hostname\",\"destination\":\"file:///tmp/h/\",\"bogus\":1}"),
            ("job.list", "{\"states\":[\"nope\"]}"), ("job.list", "{\"states\":\"queued\"}"),
            ("job.list", "{\"ids\":{}}"),
            ("job.pause", "{\"all\":\"yes\"}"), ("job.pause", "{}"), ("job.cancel", "{\"ids\":[]}"),
            ("job.delete", "{\"id\":\"x\"}"), ("events.subscribe", "{\"ids\":\"all\"}"),
            ("daemon.status", "{\"x\":1}"), ("daemon.status", "5"), ("daemon.hello", "[null]"),
            ("daemon.reload", "{\"now\":true}"),
        ]
        let client = try RawClient(daemon.socket)
        let report = try MemoryReport.measure("wrong types in params", pid: daemon.pid) {
            for (index, (method, params)) in bad.enumerated() {
                client.send(line: request(index, method, params))
                let answer = try client.readResponse()
                #expect(answer["id"] as? Int == index, "\(answer)")
                #expect(Self.errorCode(answer) == RPCError.invalidParamsCode, "\(method) \(params): \(answer)")
                let message = (answer["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(!message.isEmpty, "\(answer)")
            }
            try expectPromptStatus("during wrong params")
            try expectStillAnswers(client)
        }
        let jobs = try daemon.ctlJSON(JobList.self, ["list"]).jobs
        #expect(jobs.isEmpty, "no bad params made a job: \(jobs)")
        try expectPromptStatus("after wrong params")
        expectBounded(report)
    }

    @Test func unknownMethodsGetMethodNotFound() throws {
        let methods = [
            "job.nope", "", "daemon.hello ", "DAEMON.HELLO", "rpc.discover", "__proto__", "constructor",
            "job.add\\u0000", "jöb.äff", String(repeating: "m", count: 100_000), "job", "events", "daemon.",
        ]
        let client = try RawClient(daemon.socket)
        let report = try MemoryReport.measure("unknown methods", pid: daemon.pid) {
            for (index, method) in methods.enumerated() {
                client.send(line: request(index, method))
                let answer = try client.readResponse()
                #expect(answer["id"] as? Int == index, "\(answer)")
                #expect(Self.errorCode(answer) == RPCError.methodNotFoundCode, "\(method.prefix(40)): \(answer)")
                let message = (answer["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.utf8.count < 4096 || method.utf8.count > 4096, "\(message.prefix(100))")
            }
            // A notification (no id) of an unknown method gets no answer at all.
            client.send(line: "{\"jsonrpc\":\"2.0\",\"method\":\"job.nope\"}")
            try expectStillAnswers(client)
            try expectPromptStatus("during unknown methods")
        }
        try expectPromptStatus("after unknown methods")
        expectBounded(report)
    }

    @Test func aBatchOf10000RequestsIsAnsweredInOneArray() throws {
        let count = 10_000
        var items: [String] = []
        var expectErrors = Set<Int>()
        for index in 0..<count {
            switch index % 5 {
            case 0: items.append(request(index, "daemon.hello"))
            case 1: items.append(request(index, "daemon.status"))
            case 2: items.append(request(index, "job.list"))
            case 3:
                items.append(request(index, "job.get", "{\"id\":999999}"))
                expectErrors.insert(index)
            default:
                items.append(request(index, "no.such.method"))
                expectErrors.insert(index)
            }
        }
        // Notifications in the batch get no answer.
        items += (0..<10).map { _ in "{\"jsonrpc\":\"2.0\",\"method\":\"daemon.status\"}" }
        let line = "[" + items.joined(separator: ",") + "]"
        #expect(line.utf8.count < ControlProtocol.maxLineLength)
        let client = try RawClient(daemon.socket)
        var seconds = 0.0
        let report = try MemoryReport.measure("batch of 10,000", pid: daemon.pid) {
            let started = Date()
            client.send(line: line)
            try expectPromptStatus("during a batch of 10,000")
            guard let answers = try client.readJSON(timeout: 120) as? [[String: Any]] else {
                Issue.record("the batch's answer is not one array")
                return
            }
            seconds = Date().timeIntervalSince(started)
            #expect(answers.count == count, "every request in the batch is answered")
            let ids = answers.compactMap { $0["id"] as? Int }
            #expect(Set(ids) == Set(0..<count), "each id exactly once")
            #expect(ids.count == count)
            let errors = Set(answers.filter { $0["error"] != nil }.compactMap { $0["id"] as? Int })
            #expect(errors == expectErrors)

            // A batch of nothing but notifications gets no answer; the next request does.
            client.send(
                line: "["
                    + (0..<count).map { _ in "{\"jsonrpc\":\"2.0\",\"method\":\"daemon.hello\"}" }.joined(
                        separator: ",") + "]")
            try expectStillAnswers(client)
        }
        print("batch of \(count): answered in \(String(format: "%.2f", seconds)) s")
        try expectPromptStatus("after a batch of 10,000")
        expectBounded(report)
    }

    /// An answer bigger than the cap on unread output (16 MiB) still arrives whole: `job.list` and
    /// `job.clear` of 1,600 completed jobs whose paths are near PATH_MAX (about 18 MiB each). The
    /// daemon used to take such an answer for a client that stopped reading and hang up.
    @Test func anAnswerBiggerThanTheUnreadOutputCapArrivesWhole() throws {
        let count = 1_600
        var long = daemon.root
        var out = daemon.root.appendingPathComponent("out")
        while long.path.utf8.count < 3_800 {
            let component = String(repeating: "d", count: 200)
            long.appendPathComponent(component)
            out.appendPathComponent(component)
        }
        try FileManager.default.createDirectory(at: long, withIntermediateDirectories: true)
        let sources = try (0..<count).map { index in
            let path = long.appendingPathComponent(String(format: "f%04d", index)).path
            try "\(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }
        let client = try RawClient(daemon.socket)
        var nextID = 1
        for start in stride(from: 0, to: count, by: 100) {
            let adds = sources[start..<min(start + 100, count)].map { source -> String in
                nextID += 1
                return request(
                    nextID, "job.add",
                    #"{"source":"\#(source)","destination":"file://\#(out.path)/","snapshot":"none"}"#)
            }
            client.send(line: "[" + adds.joined(separator: ",") + "]")
            let answers = try client.readJSON(timeout: 60) as? [[String: Any]] ?? []
            #expect(answers.count == adds.count && answers.allSatisfy { $0["result"] != nil }, "\(answers.prefix(1))")
        }
        let done = eventually(timeout: 300) {
            client.send(line: self.request(1, "daemon.status"))
            let jobs = ((try? client.readResponse())?["result"] as? [String: Any])?["jobs"] as? [String: Any]
            return jobs?["completed"] as? Int == count
        }
        try #require(done, "the \(count) copies did not all complete")

        for method in ["job.list", "job.clear"] {
            client.send(line: request(7, method))
            guard case .line(let line) = client.readLine(timeout: 120) else {
                Issue.record("\(method): no whole answer (the daemon hung up?)")
                return
            }
            #expect(
                line.count > 16 << 20, "\(method)'s answer is only \(line.count) bytes: the test needs one over the cap"
            )
            let answer = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
            let jobs = answer?["result"] as? [Any] ?? (answer?["result"] as? [String: Any])?["jobs"] as? [Any]
            #expect(jobs?.count == count, "\(method) lists every job")
            print("\(method) of \(count) jobs: one answer of \(line.count >> 20) MiB")
        }
        try expectStillAnswers(client)
        try expectPromptStatus("after answers over 16 MiB")
    }

    /// Batches pipelined by a client that never reads its answers: the work the daemon takes on for
    /// one connection must be bounded, not 256 lines of 15,000 requests each at once, and it must
    /// stop once the client is gone.
    @Test func pipelinedBatchesFromAClientThatNeverReadsAreBounded() throws {
        let lines = 8
        let perBatch = 15_000
        let batch = "[" + (0..<perBatch).map { request($0, "daemon.hello") }.joined(separator: ",") + "]"
        #expect(batch.utf8.count < ControlProtocol.maxLineLength)
        var settledCPU = 0.0
        let report = try MemoryReport.measure("\(lines) pipelined batches of \(perBatch), never read", pid: daemon.pid)
        {
            let client = try RawClient(daemon.socket, receiveBuffer: 4096)
            var sent = 0
            while sent < lines && client.send(line: batch) { sent += 1 }
            print("pipelined batches sent before the daemon stopped reading: \(sent) of \(lines)")
            usleep(1_000_000)
            try expectPromptStatus("during pipelined batches")
            _ = client.isClosed(within: 5)  // the daemon may drop it for not reading; either way it goes now
        }
        // Once the client is gone, the daemon stops working for it.
        usleep(1_000_000)
        let before = ProcStats.cpuSeconds(daemon.pid)
        usleep(2_000_000)
        settledCPU = ProcStats.cpuSeconds(daemon.pid) - before
        print(
            "CPU in the 2 s after the client left: \(String(format: "%.2f", settledCPU)) s; RSS now \(ProcStats.rssKiB(daemon.pid) >> 10) MiB"
        )
        #expect(settledCPU < 0.3, "the daemon still works for a client that is gone: \(settledCPU) s CPU in 2 s")
        try expectPromptStatus("after pipelined batches")
        // Back-pressure keeps one 15,000-request batch line in flight at a time; its parse tree and
        // answers cost about 60 MiB while it runs, and glibc keeps some freed memory. What must hold
        // is that more pipelined batches do not cost more: bounded, not batch-free.
        #expect(report.peak - report.before < 96 << 10, "\(report)")
        #expect(report.after - report.before < 64 << 10, "\(report)")
    }

    @Test func aThousandConcurrentConnectionsAreAllAnswered() throws {
        let count = 1_000
        let limit = FileLimit.raise(to: max(4096, count + 256))
        try #require(
            limit >= count + 64, "the test needs \(count + 64) descriptors; the hard limit is \(FileLimit.hard)")
        let daemonLimits = ProcStats.fileLimits(daemon.pid)
        print(
            "daemon RLIMIT_NOFILE: \(String(describing: daemonLimits)), open before: \(ProcStats.openFiles(daemon.pid))"
        )
        var peakFiles = 0
        let report = try MemoryReport.measure("1,000 concurrent connections", pid: daemon.pid) {
            var clients: [RawClient] = []
            let started = Date()
            for _ in 0..<count { clients.append(try RawClient(daemon.socket)) }
            for (index, client) in clients.enumerated() { client.send(line: request(index, "daemon.hello")) }
            try expectPromptStatus("with 1,000 connections open")
            var answered = 0
            for (index, client) in clients.enumerated() {
                if let answer = try? client.readResponse(timeout: 30), answer["id"] as? Int == index,
                    answer["result"] != nil
                {
                    answered += 1
                }
            }
            peakFiles = ProcStats.openFiles(daemon.pid)
            print(
                "1,000 connections: \(answered) answered in \(String(format: "%.2f", Date().timeIntervalSince(started))) s; daemon holds \(peakFiles) descriptors"
            )
            #expect(answered == count, "all \(count) connections answered")
            try expectPromptStatus("with 1,000 connections open, after answers")
            clients.removeAll()
        }
        try expectPromptStatus("after 1,000 connections")
        #expect(eventually(timeout: 10) { ProcStats.openFiles(daemon.pid) < 100 }, "the daemon closed the connections")
        let exhausted = daemon.logLines(containing: "Too many open files")
        #expect(
            exhausted.isEmpty,
            "the daemon ran out of descriptors (its limit: \(String(describing: daemonLimits))): \(exhausted.prefix(3))"
        )
        expectBounded(report)
    }

    /// Clients that hang up at every moment of a request, many at once: the daemon lives, answers,
    /// and closes every descriptor. libdispatch's sources watched the clients before, and a
    /// client's hang-up crashed the daemon inside libdispatch twice in CI ("Source finalized
    /// twice"); this does not reproduce that on demand, it holds the daemon to the behaviour.
    @Test func clientsHangingUpAtEveryMomentLeaveNothingBehind() throws {
        let before = ProcStats.openFiles(daemon.pid)
        let flood = Array(repeating: request(1, "daemon.hello") + "\n", count: 3_000).joined()
        let socket = daemon.socket
        let hello = request(1, "daemon.hello")
        let subscribe = request(1, "events.subscribe", "{\"snapshot\":true}")
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for round in 0..<150 {
                do {
                    let client = try RawClient(socket)
                    switch (worker + round) % 6 {
                    case 0: break  // gone before a word
                    case 1: client.send(Array(hello.utf8.prefix(20)))  // gone mid-line
                    case 2: client.send(line: hello)  // gone before the answer
                    case 3:
                        // More answers than the socket holds, unread: the daemon waits to write.
                        client.send(Array(flood.utf8))
                    case 4:
                        client.send(line: hello)
                        shutdown(client.fd, Int32(SHUT_WR))
                        _ = client.drainUntilClosed(timeout: 10)
                    default:
                        client.send(line: subscribe)
                        _ = client.readLine(timeout: 10)
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(kill(daemon.pid, 0) == 0, "the daemon is still running")
        try expectPromptStatus("after 1,200 clients hung up")
        #expect(
            eventually(timeout: 20) { ProcStats.openFiles(daemon.pid) <= before + 2 },
            "the daemon closed every connection: \(ProcStats.openFiles(daemon.pid)) open, \(before) before")
    }

    @Test func silentClientsDoNotStopOthers() throws {
        let report = try MemoryReport.measure("100 silent clients", pid: daemon.pid) {
            let silent = try (0..<100).map { _ in try RawClient(daemon.socket) }
            try expectPromptStatus("with 100 silent clients")
            // Half a request, never finished.
            let halfway = try (0..<100).map { _ in try RawClient(daemon.socket) }
            for client in halfway { client.send(Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"meth".utf8)) }
            try expectPromptStatus("with 100 silent and 100 half-finished clients")
            usleep(500_000)
            try expectPromptStatus("with 200 idle clients, later")
            // The silent ones are still served when they finally speak.
            for (index, client) in silent.prefix(10).enumerated() {
                client.send(line: request(index, "daemon.hello"))
                #expect((try? client.readResponse())?["id"] as? Int == index)
            }
            // And a half-finished line completed much later is answered too.
            halfway[0].send(line: "od\":\"daemon.hello\"}")
            #expect((try? halfway[0].readResponse())?["id"] as? Int == 1)
        }
        try expectPromptStatus("after silent clients")
        #expect(eventually(timeout: 10) { ProcStats.openFiles(daemon.pid) < 100 }, "the daemon closed the connections")
        expectBounded(report)
    }

    /// Idle clients each holding almost a whole line (1 MiB - 1 byte, no newline): per connection the
    /// framer is bounded, but nothing bounds the sum. Printed, and checked to come back afterwards.
    @Test func clientsHoldingAlmostFullLinesAreBoundedPerConnection() throws {
        let count = 32
        let report = try MemoryReport.measure("\(count) clients holding 1 MiB partial lines", pid: daemon.pid) {
            let clients = try (0..<count).map { _ in try RawClient(daemon.socket) }
            for client in clients {
                #expect(client.send([UInt8](repeating: UInt8(ascii: " "), count: ControlProtocol.maxLineLength - 1)))
            }
            try expectPromptStatus("with \(count) clients holding partial lines")
        }
        try expectPromptStatus("after partial lines")
        #expect(report.after - report.before < Self.afterGrowthLimitKiB, "\(report)")
        #expect(report.peak - report.before < (count + 16) * 2 << 10, "at most ~2 MiB per connection: \(report)")
    }

    @Test func subscribersThatNeverReadAreDroppedNotBuffered() throws {
        let servers = try TestServers.load()
        daemon.stop()
        try "[daemon]\ntransfers = 1\nrate_limit = 1K\n".write(
            toFile: daemon.configPath, atomically: true, encoding: .utf8)
        try daemon.start()
        // Job events carry the source path: a long one makes each event about 4 KB.
        let files = try TestPaths.scratch("hostile-events")
        var directory = files.path
        for level in 0..<13 {
            directory += "/" + String(repeating: Character(String(level % 10)), count: 250)
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = directory + "/event.bin"
        try makeRandomFile(at: source, size: 1 << 20)
        print("source path: \(source.utf8.count) bytes")
        let jobCount = 150
        let add = try daemon.ctl(
            ["add"] + Array(repeating: source, count: jobCount)
                + [
                    "--to", "\(servers.nginxURL)/dav/hostile-events-\(UUID().uuidString.prefix(6))/", "--protocol",
                    "put", "--snapshot", "none",
                ])
        try #require(add.status == 0, "\(add.stderr.prefix(500))")

        let control = try RawClient(daemon.socket)
        var nextID = 1
        func call(_ method: String, _ params: String) throws {
            nextID += 1
            control.send(line: request(nextID, method, params))
            while true {
                let answer = try control.readResponse(timeout: 30)
                if answer["id"] as? Int == nextID {
                    #expect(answer["error"] == nil, "\(method): \(answer)")
                    return
                }
            }
        }
        let baselineDrops = daemon.logLines(containing: "of events behind").count
        var cycles = 0
        var bytesToSubscribers: [Int] = []
        let report = try MemoryReport.measure("2 subscribers that never read", pid: daemon.pid) {
            let subscribers = try (0..<2).map { _ in try RawClient(daemon.socket, receiveBuffer: 4096) }
            for (index, subscriber) in subscribers.enumerated() {
                subscriber.send(line: request(index, "events.subscribe"))
            }
            // Every pause and resume of all jobs is one event per job, to every subscriber.
            while cycles < 80 && daemon.logLines(containing: "of events behind").count < baselineDrops + 2 {
                try call("job.pause", "{\"all\":true}")
                try call("job.resume", "{\"all\":true}")
                cycles += 1
                if cycles % 10 == 0 { try expectPromptStatus("after \(cycles) pause/resume cycles") }
            }
            try expectPromptStatus("while subscribers are dropped")
            for subscriber in subscribers {
                let read = subscriber.drainUntilClosed(timeout: 20)
                #expect(read != nil, "a subscriber that never read is disconnected")
                bytesToSubscribers.append(read ?? -1)
            }
        }
        print(
            "pause/resume cycles: \(cycles); bytes a never-reading subscriber got before it was dropped: \(bytesToSubscribers)"
        )
        #expect(
            daemon.logLines(containing: "of events behind").count >= baselineDrops + 2, "both subscribers were dropped")
        try expectPromptStatus("after subscribers were dropped")
        expectBounded(report)
    }

    // MARK: All clients together

    /// Unfinished lines from many clients, more than the daemon holds for all clients together
    /// (128 MiB): the clients holding the most are disconnected until the rest fit, so the sum is
    /// bounded, not only each connection's share.
    @Test func unfinishedLinesPastWhatAllClientsMayHoldDisconnectTheGreediest() throws {
        let count = 160
        FileLimit.raise(to: 1024)
        let logBefore = daemon.logLines(containing: "the most of all clients").count
        var survivors = 0
        // A client that comes after them and stays, as other clients do on a busy daemon: its
        // blocks lie above theirs on the heap, so what they freed is not at the heap's top, where
        // glibc gives it back by itself (the CI of 8013e15 kept 120 MiB of it).
        var stayer: RawClient?
        let report = try MemoryReport.measure("\(count) clients holding 1 MiB partial lines", pid: daemon.pid) {
            let clients = try (0..<count).map { _ in try RawClient(daemon.socket) }
            let almostALine = [UInt8](repeating: UInt8(ascii: " "), count: ControlProtocol.maxLineLength - 1)
            for client in clients { client.send(almostALine) }
            try expectPromptStatus("with \(count) MiB of unfinished lines sent")
            stayer = try RawClient(daemon.socket)
            stayer?.send([UInt8](repeating: UInt8(ascii: " "), count: 200 << 10))
            try expectPromptStatus("with a client that stays")
            survivors = clients.filter { !$0.isClosed(within: 0.05) }.count
            // The survivors are still served once they end their lines.
            for (index, client) in clients.enumerated() where !client.isClosed(within: 0) {
                client.send(line: "")
                client.send(line: request(index, "daemon.hello"))
                #expect((try? client.readResponse())?["id"] as? Int == index, "a client that fit is served")
                break
            }
        }
        let disconnected = daemon.logLines(containing: "the most of all clients").count - logBefore
        print("\(count) clients of 1 MiB each: \(survivors) kept, \(disconnected) disconnected as the greediest")
        #expect(survivors <= 128, "at most 128 MiB of unfinished lines are kept: \(survivors) clients")
        #expect(survivors >= 32, "only as many clients as needed are disconnected: \(survivors) kept")
        #expect(disconnected == count - survivors, "each disconnection is logged")
        try expectPromptStatus("after the greediest clients were disconnected")
        #expect(report.peak - report.before < 192 << 10, "the 128 MiB budget bounds the daemon's growth: \(report)")
        #expect(report.after - report.before < Self.afterGrowthLimitKiB, "\(report)")
        #expect(stayer?.isClosed(within: 0) == false, "the client that stays is kept")
        #expect(kill(daemon.pid, 0) == 0, "the daemon is still running")
    }

    /// More clients at once than the daemon serves (half its descriptor limit, here 128 of 256):
    /// one more is told why and closed, and is served once another has left.
    @Test func clientsBeyondTheLimitAreToldWhyAndServedOnceOthersLeave() throws {
        daemon.stop()
        daemon.launcher = ["/usr/bin/prlimit", "--nofile=256:256", "--"]
        try daemon.start()
        let limit = 128
        var clients: [RawClient] = []
        var served = 0
        for index in 0..<limit {
            let client = try RawClient(daemon.socket)
            client.send(line: request(index, "daemon.hello"))
            if (try? client.readResponse())?["id"] as? Int == index { served += 1 }
            clients.append(client)
        }
        #expect(served == limit, "\(limit) clients at once are served")
        let extra = try RawClient(daemon.socket)
        let refusal = try extra.readResponse()
        print("client \(limit + 1): \(refusal)")
        #expect(Self.errorCode(refusal) == RPCError.busyCode, "\(refusal)")
        #expect(extra.isClosed(within: 5), "the client over the limit is closed")
        let ctl = try daemon.ctl(["status"])
        print("uploadctl status with \(limit) clients connected: \(ctl)")
        #expect(ctl.status != 0 && ctl.stderr.contains("as many clients as it takes at once (\(limit))"), "\(ctl)")
        #expect(daemon.logLines(containing: "refusing more").count == 1, "said once, not for each client refused")
        clients.removeFirst()
        #expect(eventually(timeout: 10) { (try? daemon.ctl(["status"]))?.status == 0 }, "served once one has left")
    }

    // MARK: Descriptor limits

    /// The daemon raises its soft RLIMIT_NOFILE to the hard limit at start, so a few hundred clients
    /// do not exhaust the usual soft limit of 1024.
    @Test func theDaemonRaisesItsSoftFileLimitToTheHardLimit() throws {
        let hard = FileLimit.hard
        try #require(hard > 1024, "the hard RLIMIT_NOFILE is \(hard): nothing to raise")
        daemon.stop()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        process.arguments = [
            "--nofile=1024:\(hard)", "--", TestPaths.binaries.appendingPathComponent("uploadd").path, "--state-dir",
            daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--socket", daemon.socket, "--config",
            daemon.configPath,
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGTERM)
            if !eventually(timeout: 10, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        #expect(eventually(timeout: 20) { (try? daemon.ctl(["status"]))?.status == 0 })
        let limits = ProcStats.fileLimits(process.processIdentifier)
        print("daemon started with soft 1024, hard \(hard): now \(String(describing: limits))")
        #expect(
            limits?.soft == limits?.hard,
            "uploadd should raise its soft descriptor limit to the hard one: \(String(describing: limits))")
    }

    /// When the daemon does run out of descriptors, it neither spins on the listening socket nor
    /// floods its log, and it serves the waiting clients once descriptors are free again.
    @Test func runningOutOfDescriptorsDoesNotSpinAndRecovers() throws {
        FileLimit.raise(to: 1024)
        let pid = daemon.pid
        let open = ProcStats.openFiles(pid)
        let hard = ProcStats.fileLimits(pid)?.hard ?? FileLimit.hard
        let lowered = try Command.run("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(open + 10):\(hard)"])
        try #require(lowered.status == 0, "prlimit: \(lowered)")
        defer { _ = try? Command.run("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(hard):\(hard)"]) }
        let logBefore = daemon.logLines(containing: "accept").count
        var clients: [RawClient] = []
        for index in 0..<40 {
            let client = try RawClient(daemon.socket)
            client.send(line: request(index, "daemon.hello"))
            clients.append(client)
        }
        var served: [Int] = []
        var waiting: [Int] = []
        for (index, client) in clients.enumerated() {
            if let answer = try? client.readResponse(timeout: 0.3), answer["id"] as? Int == index {
                served.append(index)
            } else {
                waiting.append(index)
            }
        }
        print("with the daemon's limit at \(open + 10) descriptors: \(served.count) served, \(waiting.count) waiting")
        // With no client waiting, the daemon never ran out, and nothing below would test anything.
        try #require(!waiting.isEmpty, "40 clients on \(open + 10) descriptors: none had to wait")
        let cpuBefore = ProcStats.cpuSeconds(pid)
        usleep(2_000_000)
        let cpu = ProcStats.cpuSeconds(pid) - cpuBefore
        let warnings = daemon.logLines(containing: "accept").count - logBefore
        print("out of descriptors for 2 s: \(String(format: "%.2f", cpu)) s of CPU, \(warnings) accept warnings logged")
        #expect(cpu < 0.5, "the daemon spins while out of descriptors: \(cpu) s CPU in 2 s")
        #expect(warnings < 20, "the daemon floods its log while out of descriptors: \(warnings) lines")

        // Free descriptors: the clients that waited are served.
        var remaining: [(index: Int, client: RawClient?)] = waiting.map { ($0, clients[$0]) }
        clients.removeAll()
        var late = 0
        for position in remaining.indices {
            let index = remaining[position].index
            if let answer = try? remaining[position].client?.readResponse(timeout: 10), answer["id"] as? Int == index {
                late += 1
            }
            remaining[position].client = nil  // closes it, freeing the daemon's descriptor for the next
        }
        #expect(
            late == waiting.count,
            "the clients that waited are served once descriptors are free: \(late) of \(waiting.count)")
        try expectPromptStatus("after running out of descriptors")
    }
}
