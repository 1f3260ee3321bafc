import UploadCore
import UploadWire

/// Each queued or paused job's place in the start order, 1 for the next to start. The ready
/// queue is the order jobs really start in; the jobs outside it (waiting for a retry, the network,
/// their preparation, or paused) keep the place they go back to, so they are merged in by that
/// same order.
enum QueuePositions {
    /// The positions of `ids` alone (those queued or paused): what a page of `job.list` needs. A
    /// job's position is 1 + the ready jobs that start before it (a binary search in the ready
    /// queue) + the other waiting jobs that do; those others are found by a pass over the jobs
    /// only when the counts say there are any. With a million jobs queued, each page of 10,000
    /// worked out all million positions: `job.list` in pages took 149 s.
    static func of(
        _ ids: [JobID], ready: ReadyQueue, jobs: JobTable, queued: Int, paused: Int
    ) -> [JobID: Int] {
        let waiting = ids.compactMap { id in
            jobs[id].flatMap { $0.state.waitsItsTurn ? (id: id, place: $0.place) : nil }
        }
        guard !waiting.isEmpty else { return [:] }
        // Queued jobs outside the ready queue (a retry, the network, a preparation) and paused ones.
        // None when the counts say so: this leans on the ready queue holding queued jobs only
        // (`Scheduler.makeReady` takes no other, and a job leaving `queued` leaves the queue).
        let others = queued == ready.count && paused == 0 ? [] : othersWaiting(outside: ready.contains, in: jobs)
        var positions: [JobID: Int] = [:]
        positions.reserveCapacity(waiting.count)
        for job in waiting {
            var low = 0  // how many of `others` start before the job: a binary search
            var high = others.count
            while low < high {
                let middle = (low + high) / 2
                if QueuePlace.startsBefore(others[middle], job) { low = middle + 1 } else { high = middle }
            }
            let othersBefore = low
            positions[job.id] = ready.countStartingBefore(job.id, at: job.place) + othersBefore + 1
        }
        return positions
    }

    static func of(ready order: [JobID], jobs: JobTable) -> [JobID: Int] {
        let readyIDs = order.filter { jobs[$0]?.state == .queued }
        let inReady = Set(readyIDs)
        let others = othersWaiting(outside: inReady.contains, in: jobs)
        var positions: [JobID: Int] = [:]
        positions.reserveCapacity(readyIDs.count + others.count)
        var readyIndex = 0
        var otherIndex = 0
        while readyIndex < readyIDs.count || otherIndex < others.count {
            let takeReady: Bool
            if readyIndex == readyIDs.count {
                takeReady = false
            } else if otherIndex == others.count {
                takeReady = true
            } else {
                let readyJob = (id: readyIDs[readyIndex], place: jobs[readyIDs[readyIndex]]!.place)
                takeReady = !QueuePlace.startsBefore(others[otherIndex], readyJob)
            }
            let id = takeReady ? readyIDs[readyIndex] : others[otherIndex].id
            if takeReady { readyIndex += 1 } else { otherIndex += 1 }
            positions[id] = positions.count + 1
        }
        return positions
    }

    /// The queued and paused jobs that are not in the ready queue, in the queue's order.
    private static func othersWaiting(outside inReady: (JobID) -> Bool, in jobs: JobTable) -> [(
        id: JobID, place: QueuePlace
    )] {
        jobs.values.filter { job in job.state.waitsItsTurn && !inReady(job.id) }
            .map { (id: $0.id, place: $0.place) }.sorted(by: QueuePlace.startsBefore)
    }
}
