import UploadCore
import UploadWire

/// Where each waiting job stands in the queue (`JobInfo.position`): `list` and `top` sorted by
/// ID, so `move` and priorities changed nothing anyone could see.
extension Scheduler {
    /// Each queued or paused job's place in the start order, 1 for the next to start. The ready
    /// queue is the order jobs really start in; the jobs outside it (waiting for a retry, the
    /// network, their preparation, or paused) keep the place they go back to, so they are merged
    /// in by that same order.
    func queuePositions() -> [JobID: Int] {
        let readyIDs = ready.orderedIDs.filter { store.jobs[$0]?.state == .queued }
        let inReady = Set(readyIDs)
        let others = store.jobs.values.filter { job in
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
                let readyJob = (id: readyIDs[readyIndex], place: store.jobs[readyIDs[readyIndex]]!.place)
                takeReady = !QueuePlace.startsBefore(others[otherIndex], readyJob)
            }
            let id = takeReady ? readyIDs[readyIndex] : others[otherIndex].id
            if takeReady { readyIndex += 1 } else { otherIndex += 1 }
            positions[id] = positions.count + 1
        }
        return positions
    }

    /// `jobs` with their positions filled in, worked out once for all of them and only when one
    /// of them waits its turn (a list of finished jobs costs no pass over the queue).
    func withPositions(_ jobs: [JobInfo]) -> [JobInfo] {
        guard jobs.contains(where: { $0.state == .queued || $0.state == .paused }) else { return jobs }
        let positions = queuePositions()
        return jobs.map { job in
            var job = job
            job.position = positions[job.id]
            return job
        }
    }
}
