import Foundation
import Synchronization
import Testing
import UploadCore

@testable import UploadDaemon

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

        let second = try await SchedulerHarness(config: SchedulerHarness.config(), reusing: first.directory, start: false)
        #expect(!FileManager.default.fileExists(atPath: copy.path))
        #expect(await second.state(id) == .completed)
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
        #expect(await again.scheduler.list(states: nil, ids: nil).map(\.id) == [held])
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
        harness.events.subscribe(
            ObjectIdentifier(harness),
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
        #expect(restarted.replay.state.jobs[running]?.state == .running, "the journal says running")
        let states = await restarted.scheduler.list(states: nil, ids: nil).map { "\($0.id):\($0.state.rawValue)" }
        #expect(states == ["\(done):completed", "\(paused):paused", "\(failed):failed", "\(running):queued"])
        let before = try #require(await restarted.job(running))
        #expect(before.attempts == 1)
        #expect(before.priority == 3)
        #expect(before.history?.last?.message.contains("restarted") == true)
        #expect(await restarted.job(failed)?.error?.status == 403)

        await restarted.scheduler.start()
        #expect(await restarted.wait(running, .completed))
        #expect(await restarted.job(running)?.attempts == 2)
        #expect(await restarted.state(paused) == .paused)
        #expect(try await restarted.add("next") == JobID(5))
        await restarted.stop()
    }
}
