import Foundation
import Synchronization
import Testing
import UploadWire

@testable import UploadControl

/// Whole command lines against a fake daemon: what is sent, what is printed, how it exits.
@Suite struct CommandRunTests {
    private func run(_ arguments: [String], daemon: FakeDaemon, output: CapturedOutput) -> ExitCode {
        UploadControlMain.run(
            arguments: arguments, environment: ["UPLOADD_SOCKET": daemon.socketPath], workingDirectory: "/work",
            output: output.streams)
    }

    /// The first file goes alone and starts the batch; the others follow together, in it.
    @Test func addSendsOneBatchAndReportsEachFailure() throws {
        let daemon = try FakeDaemon { line in
            let answers = Wire.requests(line).enumerated().map { index, request -> String in
                let source = request.params?.objectValue?["source"]
                if source == .string("/work/b.bad") {
                    return Wire.error(id: request.id, RPCError(code: -32003, message: "cannot open /work/b.bad"))
                }
                return Wire.result(id: request.id, sampleJob(id: UInt64(10 + index), state: .queued))
            }
            return ["[" + answers.joined(separator: ",") + "]"]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        let status = run(
            ["add", "a.mp4", "b.bad", "/abs/c.mp4", "--to", "https://h/", "--header", "A: 1"], daemon: daemon,
            output: output)
        #expect(status == .failure)
        #expect(output.standardOutput == "10\n11\n")
        #expect(output.standardError == "uploadctl: /work/b.bad: cannot open /work/b.bad\n")
        #expect(daemon.requestLines.count == 2)
        let requests = daemon.requestLines.flatMap { Wire.requests($0) }
        #expect(requests.map(\.method) == ["job.add", "job.add", "job.add"])
        #expect(requests[0].params?.objectValue?["new_batch"] == .bool(true))
        #expect(requests[1].params?.objectValue?["batch"] == .number(10))
        #expect(requests[2].params?.objectValue?["batch"] == .number(10))
        let sources = requests.compactMap { $0.params?.objectValue?["source"] }
        #expect(sources == [.string("/work/a.mp4"), .string("/work/b.bad"), .string("/abs/c.mp4")])
        #expect(requests[0].params?.objectValue?["headers"] == .array([.string("A: 1")]))
        // Only the ID and the batch of each job come back (the ID and state always do).
        #expect(requests.allSatisfy { $0.params?.objectValue?["job_fields"] == .array([.string("batch")]) })
        #expect(requests[1].params?.objectValue?["headers"] == .array([.string("A: 1")]), "the template's keys")
        #expect(requests[1].params?.objectValue?["new_batch"] == nil)
        #expect(daemon.refusedSourcesLines == 1, "a daemon older than sources refused the first request")
    }

    /// To a daemon that takes `sources`, a request's files go in one `job.add`: the template once,
    /// each file by its path (with its own destination only when it differs), one answer of jobs
    /// and errors by place.
    @Test func addSendsEachRequestsFilesAsOneAddOfSources() throws {
        let nextID = Mutex<UInt64>(20)
        let daemon = try FakeDaemon(speaksSources: true) { line in
            let request = Wire.requests(line)[0]
            guard case .array(let sources)? = request.params?.objectValue?["sources"] else {
                return [Wire.error(id: request.id, RPCError.invalidParams("no sources"))]
            }
            var jobs: [JobInfo] = []
            var errors: [JobFailure] = []
            for (index, source) in sources.enumerated() {
                let path = source.objectValue?["source"] ?? source
                if path == .string("/work/b.bad") {
                    errors.append(
                        JobFailure(
                            source: "/work/b.bad", index: index,
                            error: RPCError(code: -32003, message: "cannot open /work/b.bad")))
                    continue
                }
                jobs.append(nextQueuedJob(nextID, batch: 20))
            }
            return [Wire.result(id: request.id, JobList(jobs: jobs, errors: errors))]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        let status = run(
            ["add", "a.mp4", "b.bad", "/abs/c.mp4", "d.mp4", "--to", "https://h/", "--header", "A: 1"],
            daemon: daemon, output: output)
        #expect(status == .failure)
        #expect(output.standardOutput == "20\n21\n22\n")
        #expect(output.standardError == "uploadctl: /work/b.bad: cannot open /work/b.bad\n")
        let requests = daemon.requestLines.flatMap { Wire.requests($0) }
        #expect(requests.map(\.method) == ["job.add", "job.add"])
        let first = try #require(requests.first?.params?.objectValue)
        #expect(first["sources"] == .array([.string("/work/a.mp4")]))
        #expect(first["new_batch"] == .bool(true))
        #expect(first["source"] == nil)
        #expect(first["destination"] == .string("https://h/"))
        let second = try #require(requests.last?.params?.objectValue)
        #expect(second["sources"] == .array([.string("/work/b.bad"), .string("/abs/c.mp4"), .string("/work/d.mp4")]))
        #expect(second["batch"] == .number(20))
        #expect(second["headers"] == .array([.string("A: 1")]))
        #expect(second["job_fields"] == .array([.string("batch")]))
        #expect(daemon.refusedSourcesLines == 0)
    }

    /// A client token names one job: such an add goes as a plain `job.add`, not as `sources`,
    /// which refuses it.
    @Test func anAddWithAClientTokenGoesAsOneFile() throws {
        let daemon = try FakeDaemon(speaksSources: true) { line in
            let request = Wire.requests(line)[0]
            guard request.params?.objectValue?["sources"] == nil else {
                return [Wire.error(id: request.id, RPCError.invalidParams("a client_token names one job"))]
            }
            return [Wire.result(id: request.id, sampleJob(id: 5, state: .queued))]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(
            run(["add", "a.bin", "--to", "https://h/", "--client-token", "t1"], daemon: daemon, output: output)
                == .success)
        #expect(output.standardOutput == "5\n")
        let params = daemon.requestLines.flatMap { Wire.requests($0) }.map { $0.params?.objectValue }
        #expect(params.map { $0?["client_token"] } == [.string("t1")])
        #expect(params.map { $0?["source"] } == [.string("/work/a.bin")])
    }

    /// Files whose `sources` would not fit one line go in several requests, each a line of its own
    /// and within the daemon's limit, in the order given.
    @Test func longPathsGoInSeveralRequestsThatEachFitALine() throws {
        let nextID = Mutex<UInt64>(1)
        let daemon = try FakeDaemon(speaksSources: true) { line in
            let request = Wire.requests(line)[0]
            guard line.utf8.count < ControlProtocol.maxLineLength, !line.hasPrefix("["),
                case .array(let sources)? = request.params?.objectValue?["sources"]
            else { return [Wire.error(id: request.id, RPCError.invalidRequest("too long, or not one add"))] }
            let jobs = sources.map { _ in nextQueuedJob(nextID, batch: 1) }
            return [Wire.result(id: request.id, JobList(jobs: jobs))]
        }
        defer { daemon.stop() }
        let folder = "/" + String(repeating: "d", count: 3000)
        let files = (0..<400).map { "\(folder)/f\($0)" }
        let output = CapturedOutput()
        #expect(run(["add"] + files + ["--to", "https://h/"], daemon: daemon, output: output) == .success)
        #expect(output.standardError == "")
        #expect(output.standardOutput == (1...400).map { "\($0)\n" }.joined())
        let sources = daemon.requestLines.flatMap(Wire.requests).flatMap { request -> [JSONValue] in
            guard case .array(let sources)? = request.params?.objectValue?["sources"] else { return [] }
            return sources
        }
        #expect(sources == files.map { .string($0) })
        #expect(daemon.requestLines.count > 4, "more requests than the request sizes alone make")
    }

    /// A long add starts small, so that the first uploads start after a few copies, and sends its
    /// next request before the answer to the one before: the daemon copies one while it syncs the
    /// other. IDs are printed in the order given all the same.
    @Test(.timeLimit(.minutes(1))) func addStartsWithSmallRequestsAndKeepsTwoInFlight() throws {
        let state = Mutex<(nextID: UInt64, lines: Int, held: String?)>((10, 0, nil))
        let daemon = try FakeDaemon { line in
            state.withLock { state in
                let answers = Wire.requests(line).map { request -> String in
                    defer { state.nextID += 1 }
                    return Wire.result(id: request.id, sampleJob(id: state.nextID, state: .queued))
                }
                let answer = answers.count == 1 ? answers[0] : "[" + answers.joined(separator: ",") + "]"
                state.lines += 1
                // The second request's answer waits for the third request: an add that waited
                // for it before sending the next would never end (the time limit fails it).
                switch state.lines {
                case 2:
                    state.held = answer
                    return []
                case 3: return [state.held!, answer]
                default: return [answer]
                }
            }
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        let files = (0..<800).map { "f\($0).bin" }
        #expect(run(["add"] + files + ["--to", "https://h/"], daemon: daemon, output: output) == .success)
        let sizes = daemon.requestLines.map { Wire.requests($0).count }
        #expect(sizes == [1, 50, 200, 500, 49])
        #expect(output.standardOutput == (10..<810).map { "\($0)\n" }.joined())
        let sources = daemon.requestLines.flatMap(Wire.requests).compactMap { $0.params?.objectValue?["source"] }
        #expect(sources == files.map { .string("/work/\($0)") })
    }

    @Test func addTakesWholeJobsWhenAnOlderDaemonRefusesTheFieldFilter() throws {
        let daemon = try FakeDaemon { line in
            let answers = Wire.requests(line).map { request -> String in
                guard request.params?.objectValue?["job_fields"] == nil else {
                    return Wire.error(id: request.id, RPCError.invalidParams("unknown key 'job_fields'"))
                }
                return Wire.result(id: request.id, sampleJob(id: 30, state: .queued))
            }
            return [answers.count == 1 ? answers[0] : "[" + answers.joined(separator: ",") + "]"]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["add", "a.bin", "b.bin", "--to", "https://h/"], daemon: daemon, output: output) == .success)
        #expect(output.standardOutput == "30\n30\n")
        #expect(output.standardError == "")
        let requests = daemon.requestLines.flatMap { Wire.requests($0) }
        #expect(requests.map { $0.params?.objectValue?["job_fields"] != nil } == [true, false, false])
    }

    @Test func addWithJSONReportsEachFailureWithItsErrorCode() throws {
        let daemon = try FakeDaemon { line in
            let answers = Wire.requests(line).map { request -> String in
                if request.params?.objectValue?["source"] == .string("/work/full.bin") {
                    return Wire.error(id: request.id, RPCError(code: RPCError.noSpaceCode, message: "no space left"))
                }
                return Wire.result(id: request.id, sampleJob(id: 7, state: .queued))
            }
            return ["[" + answers.joined(separator: ",") + "]"]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        let arguments = ["--json", "add", "ok.bin", "full.bin", "--to", "file:///out/"]
        let status = run(arguments, daemon: daemon, output: output)
        #expect(status == .failure)
        let printed = try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any]
        let errors = printed?["errors"] as? [[String: Any]]
        #expect(errors?.count == 1)
        #expect(errors?.first?["source"] as? String == "/work/full.bin")
        #expect(errors?.first?["code"] as? Int == RPCError.noSpaceCode)
        #expect(errors?.first?["message"] as? String == "no space left")
        let jobs = try JSONCoding.decoder.decode(JobList.self, from: Data(output.standardOutput.utf8)).jobs
        #expect(jobs.map(\.id) == [JobID(7)])
        let requests = daemon.requestLines.flatMap { Wire.requests($0) }
        #expect(requests.allSatisfy { $0.params?.objectValue?["job_fields"] == nil }, "--json prints jobs whole")
        #expect(output.standardError == "uploadctl: /work/full.bin: no space left\n")
    }

    @Test func waitExitsWhenAllJobsEndAndNamesTheFailures() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            switch request.method {
            case "events.subscribe":
                var failed = sampleJob(id: 2, state: .failed)
                failed.error = JobError(code: "http", message: "server answered 500")
                return [
                    // A stale event, older than the snapshot that answers: it must not count.
                    Wire.notification(.state, sampleJob(id: 2, state: .completed, updatedAt: 1_600_000_000)),
                    Wire.result(
                        id: request.id,
                        JobList(jobs: [sampleJob(id: 1, state: .running), sampleJob(id: 2, state: .running)])),
                    Wire.notification(
                        .progress,
                        JobProgressEvent(id: JobID(1), bytesTotal: 9, bytesSent: 5, bytesAcked: 5, speed: 1, eta: 4)),
                    Wire.notification(.state, sampleJob(id: 1, state: .completed)),
                    Wire.notification(.state, failed),
                ]
            default:
                return [Wire.error(id: request.id, RPCError.methodNotFound(request.method))]
            }
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "1", "2"], daemon: daemon, output: output) == .failure)
        #expect(output.standardError == "uploadctl: job 2 failed: server answered 500\n")
        #expect(output.standardOutput == "")
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map(\.method) == ["events.subscribe"], "one request: the snapshot answers it")
        #expect(
            requests[0].params
                == .object([
                    "ids": .array([.number(1), .number(2)]),
                    "kinds": .array([.string("job.state"), .string("job.removed")]),
                    // Without bars: only ends, and queued (a job retried after its end).
                    "states": .array(["completed", "failed", "canceled", "queued"].map { .string($0) }),
                    "snapshot": .bool(true),
                    // Without --json: only what the report needs of each job.
                    "job_fields": .array(JobStatus.fields.map { .string($0) }),
                ]))
    }

    /// Cut off for reading too slowly, a waiter connects again and subscribes with a snapshot to
    /// the jobs not yet ended; one the snapshot lacks was removed while it was away.
    @Test func aWaitCutOffByEventsOverflowSubscribesAgainToTheJobsNotEnded() throws {
        // Job 2 ended and job 3 was removed meanwhile: no event says so, only the snapshot.
        let daemon = try FakeDaemon.cuttingOffTheFirstSubscriber(
            snapshot: (1...3).map { sampleJob(id: $0, state: .running) },
            events: [sampleJob(id: 1, state: .completed)], then: [sampleJob(id: 2, state: .completed)])
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "1", "2", "3"], daemon: daemon, output: output) == .failure)
        #expect(output.standardError == "uploadctl: job 3 was removed before it ended\n")
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map(\.method) == ["events.subscribe", "events.subscribe"])
        #expect(
            requests.map { $0.params?.objectValue?["ids"] } == [
                .array([1, 2, 3].map { .number($0) }), .array([2, 3].map { .number($0) }),
            ])
        #expect(requests.allSatisfy { $0.params?.objectValue?["snapshot"] == .bool(true) })
    }

    /// `watch` prints what it missed while cut off, from the new snapshot, as `job.state` lines.
    @Test func watchPrintsTheStatesItMissedWhileCutOff() throws {
        let daemon = try FakeDaemon.cuttingOffTheFirstSubscriber(
            snapshot: [sampleJob(id: 5, state: .running)], then: [sampleJob(id: 5, state: .completed)])
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["--json", "watch", "5"], daemon: daemon, output: output) == .success)
        let lines = output.standardOutput.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(#""state":"completed""#), "\(output.standardOutput)")
    }

    @Test func waitAsksForWholeJobsWithJSONAndNarrowedOnesWithout() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 3, state: .completed)]))]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["--json", "wait", "3"], daemon: daemon, output: output) == .success)
        #expect(output.standardOutput.contains("\"source\""), "--json prints the jobs whole")
        #expect(run(["wait", "3"], daemon: daemon, output: CapturedOutput()) == .success)
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map { $0.params?.objectValue?["job_fields"] != nil } == [false, true])
    }

    @Test func waitTakesWholeJobsWhenAnOlderDaemonRefusesTheFieldFilter() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            guard request.params?.objectValue?["job_fields"] == nil else {
                return [Wire.error(id: request.id, RPCError.invalidParams("unknown key 'job_fields'"))]
            }
            return [
                Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 4, state: .running)])),
                Wire.notification(.state, sampleJob(id: 4, state: .failed)),
            ]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "4"], daemon: daemon, output: output) == .failure)
        #expect(output.standardError.hasPrefix("uploadctl: job 4 failed: "))
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map { $0.params?.objectValue?["job_fields"] != nil } == [true, false])
        #expect(requests.map { $0.params?.objectValue?["states"] != nil } == [true, true], "states stays")
    }

    @Test func waitSubscribesToEveryStateWhenAnOlderDaemonRefusesTheStatesFilter() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            // A daemon older still: it knows neither key, and names the first in order.
            if request.params?.objectValue?["job_fields"] != nil {
                return [Wire.error(id: request.id, RPCError.invalidParams("unknown key 'job_fields'"))]
            }
            guard request.params?.objectValue?["states"] == nil else {
                return [Wire.error(id: request.id, RPCError.invalidParams("unknown key 'states'"))]
            }
            return [
                Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 4, state: .running)])),
                Wire.notification(.state, sampleJob(id: 4, state: .completed)),
            ]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "4"], daemon: daemon, output: output) == .success)
        #expect(output.standardError == "")
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map(\.method) == ["events.subscribe", "events.subscribe", "events.subscribe"])
        #expect(requests.map { $0.params?.objectValue?["states"] != nil } == [true, true, false])
    }

    @Test func aWaitThatTimesOutAsksWhatTheUnfinishedJobsAreDoing() throws {
        // The narrowed subscription never says "paused": the answer to job.list does.
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            switch request.method {
            case "events.subscribe":
                return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 6, state: .running)]))]
            default:
                #expect(request.params == .object(["ids": .array([.number(6)])]))
                return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 6, state: .paused)]))]
            }
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "6", "--timeout", "0.2"], daemon: daemon, output: output) == .failure)
        #expect(daemon.requestLines.flatMap(Wire.requests).map(\.method) == ["events.subscribe", "job.list"])
        #expect(output.standardError.contains("job 6 is paused and will not end by itself: uploadctl resume 6"))
    }

    @Test func waitIgnoresEventsOlderThanTheCurrentStateAndTimesOut() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [
                Wire.notification(.state, sampleJob(id: 5, state: .completed, updatedAt: 1_600_000_000)),
                Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 5, state: .running)])),
            ]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "5", "--timeout", "0.2"], daemon: daemon, output: output) == .failure)
        #expect(output.standardError == "uploadctl: timed out after 0.2s; still waiting for job 5\n")
    }

    @Test func waitCountsAnEndThatArrivedBeforeTheCurrentStateInTheSameSecond() throws {
        // The daemon may send a job's last event while it is still answering with the state before.
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [
                Wire.notification(.state, sampleJob(id: 5, state: .completed)),
                Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 5, state: .running)])),
            ]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "5", "--timeout", "5"], daemon: daemon, output: output) == .success)
        #expect(output.standardError == "")
    }

    @Test func waitSucceedsWhenAlreadyCompletedAndSendsOneRequestForManyIDs() throws {
        let ids = (1...2000).map { UInt64($0) }
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [Wire.result(id: request.id, JobList(jobs: ids.map { sampleJob(id: $0, state: .completed) }))]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait"] + ids.map(String.init), daemon: daemon, output: output) == .success)
        #expect(daemon.requestLines.count == 1)
    }

    @Test func droppedConnectionWhileWaitingIsUnavailable() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 1)])), FakeDaemon.hangUp]
        }
        defer { daemon.stop() }
        let output = CapturedOutput()
        #expect(run(["wait", "1"], daemon: daemon, output: output) == .unavailable)
        #expect(
            output.standardError == """
                uploadctl: lost the connection to uploadd at \(daemon.socketPath): the daemon closed the connection

                """)
    }

    @Test func unreachableDaemonExits69WithAHint() {
        let output = CapturedOutput()
        let status = UploadControlMain.run(
            arguments: ["--socket", "/nonexistent/control.sock", "status"], environment: [:], workingDirectory: "/",
            output: output.streams)
        #expect(status == .unavailable)
        #expect(
            output.standardError == """
                uploadctl: cannot reach uploadd at /nonexistent/control.sock: No such file or directory; \
                is it running? (systemctl --user start uploadd.socket)

                """)
    }

    @Test func usageErrorExits64WithTheCommandsHint() {
        let output = CapturedOutput()
        let status = UploadControlMain.run(
            arguments: ["add", "x"], environment: [:], workingDirectory: "/", output: output.streams)
        #expect(status == .usage)
        #expect(
            output.standardError == "uploadctl: missing --to DEST: say where to upload\nTry 'uploadctl add --help'.\n")
        #expect(output.standardOutput.isEmpty)
    }

    @Test func actionsPrintOneLinePerJobOrTheJSONResult() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [
                Wire.result(
                    id: request.id, JobList(jobs: [sampleJob(id: 3, state: .paused), sampleJob(id: 4, state: .paused)]))
            ]
        }
        defer { daemon.stop() }
        let text = CapturedOutput()
        #expect(run(["pause", "3", "4"], daemon: daemon, output: text) == .success)
        #expect(text.standardOutput == "3 paused\n4 paused\n")
        let json = CapturedOutput()
        #expect(run(["pause", "--all", "--json"], daemon: daemon, output: json) == .success)
        let decoded = try JSONCoding.decoder.decode(JobList.self, from: Data(json.standardOutput.utf8))
        #expect(decoded.jobs.map(\.id) == [JobID(3), JobID(4)])
        #expect(json.standardOutput.filter { $0 == "\n" }.count == 1)
        #expect(Wire.requests(daemon.requestLines[1])[0].params == .object(["all": .bool(true)]))
    }

    /// A daemon that answers two jobs a page, whatever `limit` asks (as one that caps it would).
    private static func pagingDaemon(jobs count: UInt64) throws -> FakeDaemon {
        try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            let params = request.params?.objectValue ?? [:]
            guard params["limit"] != nil else {
                return [Wire.result(id: request.id, JobList(jobs: (1...count).map { sampleJob(id: $0) }))]
            }
            var after: UInt64 = 0
            if case .number(let number)? = params["after"] { after = UInt64(number) }
            let page = Array((after + 1...count).prefix(2))
            let next = page.last.flatMap { $0 < count ? JobID($0) : nil }
            return [Wire.result(id: request.id, JobList(jobs: page.map { sampleJob(id: $0) }, next: next))]
        }
    }

    /// `list` asks for pages and follows `next` to the last one; the table and `--json` hold every job.
    @Test func listFollowsThePagesToTheLast() throws {
        let daemon = try Self.pagingDaemon(jobs: 5)
        defer { daemon.stop() }
        let text = CapturedOutput()
        #expect(run(["list", "--state", "running"], daemon: daemon, output: text) == .success)
        #expect(text.standardOutput.split(separator: "\n").count == 6, "a header and five jobs")
        let requests = daemon.requestLines.flatMap { Wire.requests($0) }.map { $0.params?.objectValue ?? [:] }
        #expect(requests.map { $0["after"] } == [nil, .number(2), .number(4)])
        #expect(requests.allSatisfy { $0["limit"] == .number(Double(ListParams.maxLimit)) })
        #expect(requests.allSatisfy { $0["states"] == .array([.string("running")]) })
        let json = CapturedOutput()
        #expect(run(["--json", "list"], daemon: daemon, output: json) == .success)
        let decoded = try JSONCoding.decoder.decode(JobList.self, from: Data(json.standardOutput.utf8))
        #expect(decoded.jobs.map(\.id.rawValue) == [1, 2, 3, 4, 5])
        #expect(decoded.next == nil)
    }

    /// A daemon older than pages refuses `limit`: the whole list in one answer then.
    @Test func listAsksAnOlderDaemonForEveryJobAtOnce() throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            guard request.params?.objectValue?["limit"] == nil else {
                return [Wire.error(id: request.id, RPCError.invalidParams("unknown key 'limit'"))]
            }
            return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 1), sampleJob(id: 2)]))]
        }
        defer { daemon.stop() }
        let json = CapturedOutput()
        #expect(run(["--json", "list"], daemon: daemon, output: json) == .success)
        let decoded = try JSONCoding.decoder.decode(JobList.self, from: Data(json.standardOutput.utf8))
        #expect(decoded.jobs.map(\.id.rawValue) == [1, 2])
        #expect(daemon.requestLines.count == 2)
    }
}
