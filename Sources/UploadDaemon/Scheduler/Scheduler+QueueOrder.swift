import UploadCore
import UploadWire

/// Where each waiting job stands in the queue (`JobInfo.position`): `list` and `top` sorted by
/// ID, so `move` and priorities changed nothing anyone could see.
extension Scheduler {
    /// Each queued or paused job's place in the start order (`QueuePositions`).
    func queuePositions() -> [JobID: Int] {
        QueuePositions.of(ready: ready.orderedIDs, jobs: store.jobs)
    }

    /// `jobs` with their positions filled in, worked out once for all of them and only when one
    /// of them waits its turn (a list of finished jobs costs no pass over the queue).
    func withPositions(_ infos: consuming [JobInfo]) -> [JobInfo] {
        var jobs = consume infos  // the only reference: the positions are set in place
        // The IDs alone: a filter of the infos first copied 20,000 of them for one big `job.list`.
        let positions = positions(ofWaiting: Array(jobs.lazy.filter(\.state.waitsItsTurn).map(\.id)))
        guard !positions.isEmpty else { return jobs }
        // In place: a page of 10,000 jobs was copied whole for its positions.
        for index in jobs.indices { jobs[index].position = positions[jobs[index].id] }
        return jobs
    }

    /// The positions of `waiting` (queued or paused jobs): for a few (a page, a job) each by a
    /// binary search; for many, one pass over the whole queue.
    func positions(ofWaiting waiting: [JobID]) -> [JobID: Int] {
        guard !waiting.isEmpty else { return [:] }
        return waiting.count < ready.count / 16
            ? QueuePositions.of(
                waiting, ready: ready, jobs: store.jobs, queued: store.count(of: .queued),
                paused: store.count(of: .paused))
            : queuePositions()
    }
}
