import Foundation
import TestSupport
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon

/// `QueuePositions`: a page's positions, each by a binary search, are the positions that one pass
/// over the whole queue gives.
@Suite struct QueuePositionsTests {
    @Test(arguments: [1, 2, 3])
    func aPagesPositionsAreTheWholeQueues(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var jobs = JobTable()
        var ready = ReadyQueue()
        let states: [JobState] = [.queued, .queued, .queued, .queued, .paused, .running, .completed]
        for raw in 1...400 {
            var job = Job(
                id: JobID(UInt64(raw)), spec: JobSpec(source: "/f/\(raw)", destination: "file:///o/"), createdAt: Date()
            )
            job.spec.priority = Int(random.next() % 3) - 1
            if random.next() % 4 == 0 { job.rank = Int64(random.next() % 1000) << 10 - (1 << 19) }  // moved
            job.state = states[Int(random.next() % UInt64(states.count))]
            // Most queued jobs are ready; some wait for a retry or the network, outside the queue.
            if job.state == .queued && random.next() % 5 != 0 { ready.insert(job.id, at: job.place) }
            jobs[job.id] = job
        }
        let whole = QueuePositions.of(ready: ready.orderedIDs, jobs: jobs)
        let count = { (state: JobState) in jobs.values.count { $0.state == state } }
        let page = jobs.keys.sorted().filter { _ in random.next() % 3 == 0 }
        let pageOnly = QueuePositions.of(
            page, ready: ready, jobs: jobs, queued: count(.queued), paused: count(.paused))
        #expect(!pageOnly.isEmpty)
        #expect(pageOnly == whole.filter { page.contains($0.key) })
    }

    @Test func withEveryQueuedJobReadyAndNonePausedNoOtherJobIsLookedAt() {
        var jobs = JobTable()
        var ready = ReadyQueue()
        for raw in 1...50 {
            var job = Job(
                id: JobID(UInt64(raw)), spec: JobSpec(source: "/f/\(raw)", destination: "file:///o/"), createdAt: Date()
            )
            job.spec.priority = raw % 2
            jobs[job.id] = job
            ready.insert(job.id, at: job.place)
        }
        let positions = QueuePositions.of([JobID(2), JobID(3)], ready: ready, jobs: jobs, queued: 50, paused: 0)
        // Odd IDs have priority 1 and start first, in ID order; then the even ones.
        #expect(positions == [JobID(3): 2, JobID(2): 26])
    }
}
