import Foundation
import Testing
import UploadWire

@testable import UploadCore

/// Replay past damage: a lost record must not make a job run again on its own. Jobs a damaged
/// region may have changed, and that would run, come back paused; the others as they were.
@Suite("Journal replay past damage: what a lost record may have changed")
struct JournalRecoveryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// `records` as a journal file, with one bit flipped in the middle of each record at `damaged`.
    static func file(_ records: [JournalRecord], flipping damaged: [Int]) -> [UInt8] {
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        for index in damaged { file[(frames[index].lowerBound + frames[index].upperBound) / 2] ^= 0x20 }
        return file
    }

    static func replay(_ file: [UInt8]) throws -> (JournalState, JournalRecovery) {
        var state = JournalState()
        let (_, recovery) = try state.replay(file, at: now)
        return (state, recovery)
    }

    @Test func aLostCompletionPausesTheJobAndSaysWhy() throws {
        let records: [JournalRecord] = [
            .job(Fixtures.job(1)), .job(Fixtures.job(1, state: .running)), .job(Fixtures.job(1, state: .completed)),
            .job(Fixtures.job(2)),
        ]
        let (state, recovery) = try Self.replay(Self.file(records, flipping: [2]))
        #expect(recovery.paused == [JobID(1)])
        #expect(recovery.recordsAfterDamage == 1)
        let job = try #require(state.jobs[JobID(1)])
        #expect(job.state == .paused)
        #expect(job.nextAttemptAt == nil)
        let last = try #require(job.history.last?.message)
        #expect(last.contains("journal was damaged"))
        #expect(last.contains("uploadctl show 1"))
        #expect(state.jobs[JobID(2)]?.state == .queued, "its records are after the damage")
        #expect(state.stateCounts[.paused] == 1)
    }

    @Test func aLostRemovalOfAWaitingJobPausesIt() throws {
        var waiting = Fixtures.job(1)
        waiting.nextAttemptAt = Fixtures.epoch.addingTimeInterval(60)
        let (state, recovery) = try Self.replay(
            Self.file([.job(waiting), .removed(JobID(1)), .job(Fixtures.job(2))], flipping: [1]))
        #expect(recovery.paused == [JobID(1)])
        #expect(state.jobs[JobID(1)]?.state == .paused)
        #expect(state.jobs[JobID(1)]?.nextAttemptAt == nil)
    }

    /// Its later record says all the job is: the lost one changes nothing.
    @Test func aJobWhoseRecordsGoOnAfterTheDamageIsLeftAlone() throws {
        let records: [JournalRecord] = [
            .job(Fixtures.job(1)), .job(Fixtures.job(1, state: .running)),
            .progress(JobProgress(id: JobID(1), bytesAcked: 10, checkpoint: nil)),
        ]
        let (state, recovery) = try Self.replay(Self.file(records, flipping: [1]))
        #expect(recovery.paused.isEmpty)
        #expect(state.jobs[JobID(1)]?.state == .queued)
        #expect(state.jobs[JobID(1)]?.bytesAcked == 10)
    }

    /// A job in a state that does not run (completed, failed, canceled, paused) stays in it.
    @Test func aJobThatWouldNotRunIsLeftAsItIs() throws {
        let records: [JournalRecord] = [
            .job(Fixtures.job(1, state: .failed)), .progress(JobProgress(id: JobID(1), bytesAcked: 1, checkpoint: nil)),
        ]
        let (state, recovery) = try Self.replay(Self.file(records, flipping: [1]))
        #expect(recovery.paused.isEmpty)
        #expect(state.jobs[JobID(1)]?.state == .failed)
    }

    /// The only record of a job lost: it cannot come back, but it is named, and its ID stays used.
    @Test func aJobWhoseOnlyRecordIsLostIsNamedAndItsIDStaysUsed() throws {
        let (state, recovery) = try Self.replay(
            Self.file([.job(Fixtures.job(1)), .job(Fixtures.job(2))], flipping: [1]))
        #expect(recovery.lost == [JobID(2)])
        #expect(recovery.paused.isEmpty)
        #expect(state.jobs.keys.sorted() == [JobID(1)])
        #expect(state.nextID == 3)
        #expect(recovery.raisedNextID)
    }

    /// Several records lost at once (a zeroed stretch): which jobs they held cannot be told, so
    /// every job that would run and whose records end before it is paused.
    @Test func aRegionOfUnknownRecordsPausesEveryJobThatWouldRunAndEndsBeforeIt() throws {
        var records: [JournalRecord] = [
            .job(Fixtures.job(1)), .job(Fixtures.job(2, state: .completed)), .job(Fixtures.job(3)),
            .job(Fixtures.job(4, state: .running)),
        ]
        records += (5...8).map { .job(Fixtures.job($0)) }  // zeroed below
        records += [.progress(JobProgress(id: JobID(3), bytesAcked: 5, checkpoint: nil)), .job(Fixtures.job(9))]
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        for offset in (frames[4].lowerBound + 3)..<(frames[7].upperBound - 3) { file[offset] = 0 }
        let (state, recovery) = try Self.replay(file)
        #expect(recovery.regions.map(\.range) == [frames[4].lowerBound..<frames[7].upperBound])
        #expect(recovery.regions.first?.record == .unknown)
        #expect(recovery.paused == [JobID(1), JobID(4)])
        #expect(state.jobs[JobID(2)]?.state == .completed)
        #expect(state.jobs[JobID(3)]?.state == .queued, "its records go on after the damage")
        #expect(state.jobs[JobID(9)]?.state == .queued)
        #expect(state.jobs.keys.sorted() == [1, 2, 3, 4, 9].map { JobID($0) })
    }

    /// What a crash leaves (a torn last record, zeros after the end) was never synced, so nothing
    /// acted on it: nothing is paused, as before.
    @Test(arguments: [false, true])
    func aCrashsTailPausesNothing(zeros: Bool) throws {
        let records: [JournalRecord] = [.job(Fixtures.job(1, state: .running)), .job(Fixtures.job(2))]
        var file = Fixtures.file(records)
        if zeros { file += [UInt8](repeating: 0, count: 4096) } else { file.removeLast(5) }
        let (state, recovery) = try Self.replay(file)
        #expect(recovery.regions.count == 1)
        #expect(recovery.regions.first?.isTornTail == !zeros)
        #expect(recovery.paused.isEmpty)
        #expect(state.jobs[JobID(1)]?.state == .running)
    }

    /// The last record whole but with a flipped bit: not a crash's torn write, so its job is paused.
    @Test func aFlippedBitInTheLastRecordPausesItsJob() throws {
        let records: [JournalRecord] = [.job(Fixtures.job(1)), .job(Fixtures.job(1, state: .completed))]
        let (state, recovery) = try Self.replay(Self.file(records, flipping: [1]))
        #expect(recovery.regions.first?.record == .job(JobID(1), certain: true))
        #expect(recovery.paused == [JobID(1)])
        #expect(state.jobs[JobID(1)]?.state == .paused)
    }

    @Test func aWholeJournalReplaysAsRecordByRecord() throws {
        let records = Fixtures.twentyRecords
        let (state, recovery) = try Self.replay(Fixtures.file(records))
        #expect(recovery.regions.isEmpty)
        #expect(state.jobs == JournalStateTests.replay(records).jobs)
    }
}
