import Foundation
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon

/// The state machines of what runs when jobs end: hooks in their order and under their cap, and
/// one notification per batch once it has stayed ended.
@Suite("HookQueue and BatchAnnouncements")
struct EndOfJobStateMachineTests {
    @Test func hooksStartInOrderAtMostFourAtOnceAndEachOnce() {
        var queue = HookQueue()
        for id in 1...6 { queue.owe(JobID(UInt64(id))) }
        let owedTwice = queue.owe(JobID(2))
        #expect(!owedTwice, "owed while waiting: once")
        var started: [JobID] = []
        while let id = queue.next() { started.append(id) }
        #expect(started == (1...4).map { JobID(UInt64($0)) })
        let owedWhileRunning = queue.owe(JobID(1))
        #expect(!owedWhileRunning, "owed while running: once")
        queue.ended(JobID(3))
        let fifth = queue.next()
        let none = queue.next()
        #expect(fifth == JobID(5))
        #expect(none == nil, "four run again")
        queue.ended(JobID(1))
        queue.ended(JobID(1))  // a second end of the same hook frees no second slot
        let sixth = queue.next()
        let noneLeft = queue.next()
        let owedAgain = queue.owe(JobID(3))
        #expect(sixth == JobID(6))
        #expect(noneLeft == nil)
        #expect(owedAgain, "a job whose hook ended may owe one again")
        #expect(queue.running == 4)
    }

    @Test func aBatchIsAnnouncedOnceAfterItsLastEndOnly() {
        var batches = BatchAnnouncements()
        let first = batches.batchEnded(JobID(7))
        let again = batches.batchEnded(JobID(7))  // a retry failed once more within the quiet time
        let other = batches.batchEnded(JobID(9))
        let stale = batches.quietTimeEnded(first)
        let due = batches.quietTimeEnded(again)
        let dueAgain = batches.quietTimeEnded(again)
        let otherDue = batches.quietTimeEnded(other)
        #expect(!stale, "an earlier timer of the batch is stale")
        #expect(due)
        #expect(!dueAgain, "announced once")
        #expect(otherDue)
    }

    @Test func whatABatchShowsUnderEachPolicy() {
        func job(_ id: UInt64, _ state: JobState) -> Job {
            var job = Job(
                id: JobID(id), spec: JobSpec(source: "/p/\(id).jpg", destination: "nas:x/"), createdAt: Date())
            job.state = state
            return job
        }
        let fine = [job(1, .completed), job(2, .completed)]
        let mixed = [job(1, .completed), job(2, .failed)]
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: fine, policy: .failures) == nil)
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: fine, policy: .all)?.urgent == false)
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: mixed, policy: .failures)?.urgent == true)
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: mixed, policy: .none) == nil)
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: [job(1, .canceled)], policy: .all) == nil)
        #expect(BatchAnnouncements.message(batch: JobID(1), jobs: fine, policy: .all)?.summary == "Uploaded 2 files")
    }

    @Test func aWatchedFoldersBatchNamesTheFolder() {
        func job(_ id: UInt64, _ state: JobState) -> Job {
            var spec = JobSpec(source: "/p/\(id).png", destination: "nas:shots/")
            spec.folder = "screenshots"
            var job = Job(id: JobID(id), spec: spec, createdAt: Date())
            job.state = state
            return job
        }
        let fine = BatchAnnouncements.text(
            batch: JobID(1), completed: [job(1, .completed), job(2, .completed)], failed: [])
        #expect(fine.summary == "Uploaded 2 files from screenshots" && fine.body == "to nas:shots/")
        let one = BatchAnnouncements.text(batch: JobID(1), completed: [], failed: [job(3, .failed)])
        #expect(one.summary == "Upload of 3.png from screenshots failed")
        let some = BatchAnnouncements.text(batch: JobID(1), completed: [job(1, .completed)], failed: [job(3, .failed)])
        #expect(some.summary == "1 of 2 files from screenshots failed to upload")
    }
}
