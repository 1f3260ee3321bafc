import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("Scheduler: attempts, retries, pause, resume, cancel")
struct SchedulerAttemptTests {
    static let forbidden = TransferFailure.http(
        status: 403, method: "PUT", url: "https://h/x", body: "<html><title>403 Forbidden</title></html>",
        retryAfter: nil)

    @Test func aSuccessfulUploadCompletesAndDropsItsSnapshot() async throws {
        let harness = try await SchedulerHarness()
        let id = try await harness.add("ok.bin")
        #expect(await harness.wait(id, .completed))
        let info = try #require(await harness.job(id))
        #expect(info.attempts == 1)
        #expect(info.bytesAcked == info.bytesTotal)
        #expect(info.result?.url == "file://\(harness.directory.path)/out/ok.bin")
        #expect(info.error == nil)
        // Deleted once the completion is on disk (a moment after the state changes in memory).
        #expect(await eventually { !harness.snapshotExists(id) })
        await harness.stop()
    }

    @Test func aRetryableFailureIsRetriedThenCompletes() async throws {
        let fake = FakeTransfer()
        fake.script("r.bin", [.fail(.network("connection reset by peer")), .succeed])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let id = try await harness.add("r.bin")
        #expect(await harness.wait(id, .completed))
        let info = try #require(await harness.job(id))
        #expect(info.attempts == 2)
        #expect(info.error == nil)
        #expect(fake.started == ["r.bin", "r.bin"])
        #expect(info.history?.contains { $0.message.contains("connection reset by peer; retrying in") } == true)
        await harness.stop()
    }

    @Test func retriesStopWhenTheBudgetIsSpent() async throws {
        let fake = FakeTransfer(defaultStep: .fail(.timeout("no answer in 20s")))
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(attempts: 3), fake: fake)
        let id = try await harness.add("t.bin")
        #expect(await harness.wait(id, .failed))
        let info = try #require(await harness.job(id))
        #expect(info.attempts == 3)
        #expect(info.error?.code == "timeout")
        #expect(info.history?.last?.message.contains("gave up after 3 attempts") == true)
        try await Task.sleep(for: .milliseconds(100))
        #expect(fake.started.count == 3)
        #expect(harness.snapshotExists(id), "a failed job keeps its snapshot for resume")
        await harness.stop()
    }

    /// Issue 48: a job that fails for good drops what the server holds of its upload (a tus
    /// upload, an S3 multipart upload), as cancel does; a failure that is retried keeps it.
    @Test func aJobThatFailsForGoodDiscardsItsPartialUpload() async throws {
        let fake = FakeTransfer()
        fake.script("gone.bin", [.failHoldingUpload(Self.forbidden)])
        fake.script("again.bin", [.failHoldingUpload(.network("connection reset by peer")), .hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let failed = try await harness.add("gone.bin")
        let retried = try await harness.add("again.bin")
        #expect(await harness.wait(failed, .failed))
        #expect(
            await eventually { fake.snapshot.discarded == ["gone.bin"] }, "the failed job's upload is dropped")
        #expect(
            await eventually {
                await harness.job(failed)?.history?.last?.message.contains("let go of the partial upload") == true
            })
        #expect(await harness.waitUntilUploading("again.bin"))
        #expect(fake.snapshot.discarded == ["gone.bin"], "a retried job keeps its upload")
        fake.release("again.bin")
        #expect(await harness.wait(retried, .completed))
        #expect(await harness.job(failed)?.state == .failed, "still failed, to resume or retry")
        await harness.stop()
    }

    /// `retry_for`: past its attempt count, a job keeps retrying until it has been failing for
    /// longer than the time budget, then fails saying for how long. Hours pass on a test clock.
    @Test func retriesGoOnUntilTheTimeBudgetIsSpent() async throws {
        let fake = FakeTransfer(defaultStep: .fail(.network("connection refused")))
        let clock = TestClock()
        var config = SchedulerHarness.config(attempts: 2)
        config.retry.maxDuration = .seconds(3600)
        let harness = try await SchedulerHarness(config: config, fake: fake, clock: clock)
        let id = try await harness.add("budget.bin")
        #expect(await harness.waitForStarts(5), "past 2 attempts, the hour is not spent: it goes on")
        #expect(await harness.state(id) != .failed)
        clock.advance(by: 7200)
        #expect(await harness.wait(id, .failed))
        let info = try #require(await harness.job(id))
        #expect(info.attempts >= 5, "\(info.history?.map(\.message) ?? [])")
        #expect(info.history?.last?.message.contains("gave up after") == true, "\(info.history?.last?.message ?? "")")
        await harness.stop()
    }

    @Test func aClientErrorFailsAtOnceWithTheServersMessage() async throws {
        let fake = FakeTransfer()
        fake.script("f.bin", [.fail(Self.forbidden)])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let id = try await harness.add("f.bin")
        #expect(await harness.wait(id, .failed))
        let info = try #require(await harness.job(id))
        #expect(info.attempts == 1)
        #expect(info.error?.status == 403)
        #expect(info.error?.message.contains("HTTP 403 Forbidden: 403 Forbidden") == true)
        try await Task.sleep(for: .milliseconds(100))
        #expect(fake.started == ["f.bin"])

        // resume gives it another go
        #expect(try await harness.perform(.resume, id)?.state == .queued)
        #expect(await harness.wait(id, .completed))
        #expect(await harness.job(id)?.attempts == 2)
        await harness.stop()
    }

    @Test func pauseStopsTheTransferAndResumeRestartsIt() async throws {
        let fake = FakeTransfer()
        fake.script("p.bin", [.hold, .succeed])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let id = try await harness.add("p.bin")
        #expect(await harness.waitUntilUploading("p.bin"))
        #expect(try await harness.perform(.pause, id)?.state == .paused)
        #expect(await eventually { fake.snapshot.canceled == ["p.bin"] }, "the transfer saw the cancellation")
        try await Task.sleep(for: .milliseconds(50))
        #expect(await harness.state(id) == .paused, "a stopped attempt is not a failure")
        #expect(await harness.job(id)?.error == nil)
        #expect(fake.started.count == 1)

        #expect(try await harness.perform(.resume, id)?.state == .queued)
        #expect(await harness.wait(id, .completed))
        #expect(fake.started == ["p.bin", "p.bin"])
        #expect(await harness.job(id)?.attempts == 2)
        await harness.stop()
    }

    @Test func resumeRightAfterPauseWaitsForTheOldAttempt() async throws {
        let fake = FakeTransfer()
        fake.script("q.bin", [.hold, .succeed])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let id = try await harness.add("q.bin")
        #expect(await harness.waitUntilUploading("q.bin"))
        _ = try await harness.perform(.pause, id)
        _ = try await harness.perform(.resume, id)
        #expect(await harness.wait(id, .completed))
        #expect(fake.started == ["q.bin", "q.bin"])
        #expect(fake.snapshot.maxRunning == 1, "two attempts of one job never overlap")
        await harness.stop()
    }

    @Test func cancelStopsTheTransferAndDiscardsEverything() async throws {
        let fake = FakeTransfer()
        fake.script("c.bin", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(), fake: fake)
        let id = try await harness.add("c.bin")
        #expect(await harness.waitUntilUploading("c.bin"))
        #expect(harness.snapshotExists(id))
        #expect(try await harness.perform(.cancel, id)?.state == .canceled)
        #expect(await eventually { fake.snapshot.canceled == ["c.bin"] })
        #expect(
            await eventually { fake.snapshot.discarded == ["c.bin"] }, "the partial upload is dropped on the server")
        #expect(!harness.snapshotExists(id))
        try await Task.sleep(for: .milliseconds(50))
        #expect(await harness.state(id) == .canceled)
        await #expect(throws: RPCError.self) { try await harness.perform(.resume, id) }
        await harness.stop()
    }

    /// The same race as `pauseAllLeavesNoTransferRunning`, with worse effects: b is canceled and
    /// its upload still runs. (With a cached snapshot, deleting it often stops b's attempt before
    /// the transfer is called, which hides the race; `--snapshot none` shows it.)
    @Test func cancelingSeveralJobsStopsEveryTransfer() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let a = try await harness.add("a", snapshot: SnapshotMode.none)
        let b = try await harness.add("b", snapshot: SnapshotMode.none)
        #expect(await harness.waitUntilUploading("a"))
        let canceled = try await harness.scheduler.perform(.cancel, selection: JobSelection(ids: [a, b]))
        #expect(canceled.map(\.state) == [.canceled, .canceled])
        try await Task.sleep(for: .milliseconds(200))
        #expect(fake.snapshot.running.isEmpty, "canceled jobs have no transfer running: \(fake.snapshot.running)")
        #expect(fake.started == ["a"])
        await harness.stop()
    }

    @Test func anUnknownRemoteIsRefusedAtAdd() async throws {
        let harness = try await SchedulerHarness()
        let path = try harness.directory.write("src/x.bin", "x")
        let error = await #expect(throws: RPCError.self) {
            try await harness.scheduler.add(AddParams(source: path, destination: "nas:photos/"))
        }
        #expect(error?.code == RPCError.invalidParamsCode)
        #expect(error?.message.contains("no remote named 'nas'") == true)
        // A mistyped scheme is not taken for a remote's name.
        let typo = await #expect(throws: RPCError.self) {
            try await harness.scheduler.add(AddParams(source: path, destination: "htp://example.org/"))
        }
        #expect(typo?.message.contains("uploadd does not upload to htp:// URLs") == true)
        #expect(await harness.scheduler.list(states: nil, ids: nil).isEmpty)
        await harness.stop()
    }

    /// A remote dropped from the config after its jobs were added: they fail when they would run.
    @Test func aRemoteGoneSinceTheAddFailsTheJobWithoutATransfer() async throws {
        let fake = FakeTransfer()
        var config = SchedulerHarness.config()
        config.maxTransfers = 1
        // No transfer slot yet: the job stays queued until the reload that drops its remote.
        var before = try DaemonConfig.parse("[remote nosuch]\nurl = file:///tmp/x/\n")
        before.maxTransfers = 0
        let harness = try await SchedulerHarness(config: before, fake: fake)
        let path = try harness.directory.write("src/x.bin", "x")
        let id = try await harness.scheduler.add(AddParams(source: path, destination: "nosuch:dir/")).id
        await harness.scheduler.reload(config)
        #expect(await harness.wait(id, .failed))
        let info = try #require(await harness.job(id))
        #expect(info.error?.code == "config")
        #expect(info.error?.message.contains("no remote named 'nosuch'") == true)
        #expect(info.attempts == 1)
        #expect(fake.started.isEmpty)
        await harness.stop()
    }

    @Test func aQueuedJobCanceledNeverStarts() async throws {
        let fake = FakeTransfer()
        fake.script("a", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let a = try await harness.add("a")
        let b = try await harness.add("b")
        #expect(try await harness.perform(.cancel, b)?.state == .canceled)
        fake.release("a")
        #expect(await harness.wait(a, .completed))
        try await Task.sleep(for: .milliseconds(50))
        #expect(fake.started == ["a"])
        await harness.stop()
    }

    @Test func anInvalidTransitionChangesNothingAndSaysWhy() async throws {
        let harness = try await SchedulerHarness()
        let id = try await harness.add("done.bin")
        #expect(await harness.wait(id, .completed))
        let error = await #expect(throws: RPCError.self) { try await harness.perform(.pause, id) }
        #expect(error?.code == RPCError.invalidTransitionCode)
        #expect(error?.message.contains("job \(id) is completed: cannot pause it") == true)
        let unknown = await #expect(throws: RPCError.self) { try await harness.perform(.pause, JobID(999)) }
        #expect(unknown?.code == RPCError.jobNotFoundCode)
        #expect(await harness.state(id) == .completed)
        await harness.stop()
    }

    /// Offline, a job spends nothing and waits; when the network comes back it starts at once.
    @Test func withoutANetworkAJobWaitsAndSpendsNoAttempt() async throws {
        let online = Mutex(false)
        let fake = FakeTransfer()
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(), fake: fake,
            reachability: { _, _ in online.withLock { $0 } ? .reachable : .unreachable("no route to example.invalid") })
        let id = try await harness.add("offline.bin", destination: "http://example.invalid/up/", protocol: .put)
        #expect(await eventually { await harness.job(id)?.waiting == "network" })
        let waiting = try #require(await harness.job(id))
        #expect(waiting.state == .queued)
        #expect(waiting.attempts == 0)
        #expect(waiting.history?.last?.message == "waiting for the network: no route to example.invalid")
        #expect(await harness.scheduler.statusText().contains("1 waiting for the network"))
        try await Task.sleep(for: .milliseconds(200))
        #expect(fake.started.isEmpty, "nothing is tried while offline")
        #expect(await harness.job(id)?.attempts == 0, "and nothing is retried on a timer")

        online.withLock { $0 = true }
        await harness.scheduler.networkChanged()
        #expect(await harness.wait(id, .completed))
        #expect(await harness.job(id)?.attempts == 1)
        #expect(await harness.job(id)?.waiting == nil)
        await harness.stop()
    }
}
