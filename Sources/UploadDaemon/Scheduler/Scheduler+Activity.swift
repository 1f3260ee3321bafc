import UploadCore

/// What the scheduler knows of a job beyond the job itself, for its public view (`JobActivity`).
extension Scheduler {
    func facts(of job: Job) -> JobActivity.Facts {
        // Most jobs wait for nothing and are prepared by no one: those two are looked up only
        // when something is in them (a lookup hashes the ID, and this is asked at every event).
        JobActivity.Facts(
            meter: running[job.id]?.meter, waiting: waiting.isEmpty ? nil : waiting[job.id],
            preparing: !preparing.isEmpty && preparing[job.id] != nil, now: dependencies.now)
    }

}
