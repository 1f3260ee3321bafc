import Foundation
import Synchronization
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon
@testable import UploadPlatform

@Suite("Scheduler: add, clear, delete, restart")
struct SchedulerCommandTests {
    @Test func aMissingSourceIsRefusedWithoutUsingAnID() async throws {
        let harness = try await SchedulerHarness()
        let path = harness.directory.path + "/missing.bin"
        let error = await #expect(throws: RPCError.self) {
            try await harness.scheduler.add(AddParams(source: path, destination: "file:///tmp/out/"))
        }
        #expect(error?.code == RPCError.sourceErrorCode)
        #expect(error?.message == "\(path) does not exist")
        #expect(try await harness.add("real.bin") == JobID(1))
        await harness.stop()
    }

    /// Orphaned copies are swept when the scheduler is made, before the socket serves anyone. When
    /// the sweep ran in start(), an add that socket activation had queued could make its copy
    /// while start() waited for the actor, and lose it to the sweep (seen in SystemdTests).
    @Test func orphansAreSweptBeforeAnyAddNotAtStart() async throws {
        let directory = try TemporaryDirectory("uploadd-scheduler")
        try FileOps.makeDirectory(directory.path + "/cache/snapshots")
        let orphan = try directory.write("cache/snapshots/77", "left by a crash")
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(), fake: FakeTransfer(defaultStep: .hold), reusing: directory, start: false)
        #expect(!FileManager.default.fileExists(atPath: orphan), "a real orphan goes before anything is served")
        let id = try await harness.add("early.bin", snapshot: .copy)
        let copy = try #require(await harness.scheduler.store.jobs[id]?.snapshot)
        #expect(copy.isCached)
        await harness.scheduler.start()
        #expect(FileManager.default.fileExists(atPath: copy.path), "the copy of a job added before start() is kept")
        await harness.stop()
    }

    /// After a downgrade, the journal holds jobs of a newer uploadd that this one cannot read:
    /// they are left alone, and so are the cached files they may own (their copy and prepared
    /// files by name, and every pack, which none of their holders may delete). A file of no job
    /// still goes.
    @Test func theFilesOfJobsANewerUploaddWroteStayAndOrphansStillGo() async throws {
        let directory = try TemporaryDirectory("uploadd-scheduler")
        for folder in ["state", "cache", "cache/snapshots", "cache/prepared"] {
            try FileOps.makeDirectory(directory.path + "/" + folder)
        }
        var job = Job(
            id: JobID(5), spec: JobSpec(source: "/home/user/a.bin", destination: "https://example.com/up/"),
            createdAt: Date())
        job.resolvedProtocol = .tus
        job.snapshot = SourceSnapshot(
            kind: .copy, path: directory.path + "/cache/snapshots/5", size: 13, device: 1, inode: 2,
            modificationTimeNanoseconds: 3)
        // The protocol renamed inside the record's payload (after the 9 bytes of its frame), as a
        // newer daemon with a protocol this one does not know would have written it.
        let payload = Array(JournalFormat.encode([.job(job)]).dropFirst(9))
        let renamed = try #require(Self.replacingOnce(Array("tus".utf8), with: Array("xyz".utf8), in: payload))
        let foreign = ForeignRecord(type: JournalRecord.jobType, payload: renamed, jobID: job.id)
        _ = try directory.write(
            "state/journal", bytes: JournalFormat.header() + JournalFormat.encode([.foreign(foreign), .nextID(6)]))
        let copy = try directory.write("cache/snapshots/5", "the only one")
        let prepared = try directory.write("cache/prepared/5-0a1b2c", "prepared")
        let partial = try directory.write("cache/prepared/5-0a1b2c.0.partial", "half")
        let pack = try directory.write("cache/snapshots/pack-4", "jobs 4 and 5, perhaps")
        let orphans = [
            try directory.write("cache/snapshots/77", "left by a crash"),
            try directory.write("cache/prepared/77-0a1b2c", "left by a crash"),
        ]

        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(), fake: FakeTransfer(defaultStep: .hold), reusing: directory, start: false)
        #expect(harness.replay.state.foreignJobs[job.id] != nil, "job 5 is one this daemon cannot read")
        #expect(harness.replay.state.jobs.isEmpty)
        for kept in [copy, prepared, partial, pack] {
            #expect(FileManager.default.fileExists(atPath: kept), "\(kept) may be job 5's")
        }
        for orphan in orphans {
            #expect(!FileManager.default.fileExists(atPath: orphan), "\(orphan) is no job's")
        }
        #expect(!harness.snapshots.packs.release(pack, by: JobID(6)), "no readable job's end deletes the pack")
        await harness.stop()
    }

    static func replacingOnce(_ old: [UInt8], with new: [UInt8], in bytes: [UInt8]) -> [UInt8]? {
        let starts = (0...(bytes.count - old.count)).filter { Array(bytes[$0..<($0 + old.count)]) == old }
        guard starts.count == 1 else { return nil }
        var result = bytes
        result.replaceSubrange(starts[0]..<(starts[0] + old.count), with: new)
        return result
    }

    /// A kill after a job's completion is on disk but before its copy is deleted: the next start
    /// deletes the copy.
    @Test func aCompletedJobsLeftoverCopyGoesAtTheNextStart() async throws {
        let first = try await SchedulerHarness(config: SchedulerHarness.config())
        let id = try await first.add("done.bin", snapshot: .copy)
        #expect(await first.wait(id, .completed))
        let copy = try #require(await first.scheduler.store.jobs[id]?.snapshot)
        #expect(copy.isCached)
        _ = try first.directory.write("cache/snapshots/" + (copy.path as NSString).lastPathComponent, "left behind")
        await first.stop()

        let second = try await SchedulerHarness(
            config: SchedulerHarness.config(), reusing: first.directory, start: false)
        #expect(!FileManager.default.fileExists(atPath: copy.path))
        #expect(await second.state(id) == .completed)
        await second.stop()
    }

    /// `batch` names a batch a `new_batch` job started, before or after a restart; any other job's
    /// ID was taken before (the batch then had a member that was never its start).
    @Test func onlyAStartedBatchCanBeJoinedAcrossARestart() async throws {
        let first = try await SchedulerHarness(
            config: SchedulerHarness.config(), fake: FakeTransfer(defaultStep: .hold))
        func params(_ name: String) throws -> AddParams {
            AddParams(
                source: try first.directory.write("src/" + name, name),
                destination: "file://\(first.directory.path)/out/")
        }
        let plain = try await first.scheduler.add(try params("plain.bin")).id
        var starting = try params("start.bin")
        starting.newBatch = true
        let batch = try await first.scheduler.add(starting).id
        var joining = try params("join.bin")
        joining.batch = plain
        let refusal = await #expect(throws: RPCError.self) { try await first.scheduler.add(joining) }
        #expect(refusal?.code == RPCError.invalidParamsCode && refusal?.message.contains("no batch \(plain)") == true)
        joining.batch = batch
        #expect(try await first.scheduler.add(joining).batch == batch)
        await first.stop()

        let second = try await SchedulerHarness(
            config: SchedulerHarness.config(), fake: FakeTransfer(defaultStep: .hold), reusing: first.directory)
        var later = AddParams(
            source: try second.directory.write("src/later.bin", "later"),
            destination: "file://\(second.directory.path)/out/")
        later.batch = batch
        #expect(try await second.scheduler.add(later).batch == batch)
        later.batch = plain
        await #expect(throws: RPCError.self) { try await second.scheduler.add(later) }
        await second.stop()
    }

    @Test func badParamsAreInvalidParams() async throws {
        let harness = try await SchedulerHarness()
        let error = await #expect(throws: RPCError.self) {
            try await harness.scheduler.add(AddParams(source: "relative.bin", destination: "file:///tmp/out/"))
        }
        #expect(error?.code == RPCError.invalidParamsCode)
        await harness.stop()
    }

    @Test func theSameClientTokenGivesTheSameJob() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(fake: fake)
        let first = try await harness.add("a.bin", token: "tok")
        let second = try await harness.add("a.bin", token: "tok")
        #expect(first == second)
        #expect(await harness.scheduler.list(states: nil, ids: nil).count == 1)
        await harness.stop()
    }

    @Test func clearRemovesTerminalJobsAndTheirSnapshots() async throws {
        let fake = FakeTransfer()
        fake.script("bad", [.fail(SchedulerAttemptTests.forbidden)])
        fake.script("held", [.hold])
        fake.script("gone", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 4), fake: fake)
        let ok = try await harness.add("ok")
        let bad = try await harness.add("bad")
        let held = try await harness.add("held")
        let gone = try await harness.add("gone")
        #expect(await harness.wait(ok, .completed))
        #expect(await harness.wait(bad, .failed))
        #expect(await harness.waitUntilUploading("held"))
        _ = try await harness.perform(.pause, held)
        _ = try await harness.perform(.cancel, gone)
        #expect(harness.snapshotExists(bad))
        #expect(harness.snapshotExists(held))

        let cleared = try await harness.scheduler.clear()
        #expect(cleared.map(\.id) == [ok, bad, gone])
        #expect(await harness.scheduler.list(states: nil, ids: nil).map(\.id) == [held])
        #expect(!harness.snapshotExists(bad))
        #expect(harness.snapshotExists(held), "clear leaves unfinished jobs alone")
        let error = await #expect(throws: RPCError.self) { try await harness.scheduler.get(ok) }
        #expect(error?.code == RPCError.jobNotFoundCode)
        await harness.stop()

        // Cleared for good: not back after a restart, and their IDs are not handed out again.
        let again = try await SchedulerHarness(reusing: harness.directory, start: false)
        let listed = await again.scheduler.list(states: nil, ids: nil)
        #expect(listed.map(\.id) == [held], "\(listed.map { "\($0.id) \($0.state)" })")
        #expect(try await again.add("new") == JobID(5))
        await again.stop()
    }

    @Test func removeForgetsAJobAndDiscardsItsUpload() async throws {
        let fake = FakeTransfer()
        fake.script("r", [.hold])
        let harness = try await SchedulerHarness(fake: fake)
        let id = try await harness.add("r")
        #expect(await harness.waitUntilUploading("r"))
        _ = try await harness.perform(.remove, id)
        // Until the server has dropped the partial upload the job stays, canceled, so that a crash
        // in between retries the discard; then it is forgotten.
        let lingering = await harness.job(id)
        #expect(lingering == nil || lingering?.state == .canceled)
        #expect(await eventually { fake.snapshot.canceled == ["r"] && fake.snapshot.discarded == ["r"] })
        #expect(await eventually { await harness.job(id) == nil })
        #expect(!harness.snapshotExists(id))
        await harness.stop()
    }

    @Test func deleteRemovesTheUploadFromTheServer() async throws {
        let fake = FakeTransfer()
        let harness = try await SchedulerHarness(fake: fake)
        let id = try await harness.add("d.bin")
        #expect(await harness.wait(id, .completed))
        let deleted = try await harness.scheduler.delete([id])
        #expect(deleted.map(\.id) == [id])
        #expect(fake.snapshot.deleted == ["d.bin"])
        #expect(await harness.job(id) == nil)
        await harness.stop()
    }

    @Test func stateChangesArePublished() async throws {
        let harness = try await SchedulerHarness()
        let seen = Mutex<[String]>([])
        harness.events.subscribeNewClient(
            EventHub.Subscriber(ids: nil) { line in
                guard let note = try? JSONDecoder().decode(RPCNotification.self, from: Data(line)),
                    note.method == "job.state", case .string(let state)? = note.params.objectValue?["state"]
                else { return }
                seen.withLock { $0.append(state) }
            })
        let id = try await harness.add("e.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { seen.withLock { $0.last } == "completed" })
        #expect(seen.withLock { $0 }.first == "queued")
        #expect(seen.withLock { $0 }.contains("running"))
        await harness.stop()
    }

    @Test func everyEventCarriesARevisionThatGrowsAndFiltersNarrowWhatIsSent() async throws {
        let harness = try await SchedulerHarness()
        let revisions = Mutex<[UInt64]>([])
        let kinds = Mutex<Set<String>>([])
        harness.events.subscribeNewClient(
            EventHub.Subscriber(ids: nil, batch: nil, kinds: [.state]) { line in
                guard let note = try? JSONDecoder().decode(RPCNotification.self, from: Data(line)),
                    case .number(let revision)? = note.params.objectValue?["revision"]
                else { return }
                kinds.withLock { _ = $0.insert(note.method) }
                revisions.withLock { $0.append(UInt64(revision)) }
            })
        let id = try await harness.add("r.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { revisions.withLock { $0.count } >= 3 })
        let seen = revisions.withLock { $0 }
        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen)")
        #expect(kinds.withLock { $0 } == ["job.state"])
        let job = try #require(await harness.job(id))
        #expect(job.revision == seen.last, "the stored revision is the one last announced")

        let subscriber = EventHub.Subscriber(ids: [JobID(7)], batch: JobID(5), kinds: nil) { _ in }
        #expect(subscriber.wants(.progress, id: JobID(7), batch: JobID(5)))
        #expect(!subscriber.wants(.state, id: JobID(8), batch: JobID(5)))
        #expect(!subscriber.wants(.state, id: JobID(7), batch: nil))
        await harness.stop()
    }

    @Test func aStatesFilterSendsOnlyTheStatesAsked() async throws {
        let harness = try await SchedulerHarness()
        let seen = Mutex<[String]>([])
        harness.events.subscribeNewClient(
            EventHub.Subscriber(ids: nil, batch: nil, kinds: nil, states: [.completed, .failed]) { line in
                guard let note = try? JSONDecoder().decode(RPCNotification.self, from: Data(line)),
                    note.method == "job.state", case .string(let state)? = note.params.objectValue?["state"]
                else { return }
                seen.withLock { $0.append(state) }
            })
        let id = try await harness.add("s.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { !seen.withLock { $0.isEmpty } })
        #expect(seen.withLock { $0 } == ["completed"], "only the end")
        // Other kinds are not narrowed by states.
        let subscriber = EventHub.Subscriber(ids: nil, batch: nil, kinds: nil, states: [.completed]) { _ in }
        #expect(subscriber.wants(.progress, id: JobID(1), batch: nil))
        #expect(subscriber.wants(.removed, id: JobID(1), batch: nil))
        #expect(!subscriber.wants(.state, id: JobID(1), batch: nil, state: .running))
        await harness.stop()
    }

    /// Subscribers that asked for different `job_fields` each get their own keys of the same change.
    @Test func eachSubscriberGetsTheJobFieldsItAskedFor() async throws {
        let harness = try await SchedulerHarness()
        let keys = Mutex<[String: Set<[String]>]>([:])
        func subscriber(_ name: String, _ fields: JobFields?) -> EventHub.Subscriber {
            EventHub.Subscriber(ids: nil, batch: nil, kinds: [.state], jobFields: fields) { line in
                guard let note = try? JSONDecoder().decode(RPCNotification.self, from: Data(line)),
                    let object = note.params.objectValue
                else { return }
                keys.withLock { _ = $0[name, default: []].insert(object.keys.sorted()) }
            }
        }
        let narrow = try #require(JobFields(names: ["id", "state", "error"]))
        let bytes = try #require(JobFields(names: ["id", "state", "bytes_total"]))
        harness.events.subscribeNewClient(subscriber("narrow", narrow))
        harness.events.subscribeNewClient(subscriber("bytes", bytes))
        harness.events.subscribeNewClient(subscriber("whole", nil))
        let id = try await harness.add("f.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { keys.withLock { $0.count } == 3 })
        let seen = keys.withLock { $0 }
        #expect(seen["narrow"] == [["error", "id", "state"]])
        #expect(seen["bytes"] == [["bytes_total", "id", "state"]])
        #expect(seen["whole"]?.allSatisfy { $0.contains("source") && $0.contains("destination") } == true)
        await harness.stop()
    }

    @Test func jobsComeBackAfterARestart() async throws {
        let fake = FakeTransfer()
        fake.script("paused", [.hold])
        fake.script("failed", [.fail(SchedulerAttemptTests.forbidden)])
        fake.script("running", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 4), fake: fake)
        let done = try await harness.add("done")
        let paused = try await harness.add("paused")
        let failed = try await harness.add("failed")
        let running = try await harness.add("running", priority: 3)
        #expect(await harness.wait(done, .completed))
        #expect(await harness.wait(failed, .failed))
        #expect(await harness.waitUntilUploading("paused"))
        _ = try await harness.perform(.pause, paused)
        #expect(await harness.waitUntilUploading("running"))
        await harness.stop()
        #expect(fake.snapshot.canceled.sorted() == ["paused", "running"], "shutdown stops running transfers")

        let restarted = try await SchedulerHarness(reusing: harness.directory, start: false)
        #expect(restarted.replay.damage == nil)
        #expect(restarted.replay.state.jobs[running]?.state == .queued, "a clean stop journals running jobs as queued")
        #expect(restarted.replay.state.jobs[running]?.crashes == 0, "a clean stop is not a crash")
        let states = await restarted.scheduler.list(states: nil, ids: nil).map { "\($0.id):\($0.state.rawValue)" }
        #expect(states == ["\(done):completed", "\(paused):paused", "\(failed):failed", "\(running):queued"])
        let before = try #require(await restarted.job(running))
        #expect(before.attempts == 1)
        #expect(before.priority == 3)
        #expect(before.history?.last?.message.contains("uploadd stopped; resumes") == true)
        #expect(await restarted.job(failed)?.error?.status == 403)

        await restarted.scheduler.start()
        #expect(await restarted.wait(running, .completed))
        #expect(await restarted.job(running)?.attempts == 2)
        #expect(await restarted.state(paused) == .paused)
        #expect(try await restarted.add("next") == JobID(5))
        await restarted.stop()
    }

    /// The daemon dies while two jobs upload (the journal still says running): at the next start
    /// both are suspects and run one at a time; the one that takes the daemon down again is
    /// failed at the start after, and the other completes.
    @Test func aJobTheDaemonDiedInRunsAloneAndIsFailedTheSecondTime() async throws {
        let crashing = FakeTransfer()
        crashing.script("bad", [.hold])
        crashing.script("good", [.hold])
        let first = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 4), fake: crashing)
        let bad = try await first.add("bad")
        let good = try await first.add("good")
        #expect(await first.waitUntilUploading("bad"))
        #expect(await first.waitUntilUploading("good"))
        first.journal.close()  // what a crash leaves: the records written so far, no clean stop

        let second = FakeTransfer()
        second.script("bad", [.hold])
        second.script("good", [.hold])
        let afterOneCrash = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), fake: second, reusing: first.directory, crashed: true)
        #expect(await afterOneCrash.job(bad)?.state == .running || second.snapshot.started.count == 1)
        #expect(await afterOneCrash.waitForStarts(1))
        try await Task.sleep(for: .milliseconds(200))
        #expect(second.snapshot.started == ["bad"], "suspects run alone, in queue order")
        #expect(second.snapshot.maxRunning == 1)
        afterOneCrash.journal.close()  // "bad" takes the daemon down again

        let third = FakeTransfer()
        let afterTwoCrashes = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), fake: third, reusing: first.directory, crashed: true)
        #expect(await afterTwoCrashes.wait(bad, .failed))
        let failed = await afterTwoCrashes.job(bad)
        #expect(failed?.error?.code == "crash")
        #expect(await afterTwoCrashes.wait(good, .completed), "the rest of the queue runs")
        #expect(third.snapshot.started == ["good"])
        await afterTwoCrashes.stop()
    }

    /// The daemon died before an attempt's "running" record reached the journal (it may wait for
    /// the next write): the crash marker's list makes the job a suspect all the same.
    @Test func aJobTheMarkerListsIsASuspectThoughTheJournalSaysQueued() async throws {
        // Offline: each attempt ends at once, and the journal says queued.
        let first = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), reachability: { _, _ in .unreachable("offline") })
        let remote = "http://127.0.0.1:9/up/"
        let bad = try await first.add("bad", destination: remote, protocol: .put)
        let good = try await first.add("good", destination: remote, protocol: .put)
        #expect(await eventually { await first.job(bad)?.waiting == "network" })
        #expect(await eventually { await first.job(good)?.waiting == "network" })
        first.journal.close()

        let second = FakeTransfer()
        second.script("bad", [.hold])
        let afterOneCrash = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), fake: second, reusing: first.directory, crashed: true,
            crashSuspects: [bad, JobID(999)])
        #expect(await afterOneCrash.scheduler.store.jobs[bad]?.crashes == 1)
        #expect(await afterOneCrash.scheduler.store.jobs[good]?.crashes == 0)
        #expect(await afterOneCrash.waitForStarts(1))
        try await Task.sleep(for: .milliseconds(200))
        #expect(second.snapshot.started == ["bad"], "the suspect runs alone")
        afterOneCrash.journal.close()

        let afterTwoCrashes = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), fake: FakeTransfer(), reusing: first.directory,
            crashed: true, crashSuspects: [bad])
        #expect(await afterTwoCrashes.wait(bad, .failed))
        #expect(await afterTwoCrashes.job(bad)?.error?.code == "crash")
        #expect(await afterTwoCrashes.wait(good, .completed))
        await afterTwoCrashes.stop()
    }

    /// Killed (SIGKILL, a power cut) rather than crashed: the running jobs resume as before, all at
    /// once, and no crash is counted against them.
    @Test func aKillIsNotCountedAgainstTheRunningJobs() async throws {
        let holding = FakeTransfer()
        holding.script("a", [.hold])
        holding.script("b", [.hold])
        let first = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 4), fake: holding)
        let a = try await first.add("a")
        let b = try await first.add("b")
        #expect(await first.waitUntilUploading("a"))
        #expect(await first.waitUntilUploading("b"))
        first.journal.close()
        // Both resume at once: each holds until the other has started too.
        let resumed = FakeTransfer()
        resumed.script("a", [.hold])
        resumed.script("b", [.hold])
        let after = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 4), fake: resumed, reusing: first.directory)
        #expect(await after.waitUntilUploading("a"), "no isolation after a mere kill")
        #expect(await after.waitUntilUploading("b"), "no isolation after a mere kill")
        resumed.release("a")
        resumed.release("b")
        #expect(await after.wait(a, .completed))
        #expect(await after.wait(b, .completed))
        #expect(
            await after.job(a)?.history?.contains { $0.message.contains("interrupted (killed, or a power cut)") }
                == true)
        await after.stop()
    }
}

@Suite("Scheduler: priority, retry and --all", .serialized)
struct SchedulerQueueVerbTests {
    @Test func aNewPriorityReordersTheQueueAndSurvivesARestart() async throws {
        let fake = FakeTransfer()
        fake.script("first.bin", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let first = try await harness.add("first.bin")
        #expect(await harness.waitUntilUploading("first.bin"))
        let early = try await harness.add("early.bin")
        let late = try await harness.add("late.bin")
        let raised = try await harness.scheduler.setPriority(late, to: 5)
        #expect(raised.priority == 5)
        #expect(await harness.scheduler.ready.orderedIDs == [late, early])
        await #expect(throws: RPCError.self) { _ = try await harness.scheduler.setPriority(late, to: 1001) }
        await harness.stop()

        let again = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 1), fake: FakeTransfer(), reusing: harness.directory)
        #expect(await again.wait(first, .completed))
        #expect(await again.wait(late, .completed))
        #expect(await again.wait(early, .completed))
        let order = again.fake.started
        #expect(order.firstIndex(of: "late.bin")! < order.firstIndex(of: "early.bin")!, "\(order)")
        #expect(await again.job(late)?.history?.contains { $0.message == "priority 0 → 5" } == true)
        await again.stop()
    }

    @Test func retryRestartsFailedJobsOnlyAndAllNarrowsByState() async throws {
        let fake = FakeTransfer()
        fake.script("broken.bin", [.fail(.source("gone")), .succeed])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let broken = try await harness.add("broken.bin")
        let fine = try await harness.add("fine.bin")
        #expect(await harness.wait(broken, .failed))
        #expect(await harness.wait(fine, .completed))
        let retried = try await harness.scheduler.performEach(.retry, selection: JobSelection(all: true))
        #expect(retried.jobs.map(\.id) == [broken])
        #expect(await harness.wait(broken, .completed))
        // remove --all --state completed empties the list of what is done, and nothing else.
        let paused = try await harness.add("kept.bin")
        _ = try await harness.perform(.pause, paused)
        let removed = try await harness.scheduler.performEach(
            .remove, selection: JobSelection(all: true, states: [.completed]))
        #expect(Set(removed.jobs.map(\.id)) == [broken, fine])
        #expect(await harness.scheduler.store.jobs.keys.sorted() == [paused])
        await #expect(throws: RPCError.self) {
            _ = try await harness.scheduler.performEach(
                .cancel, selection: JobSelection(ids: [paused], states: [.paused]))
        }
        do {
            _ = try await harness.perform(.retry, paused)
            Issue.record("retry of a paused job passed")
        } catch {
            #expect("\(error)".contains("resume a paused one"), "\(error)")
        }
        await harness.stop()
    }

    @Test func moveTakesAJobToTheTopBottomOrNextToAnotherAndTheOrderSurvivesARestart() async throws {
        let fake = FakeTransfer()
        fake.script("busy.bin", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        _ = try await harness.add("busy.bin")
        #expect(await harness.waitUntilUploading("busy.bin"))
        var ids: [JobID] = []
        for name in ["a", "b", "c", "d"] { ids.append(try await harness.add(name)) }
        let (a, b, c, d) = (ids[0], ids[1], ids[2], ids[3])
        func order() async -> [JobID] { await harness.scheduler.ready.orderedIDs }
        #expect(await order() == [a, b, c, d])
        _ = try await harness.scheduler.move(MoveParams(id: d, top: true))
        #expect(await order() == [d, a, b, c])
        _ = try await harness.scheduler.move(MoveParams(id: d, bottom: true))
        #expect(await order() == [a, b, c, d])
        _ = try await harness.scheduler.move(MoveParams(id: c, before: a))
        #expect(await order() == [c, a, b, d])
        _ = try await harness.scheduler.move(MoveParams(id: c, after: b))
        #expect(await order() == [a, b, c, d])
        // A job moved next to one of another priority takes that priority.
        _ = try await harness.scheduler.setPriority(a, to: 7)
        let moved = try await harness.scheduler.move(MoveParams(id: d, after: a))
        #expect(moved.priority == 7)
        #expect(await order() == [a, d, b, c])
        // Forty moves into the same gap use it up: the ranks are spaced again, the order holds.
        for _ in 0..<20 {
            _ = try await harness.scheduler.move(MoveParams(id: b, after: a))
            _ = try await harness.scheduler.move(MoveParams(id: d, after: a))
        }
        #expect(await order() == [a, d, b, c])
        // Paused jobs keep their place; a running one has none to move.
        _ = try await harness.perform(.pause, c)
        _ = try await harness.scheduler.move(MoveParams(id: c, top: true))
        await #expect(throws: RPCError.self) {
            _ = try await harness.scheduler.move(MoveParams(id: JobID(1), top: true))
        }
        await #expect(throws: RPCError.self) {
            _ = try await harness.scheduler.move(MoveParams(id: a, top: true, bottom: true))
        }
        await harness.stop()

        // Replayed from the journal: c (moved to the top while paused), then a, d, b.
        let again = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 1), fake: FakeTransfer(defaultStep: .hold),
            reusing: harness.directory, start: false)
        let waiting = await again.scheduler.store.jobs.values.filter { [a, b, c, d].contains($0.id) }
            .sorted { QueuePlace.startsBefore(($0.id, $0.place), ($1.id, $1.place)) }.map(\.id)
        #expect(waiting == [c, a, d, b], "\(waiting)")
        await again.stop()
    }
}

@Suite("Scheduler: the bandwidth limit")
struct SchedulerBandwidthLimitTests {
    @Test func theLimitIsKeptInTheStateDirectoryAndReachesTheTransfers() async throws {
        let directory = try TemporaryDirectory("uploadd-limit")
        let file = BandwidthLimitFile(stateDirectory: directory.path)
        #expect(file.load() == nil)
        try file.save(5 << 20)
        #expect(file.load() == 5 << 20)
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == "5242880\n")
        try file.save(nil)
        #expect(file.load() == nil)
        try file.save(nil)  // none twice is fine
        _ = try directory.write("bandwidth-limit", "lots\n")
        #expect(file.load() == nil, "a file that does not say a number is no limit")
    }
}
