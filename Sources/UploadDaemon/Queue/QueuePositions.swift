import UploadCore
import UploadWire

/// Each queued or paused job's place in the start order, 1 for the next to start. The ready
/// queue is the order jobs really start in; the jobs outside it (waiting for a retry, the network,
/// their preparation, or paused) keep the place they go back to, so they are merged in by that
/// same order.
enum QueuePositions {
    static func of(ready order: [JobID], jobs: [JobID: Job]) -> [JobID: Int] {
        let readyIDs = order.filter { jobs[$0]?.state == .queued }
        let inReady = Set(readyIDs)
        let others = jobs.values.filter { job in
            (job.state == .queued || job.state == .paused) && !inReady.contains(job.id)
        }.map { (id: $0.id, place: $0.place) }.sorted(by: QueuePlace.startsBefore)
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
}
