import UploadCore
import UploadWire

/// What `job.list` asks of the jobs in memory.
extension JobStore {
    /// The jobs named by `ids` (in that order), or all by ID, that `job.list`'s filters pick.
    func jobs(ids: [JobID]?, states: [JobState]?, batch: JobID?, after: JobID?) -> [Job] {
        let wanted = states.map(Set.init)
        let chosen = ids.map { $0.compactMap { jobs[$0] } } ?? Array(jobs.values)  // by ID
        return chosen.filter { job in
            Self.picks(job, states: wanted, batch: batch) && (after.map { job.id > $0 } ?? true)
        }
    }

    /// Whether `job.list`'s filters pick the job: in one of `states` and of `batch`, when given.
    static func picks(_ job: Job, states: Set<JobState>?, batch: JobID?) -> Bool {
        (states?.contains(job.state) ?? true) && (batch == nil || job.spec.batch == batch)
    }

    /// One page of `job.list`: the first `limit` IDs after `after` of jobs in `states` and
    /// `batch`, and the `after` of the next page when more follow. A walk over the IDs from
    /// `after` to the page's end (the table gives them in order), and memory for the page only,
    /// whatever the size of the queue: a page no longer walks past the million IDs before it.
    func page(states: [JobState]?, batch: JobID?, after: JobID?, limit: Int) -> (ids: [JobID], next: JobID?) {
        let wanted = states.map(Set.init)
        // One more than the page: whether a next page exists.
        var first = SmallestValues<JobID>(capacity: limit + 1)
        // The IDs alone, and a job looked at only when its ID would make the page: a page of a
        // million jobs took ~60 ms copying each job out of the table, most of them past the page.
        // Once the page is full, every ID left is past it.
        let jobs = self.jobs
        for id in jobs.keys(after: after) {
            guard first.wouldKeep(id) else { break }
            if wanted != nil || batch != nil {
                guard let job = jobs[id], Self.picks(job, states: wanted, batch: batch) else { continue }
            }
            first.offer(id)
        }
        var ids = first.sorted()
        let more = ids.count > limit
        if more { ids.removeLast() }
        return (ids, more ? ids.last : nil)
    }
}
