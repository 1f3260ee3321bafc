import Foundation
import TestSupport
import Testing
import UploadWire

@testable import UploadCore

@Suite("JournalState replay and compaction")
struct JournalStateTests {
    static func replay(_ records: [JournalRecord]) -> JournalState {
        var state = JournalState()
        for record in records { state.apply(record) }
        return state
    }

    @Test func lastJobRecordWinsAndProgressUpdatesIt() {
        let state = Self.replay([
            .job(Fixtures.job(1)),
            .job(Fixtures.job(1, state: .running)),
            .progress(JobProgress(id: JobID(1), bytesAcked: 777, checkpoint: .tus(uploadURL: "u", expires: nil))),
        ])
        let job = state.jobs[JobID(1)]
        #expect(job?.state == .running)
        #expect(job?.bytesAcked == 777)
        #expect(job?.checkpoint == .tus(uploadURL: "u", expires: nil))
        #expect(state.nextID == 2)
    }

    @Test func stateCountsFollowEveryChange() {
        let state = Self.replay([
            .job(Fixtures.job(1)), .job(Fixtures.job(2)), .job(Fixtures.job(3)),
            .job(Fixtures.job(1, state: .running)), .job(Fixtures.job(2, state: .completed)),
            .removed(JobID(3)), .removed(JobID(9)),
        ])
        #expect(state.stateCounts.filter { $0.value != 0 } == [.running: 1, .completed: 1])
    }

    @Test func unfinishedJobsAreCountedPerBatch() {
        func job(_ id: UInt64, _ state: JobState, batch: UInt64?) -> Job {
            var job = Fixtures.job(id, state: state)
            job.spec.batch = batch.map { JobID($0) }
            return job
        }
        var state = Self.replay([
            .job(job(1, .queued, batch: 1)), .job(job(2, .queued, batch: 1)), .job(job(3, .running, batch: 1)),
            .job(job(4, .queued, batch: nil)), .job(job(5, .paused, batch: 5)),
        ])
        #expect(state.unfinishedInBatch == [JobID(1): 3, JobID(5): 1])
        state.apply(.job(job(1, .completed, batch: 1)))
        state.apply(.job(job(2, .failed, batch: 1)))
        #expect(state.unfinishedInBatch[JobID(1)] == 1)
        state.apply(.removed(JobID(3)))
        #expect(state.unfinishedInBatch[JobID(1)] == nil, "every job of batch 1 ended or went")
        state.apply(.job(job(2, .queued, batch: 1)))  // retried
        #expect(state.unfinishedInBatch[JobID(1)] == 1)
        state.apply(.job(job(5, .canceled, batch: 5)))
        #expect(state.unfinishedInBatch == [JobID(1): 1])
    }

    @Test func revisionsGrowWithEveryRecordAndSurviveCompaction() {
        let live = Self.replay([
            .job(Fixtures.job(1)),
            .job(Fixtures.job(1, state: .running)),
            .progress(JobProgress(id: JobID(1), bytesAcked: 5, checkpoint: nil)),
            .job(Fixtures.job(2)),
        ])
        #expect(live.jobs[JobID(1)]?.revision == 3 && live.jobs[JobID(2)]?.revision == 1)
        // A record written from memory carries the revision before its change; replay gives the same.
        var next = live.jobs[JobID(1)]!
        next.state = .completed
        var state = live
        state.apply(.job(next))
        #expect(state.jobs[JobID(1)]?.revision == 4)
        let compacted = Self.replay(state.compactedRecords())
        #expect(compacted.jobs[JobID(1)]?.revision == 4 && compacted.jobs[JobID(2)]?.revision == 1)
        var after = compacted
        after.apply(.job(compacted.jobs[JobID(1)]!))
        #expect(after.jobs[JobID(1)]?.revision == 5, "it keeps growing after a restart")
    }

    @Test func progressForAnUnknownJobIsIgnored() {
        let state = Self.replay([.progress(JobProgress(id: JobID(5), bytesAcked: 1, checkpoint: nil))])
        #expect(state.jobs.isEmpty)
        #expect(state.nextID == 1)
    }

    @Test func nextIDNeverGoesBackwards() {
        let state = Self.replay([.nextID(50), .job(Fixtures.job(3)), .nextID(10)])
        #expect(state.nextID == 50)
    }

    @Test func compactedRecordsReplayToTheSameState() {
        let original = Self.replay(Fixtures.twentyRecords + Fixtures.everyRecordKind)
        let compacted = original.compactedRecords()
        let replayed = Self.replay(compacted)
        #expect(replayed.jobs == original.jobs)
        #expect(replayed.nextID == original.nextID)
        #expect(replayed.folderLedgers == original.folderLedgers)
        #expect(compacted.count == original.jobs.count + 2, "the next ID, the jobs, and one folder's ledger")
    }

    @Test func compactedRecordsSurviveTheFileFormat() throws {
        let original = Self.replay(Fixtures.twentyRecords)
        let contents = try JournalFormat.decode(Fixtures.file(original.compactedRecords()))
        let replayed = Self.replay(contents.records)
        #expect(replayed.jobs == original.jobs)
        #expect(replayed.nextID == original.nextID)
    }

    @Test func idsAreNeverReusedAfterRemovalAndCompaction() {
        var state = Self.replay([.job(Fixtures.job(1)), .job(Fixtures.job(2)), .job(Fixtures.job(3))])
        state.apply(.removed(JobID(3)))
        state.apply(.removed(JobID(2)))
        #expect(state.nextID == 4)
        let afterCompaction = Self.replay(state.compactedRecords())
        #expect(afterCompaction.jobs.keys.sorted() == [JobID(1)])
        #expect(afterCompaction.nextID == 4)
        // Everything removed: the next ID is still past every ID ever handed out.
        var empty = afterCompaction
        empty.apply(.removed(JobID(1)))
        #expect(Self.replay(empty.compactedRecords()).nextID == 4)
    }

    @Test func removedAloneAdvancesTheNextID() {
        let state = Self.replay([.removed(JobID(9))])
        #expect(state.nextID == 10)
    }
}
