import Foundation
import Testing
import UploadClient
import UploadCore
import UploadWire

/// The Swift client library (`UploadClient`) and the events other apps rely on, against a real
/// daemon: typed calls, events in revision order, idempotent adds across a restart, metadata, a
/// subscriber too slow to keep, and a subscription resumed without a gap.
@Suite(.serialized)
final class ClientLibraryTests {
    let files: URL
    let out: URL

    init() throws {
        files = try TestPaths.scratch("client-files")
        out = try TestPaths.scratch("client-out")
    }

    func makeFiles(_ count: Int, in folder: String) throws -> [String] {
        let directory = files.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try (0..<count).map { index in
            let path = directory.appendingPathComponent("f\(index).txt").path
            try Data("file \(index)\n".utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    func params(_ paths: [String], snapshot: SnapshotMode? = nil) -> [AddParams] {
        paths.map { path in
            var params = AddParams(source: path, destination: out.absoluteString + "/")
            params.snapshot = snapshot
            return params
        }
    }

    @Test func typedCallsEventsAndWait() async throws {
        let daemon = try DaemonProcess(name: "client-basics")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        let hello = try await client.hello()
        #expect(hello.capabilities?.contains("events.snapshot") == true && hello.preparationSteps == ["image"])

        let (jobs, errors) = try await client.add(params(try makeFiles(20, in: "basics") + ["/no/such/file"]))
        #expect(jobs.count == 20 && errors.count == 1 && errors[0].code == RPCError.sourceErrorCode)
        let batch = try #require(jobs.first?.batch)
        #expect(jobs.allSatisfy { $0.batch == batch })
        let ended = try await client.wait(for: jobs.map(\.id), timeout: .seconds(60))
        #expect(ended.count == 20 && ended.allSatisfy { $0.state == .completed })
        #expect(try await client.list(ListParams(batch: batch)).count == 20)
        let one = try await client.get(jobs[0].id)
        #expect(one.history?.isEmpty == false && one.revision >= 3, "added, started, completed: \(one.revision)")
        await #expect(throws: RPCError.self) { try await client.get(JobID(999_999)) }

        var seen: [UploaddClient.Event] = []
        for try await event in client.events(SubscribeParams(ids: [jobs[0].id], snapshot: true)) {
            seen.append(event)
            break
        }
        #expect(seen == [.state(try await client.get(jobs[0].id).withoutHistory)])
    }

    @Test func aClientTokenGivesTheSameJobAcrossARestartAndMetadataComesBack() async throws {
        let daemon = try DaemonProcess(name: "client-token")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        var params = params(try makeFiles(1, in: "token"))[0]
        params.clientToken = "photos-app:IMG_0001"
        params.metadata = ["album": "Trip", "rating": "5"]
        let first = try await client.add(params)
        #expect(first.clientToken == "photos-app:IMG_0001" && first.metadata == ["album": "Trip", "rating": "5"])
        daemon.crash()
        try daemon.start()
        let again = try await UploaddClient(socketPath: daemon.socket).add(params)
        #expect(again.id == first.id, "the same token after a kill -9 gives back the same job")
        #expect(try await UploaddClient(socketPath: daemon.socket).list().count == 1)

        params.clientToken = nil
        params.metadata = Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", "v") })
        let refused = await #expect(throws: RPCError.self) {
            try await UploaddClient(socketPath: daemon.socket).add(params)
        }
        #expect(refused?.code == RPCError.invalidParamsCode && refused?.message.contains("at most 32") == true)
    }

    /// A subscriber that never reads is cut off with `events.overflow`; another one, reading, gets
    /// every change of every job, in revision order, and the daemon stays responsive.
    @Test func aSlowSubscriberIsDroppedWhileAFastOneGetsEveryEventInOrder() async throws {
        let daemon = try DaemonProcess(name: "client-slow", config: "[daemon]\ntransfers = 8\n")
        try daemon.start()
        defer { daemon.stop() }
        let slow = try RawClient(daemon.socket)
        _ = slow.send(line: #"{"jsonrpc":"2.0","id":1,"method":"events.subscribe"}"#)
        let client = UploaddClient(socketPath: daemon.socket)
        let fast = Task { () -> [JobID: [UInt64]] in
            var revisions: [JobID: [UInt64]] = [:]
            var completed = 0
            for try await event in client.events(SubscribeParams(kinds: [.state])) {
                guard case .state(let job) = event else { continue }
                revisions[job.id, default: []].append(job.revision)
                if job.state == .completed { completed += 1 }
                if completed == 4000 { break }
            }
            return revisions
        }
        try await Task.sleep(for: .milliseconds(300))  // both subscribed
        let (jobs, errors) = try await client.add(params(try makeFiles(4000, in: "slow"), snapshot: SnapshotMode.none))
        #expect(jobs.count == 4000 && errors.isEmpty)
        let revisions = try await fast.value
        #expect(revisions.count == 4000)
        #expect(
            revisions.values.allSatisfy { $0 == $0.sorted() && Set($0).count == $0.count },
            "each job's events in revision order")
        #expect(try await client.status().jobs["completed"] == 4000)

        // Everything it was sent, read now, up to the daemon's close.
        var received = 0
        var lastLine: [UInt8] = []
        while case .line(let line) = slow.readLine(timeout: 30) {
            received += line.count + 1
            lastLine = line
        }
        let last = String(decoding: lastLine, as: UTF8.self)
        #expect(last.contains("\"method\":\"events.overflow\""), "the last line: \(last.prefix(300))")
        #expect(received > 4 << 20 && received < 8 << 20, "\(received) bytes before the cut")
        #expect(daemon.log(tail: 100_000).contains("more than 4 MiB of events behind"))
    }

    /// An app that takes its events slower than they come is held to a bounded buffer: the
    /// library stops reading the socket once `eventBuffer` events wait, so the daemon drops the
    /// subscriber as too slow (`SubscriptionOverflow`), where before the library read on and kept
    /// every event in the app's memory.
    @Test func eventsAConsumerDoesNotTakeWaitInABoundedBuffer() async throws {
        let daemon = try DaemonProcess(name: "client-backlog", config: "[daemon]\ntransfers = 8\n")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        let stream = client.events(SubscribeParams(kinds: [.state]))
        try await Task.sleep(for: .milliseconds(300))  // subscribed
        let count = 8000
        let (jobs, _) = try await client.add(params(try makeFiles(count, in: "backlog"), snapshot: SnapshotMode.none))
        #expect(jobs.count == count)
        _ = try await client.wait(for: jobs.map(\.id))
        var taken = 0
        var completed = 0
        var overflowed = false
        do {
            for try await event in stream {
                taken += 1
                if case .state(let job) = event, job.state == .completed { completed += 1 }
                if completed == count { break }
            }
        } catch is SubscriptionOverflow {
            overflowed = true
        }
        print("a consumer \(count * 3) events behind took \(taken) before the cut")
        #expect(overflowed, "every event was kept for the consumer (\(taken) taken)")
        #expect(taken < count * 3, "the consumer got every event")
    }

    /// Only events count toward a subscriber's 4 MiB: not the snapshot answer it is still reading.
    /// `uploadctl wait` of 20,000 jobs was cut off with `events.overflow` at its first event,
    /// because the 8 MiB snapshot before it was unread.
    @Test func aBigSnapshotUnreadIsNotEventsBehind() async throws {
        let daemon = try DaemonProcess(name: "client-snapshot")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        let (jobs, errors) = try await client.add(
            params(try makeFiles(15_000, in: "snapshot"), snapshot: SnapshotMode.none))
        #expect(jobs.count == 15_000 && errors.isEmpty)
        _ = try await client.wait(for: jobs.map(\.id))
        // Under AddressSanitizer the waiter itself may fall behind 15,000 ends and be cut off (it
        // subscribes again); only a warning about the subscriber below counts.
        let warningsBefore = daemon.log(tail: 100_000).components(separatedBy: "events behind").count

        // A snapshot of 15,000 jobs is more than 4 MiB: the subscriber does not read it yet.
        let subscriber = try RawClient(daemon.socket)
        _ = subscriber.send(line: #"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"snapshot":true}}"#)
        try await Task.sleep(for: .milliseconds(300))
        let removed = Array(jobs.prefix(2_000).map(\.id))
        _ = try await client.remove(JobSelection(ids: removed))

        var snapshotBytes = 0
        var removedEvents = 0
        var overflow = false
        // The events may come before the answer: the snapshot is taken after the subscription began.
        while removedEvents < removed.count || snapshotBytes == 0,
            case .line(let line) = subscriber.readLine(timeout: 30)
        {
            let text = String(decoding: line, as: UTF8.self)
            if text.contains(#""result":{"jobs":"#) && !text.contains(#""method":"#) { snapshotBytes = line.count }
            if text.contains(#""method":"job.removed""#) { removedEvents += 1 }
            if text.contains(#""method":"events.overflow""#) { overflow = true }
        }
        #expect(snapshotBytes > 4 << 20, "the snapshot is \(snapshotBytes) bytes")
        #expect(!overflow, "the subscriber was cut off")
        #expect(removedEvents == removed.count)
        #expect(daemon.log(tail: 100_000).components(separatedBy: "events behind").count == warningsBefore)
    }

    /// A waiter the daemon cuts off for reading too slowly (`events.overflow`) connects again and
    /// goes on from a snapshot of the jobs not yet ended: `uploadctl watch` stopped (SIGSTOP)
    /// while 2,000 jobs are paused and resumed three times (more than 4 MiB of events), then
    /// canceled; once it runs again, it sees every job end and exits 1 (not all completed), not 69
    /// (connection lost). The library's `wait`, reading all along, sees the same ends.
    @Test func aWatcherCutOffForReadingTooSlowlyGoesOnFromASnapshot() async throws {
        let daemon = try DaemonProcess(name: "client-overflow")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        // Nothing listens on port 9 of loopback: the jobs wait to retry, and never end by themselves.
        let (jobs, errors) = try await client.add(
            try makeFiles(2_000, in: "overflow").map { AddParams(source: $0, destination: "http://127.0.0.1:9/x/") })
        #expect(jobs.count == 2_000 && errors.isEmpty)
        let ids = jobs.map(\.id)

        let out = files.appendingPathComponent("overflow-watch.txt").path
        let err = files.appendingPathComponent("overflow-watch.err").path
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let watch = ChildProcess()
        watch.executableURL = TestPaths.binaries.appendingPathComponent("uploadctl")
        watch.arguments = ["--socket", daemon.socket, "watch"] + ids.map(\.description)
        watch.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        watch.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try watch.run()
        defer {
            kill(watch.processIdentifier, SIGCONT)
            watch.terminate()
            watch.waitUntilExit()
        }
        // Subscribed once it printed each job's state at the start.
        #expect(
            eventually(timeout: 60) {
                ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").count >= 2_000
            })
        kill(watch.processIdentifier, SIGSTOP)
        let waiter = Task { try await client.wait(for: ids, timeout: .seconds(300)) }
        for _ in 0..<3 {
            _ = try await client.pause(JobSelection(all: true))
            _ = try await client.resume(JobSelection(all: true))
        }
        #expect(
            eventually(timeout: 60) { daemon.log(tail: 100_000).contains("events behind") }, "the watcher was cut off")
        _ = try await client.cancel(JobSelection(all: true))
        kill(watch.processIdentifier, SIGCONT)
        #expect(eventually(timeout: 120) { !watch.isRunning })
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(watch.terminationStatus == 1, "\(stderr.suffix(2_000))")
        #expect(stderr.isEmpty, "\(stderr.suffix(2_000))")
        let ended = try await waiter.value
        #expect(ended.count == 2_000 && ended.allSatisfy { $0.state == .canceled })
    }

    /// `job_fields` narrows the snapshot and every `job.state` to the keys asked for (with `id` and
    /// `state`); a name no job has is refused with the names there are.
    @Test func jobFieldsNarrowTheSnapshotAndTheEvents() async throws {
        let daemon = try DaemonProcess(name: "client-fields")
        try daemon.start()
        defer { daemon.stop() }
        let subscriber = try RawClient(daemon.socket)
        _ = subscriber.send(
            line: #"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"job_fields":["nope"]}}"#)
        guard case .line(let refusal) = subscriber.readLine(timeout: 10) else { throw TestFailure("no answer") }
        let refusalText = String(decoding: refusal, as: UTF8.self)
        #expect(refusalText.contains("-32602") && refusalText.contains("no field 'nope'"), "\(refusalText)")
        #expect(refusalText.contains("bytes_total, client_token"), "names the fields there are")

        let client = UploaddClient(socketPath: daemon.socket)
        let (first, _) = try await client.add(params(try makeFiles(1, in: "fields-before")))
        _ = try await client.wait(for: first.map(\.id))
        _ = subscriber.send(
            line:
                #"{"jsonrpc":"2.0","id":2,"method":"events.subscribe","params":{"snapshot":true,"job_fields":["error"]}}"#
        )
        var keysSeen: [[String]] = []
        var ends = 0
        var added: [JobInfo] = []
        while ends < 2, case .line(let line) = subscriber.readLine(timeout: 30) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            if let result = object["result"] as? [String: Any], let jobs = result["jobs"] as? [[String: Any]] {
                keysSeen += jobs.map { $0.keys.sorted() }
                (added, _) = try await client.add(params(try makeFiles(2, in: "fields-after")))
            } else if object["method"] as? String == "job.state", let job = object["params"] as? [String: Any] {
                keysSeen.append(job.keys.sorted())
                if job["state"] as? String == "completed" { ends += 1 }
            }
        }
        #expect(added.count == 2 && ends >= 2)
        #expect(keysSeen.count >= 5, "the snapshot's job, then two jobs queued, running, completed")
        #expect(Set(keysSeen.map { $0 }) == [["error", "id", "state"]])
    }

    /// An app that loses its connection subscribes again with `snapshot` and ends up knowing the
    /// final state of every job, though they kept changing while it was away.
    @Test func aResumedSubscriptionMissesNothing() async throws {
        let daemon = try DaemonProcess(name: "client-resume", config: "[daemon]\ntransfers = 2\nrate_limit = 200K\n")
        try daemon.start()
        defer { daemon.stop() }
        let client = UploaddClient(socketPath: daemon.socket)
        let paths = try (0..<12).map { index -> String in
            let path = files.appendingPathComponent("resume-\(index).bin").path
            try makeRandomFile(at: path, size: 100_000)
            return path
        }
        // Over HTTP, where rate_limit holds them back: they are still changing while the app is away.
        let nginx = try TestServers.load().nginxURL
        let (jobs, _) = try await client.add(
            paths.map { AddParams(source: $0, destination: "\(nginx)/dav/client-resume/") })
        #expect(jobs.count == 12)
        let batch = try #require(jobs.first?.batch)
        var known: [JobID: JobInfo] = [:]
        // Away after the first few events, while the jobs go on.
        for try await event in client.events(SubscribeParams(batch: batch, snapshot: true)) {
            if case .state(let job) = event { known[job.id] = job }
            if known.count >= 3 { break }
        }
        try await Task.sleep(for: .seconds(1))
        let changedMeanwhile = try await client.list(ListParams(batch: batch)).contains { job in
            job.revision > known[job.id]?.revision ?? 0
        }
        #expect(changedMeanwhile, "the jobs changed while the app was away")
        for try await event in client.events(SubscribeParams(batch: batch, snapshot: true)) {
            if case .state(let job) = event, job.revision >= known[job.id]?.revision ?? 0 { known[job.id] = job }
            if known.count == 12 && known.values.allSatisfy({ $0.state == .completed }) { break }
        }
        #expect(known.count == 12 && known.values.allSatisfy { $0.state == .completed })
    }
}

extension JobInfo {
    /// As events and lists show it: without the history `job.get` adds.
    var withoutHistory: JobInfo {
        var job = self
        job.history = nil
        return job
    }
}
