import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// An attempt's "running" record waits for the journal's next write, and the job's next record
/// replaces it if it comes first (`Scheduler.commitStart`): small files' uploads end within a
/// millisecond of their start. Whatever is written, replay gives what memory had.
@Suite("Scheduler: an attempt's start record, replaced by the end that comes before its write")
struct StartRecordTests {
    /// The records of the journal file, as replay reads them.
    static func records(_ harness: SchedulerHarness) throws -> [JournalRecord] {
        try JournalFormat.decode(try harness.directory.read("state/journal")).records
    }

    static func states(of id: JobID, in records: [JournalRecord]) -> [String] {
        records.compactMap { record in
            switch record {
            case .job(let job) where job.id == id: return job.state.rawValue
            case .progress(let progress) where progress.id == id: return "progress \(progress.bytesAcked)"
            default: return nil
            }
        }
    }

    /// Replay of the journal as it is now: what a restart would find.
    static func replayed(_ harness: SchedulerHarness) throws -> JournalState {
        var state = JournalState()
        for record in try records(harness) { state.apply(record) }
        return state
    }

    @Test func anUploadThatEndsBeforeTheNextWriteLeavesNoStartRecord() async throws {
        // Only the writer's next write takes the start along, not its delay (a loaded machine may
        // take longer than 100 ms to run the attempt).
        let harness = try await SchedulerHarness(
            fake: FakeTransfer(defaultStep: .succeedInOneRequest), startRecordDelay: .seconds(3600))
        let id = try await harness.add("small.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { !harness.snapshotExists(id) }, "the end is on disk")
        let memory = try #require(await harness.scheduler.store.jobs[id])
        #expect(Self.states(of: id, in: try Self.records(harness)) == ["queued", "completed"])
        let replayed = try #require(try Self.replayed(harness).jobs[id])
        #expect(replayed == memory, "the same job, revision and attempts included")
        #expect(replayed.attempts == 1)
        await harness.stop()
    }

    /// Progress is a change of a few fields: the start it follows goes first.
    @Test func progressBeforeTheNextWriteTakesTheStartRecordAlongFirst() async throws {
        let harness = try await SchedulerHarness()
        let id = try await harness.add("chunked.bin")
        #expect(await harness.wait(id, .completed))
        #expect(await eventually { !harness.snapshotExists(id) })
        let memory = try #require(await harness.scheduler.store.jobs[id])
        let size = memory.bytesTotal
        #expect(
            Self.states(of: id, in: try Self.records(harness)) == [
                "queued", "running", "progress \(size)", "completed",
            ])
        #expect(try Self.replayed(harness).jobs[id] == memory)
        await harness.stop()
    }

    /// An attempt still running when the delay is up has its start on disk: a SIGKILL then (the
    /// OOM killer's, which leaves no crash marker) counts against the job at the next start.
    @Test func aLongerUploadsStartIsWrittenWithinTheDelay() async throws {
        let harness = try await SchedulerHarness(fake: FakeTransfer(defaultStep: .hold))
        let id = try await harness.add("big.bin")
        #expect(await harness.waitUntilUploading("big.bin"))
        #expect(await eventually { (try? Self.states(of: id, in: Self.records(harness))) == ["queued", "running"] })
        #expect(try Self.replayed(harness).jobs[id]?.attempts == 1)
        harness.fake.release("big.bin")
        #expect(await harness.wait(id, .completed))
        await harness.stop()
        let size = try #require(try Self.replayed(harness).jobs[id]).bytesTotal
        #expect(
            Self.states(of: id, in: try Self.records(harness)) == [
                "queued", "running", "progress \(size)", "completed",
            ])
    }
}
