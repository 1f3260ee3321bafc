import UploadCore

/// What the scheduler knows of a job beyond the job itself, for its public view (`JobActivity`).
extension Scheduler {
    func facts(of job: Job) -> JobActivity.Facts {
        JobActivity.Facts(
            meter: running[job.id]?.meter, waiting: waiting[job.id], preparing: preparing[job.id] != nil,
            now: dependencies.now)
    }

}
