import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("Scheduler: which job starts when")
struct SchedulerOrderTests {
    @Test func priorityThenFIFOWithOneSlot() async throws {
        let fake = FakeTransfer()
        fake.script("a", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let first = try await harness.add("a")
        #expect(await harness.waitForStarts(1))
        var ids = [first]
        for (name, priority) in [("b", 0), ("c", 5), ("d", 0), ("e", 5), ("f", -1)] {
            ids.append(try await harness.add(name, priority: priority))
        }
        #expect(await harness.state(ids[1]) == .queued)
        fake.release("a")
        for id in ids { #expect(await harness.wait(id, .completed)) }
        #expect(fake.started == ["a", "c", "e", "b", "d", "f"])
        #expect(fake.snapshot.maxRunning == 1)
        await harness.stop()
    }

    @Test func neverMoreThanMaxTransfersAtOnce() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 2), fake: fake)
        var ids: [JobID] = []
        for index in 0..<6 { ids.append(try await harness.add("j\(index)")) }
        #expect(await harness.waitForStarts(2))
        try await Task.sleep(for: .milliseconds(100))
        #expect(fake.started == ["j0", "j1"])
        let running = await harness.scheduler.list(states: [.running], ids: nil)
        #expect(running.map(\.id) == [ids[0], ids[1]])

        for index in 0..<6 {
            fake.release("j\(index)")
            #expect(await harness.wait(ids[index], .completed))
            #expect(await harness.waitForStarts(min(index + 3, 6)))
            #expect(fake.snapshot.running.count <= 2)
        }
        #expect(fake.started == (0..<6).map { "j\($0)" })
        #expect(fake.snapshot.maxRunning == 2)
        await harness.stop()
    }

    @Test func aPausedJobIsSkippedAndResumedJobsTakeTheirTurn() async throws {
        let fake = FakeTransfer()
        fake.script("a", [.hold])
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let a = try await harness.add("a")
        #expect(await harness.waitForStarts(1))
        let b = try await harness.add("b")
        let c = try await harness.add("c")
        #expect(try await harness.perform(.pause, b)?.state == .paused)
        fake.release("a")
        #expect(await harness.wait(c, .completed))
        #expect(await harness.state(b) == .paused)
        #expect(try await harness.perform(.resume, b)?.state == .queued)
        #expect(await harness.wait(b, .completed))
        #expect(fake.started == ["a", "c", "b"])
        #expect(await harness.state(a) == .completed)
        await harness.stop()
    }

    /// `perform` plans every transition first and carries them out one by one, awaiting the journal
    /// in between. While it waits for a's record, a's stopped attempt ends and frees the slot, so b
    /// (still queued in the store) starts, and b's planned pause (made when b was queued, so
    /// without stopTransfer) then marks it paused while its transfer keeps running.
    @Test func pauseAllLeavesNoTransferRunning() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let a = try await harness.add("a")
        let b = try await harness.add("b")
        #expect(await harness.waitUntilUploading("a"))
        _ = try await harness.scheduler.perform(.pause, selection: JobSelection(all: true))
        #expect(await eventually { fake.snapshot.canceled == ["a"] })
        try await Task.sleep(for: .milliseconds(200))
        #expect(fake.snapshot.running.isEmpty, "paused jobs have no transfer running: \(fake.snapshot.running)")
        #expect(fake.started == ["a"])
        #expect(await harness.state(a) == .paused)
        #expect(await harness.job(b)?.attempts == 0)
        await harness.stop()
    }

    @Test func pauseAllAndResumeAll() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1), fake: fake)
        let a = try await harness.add("a")
        let b = try await harness.add("b")
        #expect(await harness.waitUntilUploading("a"))
        let paused = try await harness.scheduler.perform(.pause, selection: JobSelection(all: true))
        #expect(paused.map(\.id) == [a, b])
        #expect(paused.allSatisfy { $0.state == .paused })
        #expect(await eventually { fake.snapshot.canceled == ["a"] })
        let resumed = try await harness.scheduler.perform(.resume, selection: JobSelection(all: true))
        #expect(resumed.allSatisfy { $0.state == .queued })
        #expect(await harness.waitForStarts(2))
        #expect(fake.started == ["a", "a"], "a is first again: same priority, lower ID")
        fake.release("a")
        fake.release("b")
        #expect(await harness.wait(a, .completed))
        #expect(await harness.wait(b, .completed))
        await harness.stop()
    }

    /// A PUT of a new file `name` to the server `server`.
    static func put(_ name: String, to server: String, _ harness: SchedulerHarness) throws -> AddParams {
        var params = AddParams(
            source: try harness.directory.write("src/" + name, "the content of \(name)\n"),
            destination: "http://\(server)/up/")
        params.protocol = .put
        return params
    }

    /// While a job for another server waits, one server gets at most `transfers - 1` slots; with
    /// no other server's work left, the cap gives way (issue 47, finding 3).
    @Test func oneServerGetsAtMostItsShareWhileAnotherHasWork() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 2), fake: fake)
        // One add, so that all three are queued before any starts.
        let results = await harness.scheduler.add([
            try Self.put("slow-1", to: "slow.test", harness), try Self.put("slow-2", to: "slow.test", harness),
            try Self.put("other", to: "other.test", harness),
        ])
        let ids = try results.map { try $0.get().id }
        #expect(await harness.waitForStarts(2))
        try await Task.sleep(for: .milliseconds(100))
        // One pass starts both; their tasks reach the fake transfer in either order.
        #expect(Set(fake.started) == ["slow-1", "other"], "the second slow job waits while another server has work")
        #expect(await harness.state(ids[1]) == .queued)
        fake.release("other")
        #expect(await harness.wait(ids[2], .completed))
        #expect(await harness.waitForStarts(3))
        #expect(fake.started.last == "slow-2" && fake.started.count == 3, "then the cap gives way")
        for name in ["slow-1", "slow-2"] { fake.release(name) }
        for id in ids { #expect(await harness.wait(id, .completed)) }
        await harness.stop()
    }

    /// The cap gives way at once while no other server has work (`ReadyServers`), and holds again
    /// for a job of another server added after that: the count of servers waiting keeps up.
    @Test func aJobForAnotherServerAddedLaterStillGoesFirst() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 2), fake: fake)
        let slow = await harness.scheduler.add(try (1...4).map { try Self.put("slow-\($0)", to: "slow.test", harness) })
        let slowIDs = try slow.map { try $0.get().id }
        #expect(await harness.waitForStarts(2))
        // Both start in one pass; their attempts' tasks reach the transfer in either order.
        #expect(Set(fake.started) == ["slow-1", "slow-2"], "no other server has work: the cap gives way")
        let other = try await harness.scheduler.add([try Self.put("other", to: "other.test", harness)])[0].get().id
        fake.release("slow-1")
        #expect(await harness.wait(slowIDs[0], .completed))
        #expect(await harness.waitForStarts(3))
        try await Task.sleep(for: .milliseconds(100))
        #expect(
            fake.started.count == 3 && fake.started[2] == "other", "the job of another server, added later, goes first")
        for name in ["slow-2", "other", "slow-3", "slow-4"] { fake.release(name) }
        for id in slowIDs + [other] { #expect(await harness.wait(id, .completed)) }
        await harness.stop()
    }

    /// All jobs for one server: the cap never holds a slot empty.
    @Test func aCapWithNoOtherServerLeavesNoSlotEmpty() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 2), fake: fake, smallFilesRunWider: true)
        var ids: [JobID] = []
        for index in 0..<12 { ids.append(try await harness.add("s\(index)")) }
        #expect(await harness.waitForStarts(8), "small files run 8 wide, to one server as to many")
        for index in 0..<12 { fake.release("s\(index)") }
        for id in ids { #expect(await harness.wait(id, .completed)) }
        await harness.stop()
    }
}
