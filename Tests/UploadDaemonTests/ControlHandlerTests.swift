import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// Lines in, lines out: every answer is one JSON line, results are encoded straight from their types.
@Suite("ControlHandler: requests to answers")
struct ControlHandlerTests {
    static func handler(_ harness: SchedulerHarness) -> ControlHandler {
        ControlHandler(
            scheduler: harness.scheduler, events: harness.events, reload: { [] },
            status: {
                DaemonStatus(
                    version: "test", pid: 1, uptime: 0, jobs: [:], speed: 0, maxTransfers: 1, stateDirectory: "/s",
                    cacheDirectory: "/c", socket: "/sock", journalBytes: 0, journalDamage: nil, configWarnings: [])
            })
    }

    static let client = ControlHandler.Client(id: ControlClientID.next(), deliver: { _ in })

    static func answer(_ line: String, _ handler: ControlHandler) async throws -> JSONValue? {
        guard let bytes = await handler.handle(line: Array(line.utf8), client: client) else { return nil }
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false, "one line")
        return try JSONCoding.decoder.decode(JSONValue.self, from: Data(bytes))
    }

    @Test func everyKindOfAnswerIsOneLine() async throws {
        let harness = try await SchedulerHarness()
        let handler = Self.handler(harness)
        let parseError = try await Self.answer("{nope", handler)
        #expect(parseError?.objectValue?["error"]?.objectValue?["code"] == .number(Double(RPCError.parseErrorCode)))
        let emptyBatch = try await Self.answer("[]", handler)
        #expect(emptyBatch?.objectValue?["error"] != nil)
        #expect(
            try await Self.answer(#"{"jsonrpc":"2.0","method":"job.list"}"#, handler) == nil,
            "a notification gets no answer")

        let list = try await Self.answer(#"{"jsonrpc":"2.0","id":"x","method":"job.list"}"#, handler)
        #expect(
            list == .object(["jsonrpc": .string("2.0"), "id": .string("x"), "result": .object(["jobs": .array([])])]))

        let batch = try await Self.answer(
            #"[{"jsonrpc":"2.0","id":1,"method":"job.list"},{"jsonrpc":"2.0","id":2,"method":"no.such"},{"jsonrpc":"2.0","method":"job.list"}]"#,
            handler)
        guard case .array(let answers)? = batch else {
            Issue.record("a batch answers with an array: \(String(describing: batch))")
            return
        }
        #expect(answers.count == 2)
        #expect(answers.first?.objectValue?["id"] == .number(1))
        #expect(
            answers.last?.objectValue?["error"]?.objectValue?["code"] == .number(Double(RPCError.methodNotFoundCode)))
    }

    @Test func addedJobsComeBackAsTheirInfo() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        let path = try harness.directory.write("src/a.txt", "a")
        let request =
            #"{"jsonrpc":"2.0","id":7,"method":"job.add","params":{"source":"\#(path)","destination":"file:///nowhere/"}}"#
        let added = try await Self.answer(request, handler)
        let job = try #require(added?.objectValue?["result"]).decode(JobInfo.self)
        #expect(job.source == path)
        #expect(job.state == .queued || job.state == .running)
    }

    /// `job_fields` narrows an add's answer, alone or in a batch; a name no job has refuses the
    /// add, which then adds nothing.
    @Test func anAddAnswersWithTheJobFieldsAskedFor() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        let path = try harness.directory.write("src/a.txt", "a")
        func add(_ id: Int, _ fields: String) -> String {
            #"{"jsonrpc":"2.0","id":\#(id),"method":"job.add","params":{"source":"\#(path)","destination":"file:///nowhere/","job_fields":\#(fields)}}"#
        }
        let alone = try await Self.answer(add(1, #"["batch"]"#), handler)
        #expect(alone?.objectValue?["result"]?.objectValue?.keys.sorted() == ["id", "state"], "no batch: no key")
        let batch = try await Self.answer("[" + add(2, #"["source"]"#) + "," + add(3, #"["nope"]"#) + "]", handler)
        guard case .array(let answers)? = batch, answers.count == 2 else {
            Issue.record("two answers: \(String(describing: batch))")
            return
        }
        #expect(answers[0].objectValue?["result"]?.objectValue?.keys.sorted() == ["id", "source", "state"])
        let refusal = answers[1].objectValue?["error"]?.objectValue
        #expect(refusal?["code"] == .number(Double(RPCError.invalidParamsCode)))
        #expect(await harness.scheduler.list(states: nil, ids: nil).count == 2, "the refused add added nothing")
    }

    /// Pages of `job.list` walked with `after` give the jobs of the whole list, in order, each
    /// filter applied; the last page has no `next`.
    @Test func pagesOfTheListFollowOneAnotherToTheLast() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        let path = try harness.directory.write("src/a.txt", "a")
        // Jobs 1, 2, 3, 5, 8, 13 and 21 in batch 1, the others alone.
        let batch = [1, 2, 3, 5, 8, 13, 21]
        for id in 1...23 {
            let joins = id == 1 ? #","new_batch":true"# : batch.contains(id) ? #","batch":1"# : ""
            let add =
                #"{"jsonrpc":"2.0","id":\#(id),"method":"job.add","params":{"source":"\#(path)","destination":"file:///nowhere/"\#(joins)}}"#
            let added = try await Self.answer(add, handler)?.objectValue?["result"]?.objectValue
            #expect(added?["id"] == .number(Double(id)))
        }
        func walk(_ filters: String, limit: Int) async throws -> [JSONValue] {
            var jobs: [JSONValue] = []
            var after = ""
            while true {
                let request =
                    #"{"jsonrpc":"2.0","id":1,"method":"job.list","params":{"limit":\#(limit)\#(after)\#(filters)}}"#
                let result = try #require(try await Self.answer(request, handler)?.objectValue?["result"]?.objectValue)
                guard case .array(let page)? = result["jobs"] else {
                    Issue.record("no jobs in \(result)")
                    return jobs
                }
                #expect(page.count <= limit)
                jobs += page
                guard case .number(let next)? = result["next"] else { return jobs }
                #expect(page.count == limit, "only the last page is short")
                #expect(page.last?.objectValue?["id"] == .number(next))
                after = #","after":\#(Int(next))"#
            }
        }
        let whole = try #require(
            try await Self.answer(#"{"jsonrpc":"2.0","id":1,"method":"job.list"}"#, handler)?.objectValue?["result"])
        // IDs only: the jobs run meanwhile, so their other members change.
        func ids(_ jobs: [JSONValue]) -> [JSONValue?] { jobs.map { $0.objectValue?["id"] } }
        guard case .array(let wholeJobs)? = whole.objectValue?["jobs"] else {
            Issue.record("no jobs in \(whole)")
            return
        }
        #expect(ids(try await walk("", limit: 4)) == ids(wholeJobs))
        #expect(wholeJobs.count == 23)
        #expect(try await walk("", limit: 23).count == 23)
        let batchJobs = try await walk(#","batch":1,"job_fields":["source"]"#, limit: 2)
        #expect(ids(batchJobs) == batch.map { .number(Double($0)) })
        #expect(batchJobs.allSatisfy { $0.objectValue?.keys.sorted() == ["id", "source", "state"] })
        for refused in [#"{"limit":0}"#, #"{"ids":[1],"after":1}"#, #"{"limit":1,"job_fields":["nope"]}"#] {
            let answer = try await Self.answer(
                #"{"jsonrpc":"2.0","id":1,"method":"job.list","params":\#(refused)}"#, handler)
            #expect(
                answer?.objectValue?["error"]?.objectValue?["code"] == .number(Double(RPCError.invalidParamsCode)),
                "\(refused)")
        }
    }

    /// The whole list (no `limit`) is written job by job, as a page is: its bytes are those of the
    /// list made of all its `JobInfo`s first, filters included. The positions, with a
    /// queue that runs: `QueueDisplayTests`.
    @Test func theWholeListWrittenJobByJobIsTheListOfItsJobInfos() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        let path = try harness.directory.write("src/a.txt", "a")
        for id in 1...6 {
            let add =
                #"{"jsonrpc":"2.0","id":\#(id),"method":"job.add","params":{"source":"\#(path)","destination":"file:///nowhere/"}}"#
            _ = try await Self.answer(add, handler)
        }
        // Held still: a running job's speed changes between two lists. The jobs done by now stay
        // done; the rest are paused.
        _ = try await Self.answer(#"{"jsonrpc":"2.0","id":9,"method":"job.pause","params":{"all":true}}"#, handler)
        let scheduler = harness.scheduler
        var waits = 0
        while waits < 500, !(await scheduler.list(states: [.running], ids: nil).isEmpty) {
            try await Task.sleep(for: .milliseconds(20))
            waits += 1
        }
        #expect(await scheduler.list(states: [.running], ids: nil).isEmpty, "no job runs while the lists are made")
        let fields = try ControlHandler.jobFields(["source", "position"])
        let cases: [(states: [JobState]?, ids: [JobID]?, after: JobID?, fields: JobFields?)] = [
            (nil, nil, nil, nil), ([.paused], nil, nil, nil), ([.completed], nil, nil, nil),
            (nil, [JobID(5), JobID(2)], nil, nil),
            (nil, nil, JobID(2), nil), (nil, nil, nil, fields),
        ]
        for filter in cases {
            let written = await scheduler.listJSON(
                states: filter.states, ids: filter.ids, batch: nil, after: filter.after, only: filter.fields)
            let infos = await scheduler.list(states: filter.states, ids: filter.ids, after: filter.after)
            #expect(written == JobList(jobs: infos).jsonBytes(only: filter.fields), "\(filter)")
        }
    }

    /// An `events.subscribe` read before its connection closed and carried out after: the closed
    /// client's unsubscribe has already run, so the subscription must not be made, or it would stay
    /// for as long as the daemon runs.
    @Test func aSubscribeCarriedOutAfterItsClientClosedLeavesNoSubscriber() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        let subscribe = Array(
            #"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"snapshot":true}}"#.utf8)
        let gone = ControlClientID.next()
        handler.connectionOpened(gone)
        handler.connectionClosed(gone)
        _ = await handler.handle(line: subscribe, client: ControlHandler.Client(id: gone, deliver: { _ in }))
        #expect(harness.events.subscriberCount == 0)

        let open = ControlClientID.next()
        handler.connectionOpened(open)
        _ = await handler.handle(line: subscribe, client: ControlHandler.Client(id: open, deliver: { _ in }))
        #expect(harness.events.subscriberCount == 1, "a connected client does subscribe")
        handler.connectionClosed(open)
        #expect(harness.events.subscriberCount == 0)
    }

    /// The error code of a one-request answer; nil when it succeeded.
    static func errorCode(_ method: String, _ params: String, _ handler: ControlHandler) async throws -> Double? {
        let answer = try await Self.answer(
            #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#, handler)
        guard case .number(let code)? = answer?.objectValue?["error"]?.objectValue?["code"] else { return nil }
        return code
    }

    /// `job.delete` removes files from servers: `states`, `all`, and IDs with `batch` are refused,
    /// not ignored (ignored, `{"batch": B, "states": ["failed"]}` deleted the batch's completed
    /// uploads, and `{"ids": [N], "batch": B}` the whole batch). `batch` alone still deletes it.
    @Test(arguments: [
        #"{"batch":B,"states":["failed"]}"#, #"{"ids":[A],"batch":B}"#, #"{"id":A,"batch":B}"#,
        #"{"id":A,"states":["failed"]}"#, #"{"ids":[A],"states":["completed"]}"#, #"{"all":true}"#,
        #"{"all":true,"states":["failed"]}"#, #"{"id":A,"all":false}"#,
    ])
    func aDeleteRefusesWhatItCannotHonour(params: String) async throws {
        let harness = try await SchedulerHarness()
        let handler = Self.handler(harness)
        var first = AddParams(
            source: try harness.directory.write("src/a.bin", "a"), destination: "file://\(harness.directory.path)/out/")
        first.newBatch = true
        let batch = try await harness.scheduler.add(first).id
        var second = AddParams(
            source: try harness.directory.write("src/b.bin", "b"), destination: "file://\(harness.directory.path)/out/")
        second.batch = batch
        let other = try await harness.scheduler.add(second).id
        #expect(await harness.wait(batch, .completed))
        #expect(await harness.wait(other, .completed))

        let named = params.replacingOccurrences(of: "A", with: "\(other)").replacingOccurrences(
            of: "B", with: "\(batch)")
        #expect(try await Self.errorCode("job.delete", named, handler) == Double(RPCError.invalidParamsCode))
        #expect(harness.fake.snapshot.deleted.isEmpty, "nothing deleted from the server")
        #expect(await harness.job(batch) != nil)
        #expect(await harness.job(other) != nil)

        #expect(try await Self.errorCode("job.delete", #"{"batch":\#(batch)}"#, handler) == nil)
        #expect(harness.fake.snapshot.deleted.sorted() == ["a.bin", "b.bin"])
        // Once the batch's jobs are gone there is nothing to delete, and that is no mistake.
        _ = try await harness.scheduler.clear()
        let emptied = try await Self.answer(
            #"{"jsonrpc":"2.0","id":1,"method":"job.delete","params":{"batch":\#(batch)}}"#, handler)
        #expect(emptied?.objectValue?["result"]?.objectValue?["jobs"] == .array([]), "\(String(describing: emptied))")
        await harness.stop()
    }

    /// `job.get` names jobs by `id` or `ids`; `all`, `batch` and `states`, which it cannot honour,
    /// are refused rather than ignored.
    @Test(arguments: [
        #"{"id":1,"batch":1}"#, #"{"id":1,"all":true}"#, #"{"id":1,"states":["completed"]}"#,
        #"{"ids":[1],"batch":1}"#, #"{"batch":1}"#,
    ])
    func aGetRefusesSelectionsItCannotHonour(params: String) async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = Self.handler(harness)
        _ = try await harness.add("g.bin")
        #expect(try await Self.errorCode("job.get", params, handler) == Double(RPCError.invalidParamsCode))
        #expect(try await Self.errorCode("job.get", #"{"id":1}"#, handler) == nil)
    }
}
