import UploadCore
import UploadPlatform
import UploadWire

/// `on_complete` and `on_failure`: a command run when a job ends, as aria2's and Transmission's
/// are. The job's ending record says a hook is due (`Job.hookPending`); a durable record clears it
/// once the hook ran. So a hook cut off by a crash (or a kill before it started) runs after the
/// restart, and one that ran is not run again. A hook runs outside the queue: a slow one holds
/// up nothing but the hooks behind it (`HookQueue`); how it runs is `HookRun`'s.
extension Scheduler {
    /// The command a job's end calls for.
    func hookCommand(for job: Job) -> HookCommand? { HookRun.command(for: job, config: config) }

    /// Marks a job that is about to be journaled as ended (completed or failed) as owing its hook,
    /// in the same record.
    func markEnding(_ job: inout Job) {
        guard job.state == .completed || job.state == .failed, store.jobs[job.id]?.state != job.state else { return }
        job.hookPending = hookCommand(for: job) != nil
    }

    /// After a job's ending record is journaled: its hook, and its batch's notification.
    func jobEnded(_ job: Job) {
        if job.hookPending, hooks.owe(job.id) { startHooks() }
        noteBatchProgress(of: job)
    }

    /// Runs, after a restart, the hooks the last run owed.
    func runOwedHooks(_ ids: [JobID]) {
        for id in ids.sorted() { hooks.owe(id) }
        startHooks()
    }

    private func startHooks() {
        while !stopping, let id = hooks.next() {
            guard let job = store.jobs[id], job.hookPending, let command = hookCommand(for: job) else {
                hooks.ended(id)
                continue
            }
            CrashPoint.hookDue.reached()
            let run = HookRun(job, command: command)
            let (environment, timeout) = (dependencies.environment, config.hooks.timeout)
            Task {
                let outcome = await run.run(environment: environment, timeout: timeout)
                await self.hookEnded(run, outcome: outcome)
            }
        }
    }

    private func hookEnded(_ run: HookRun, outcome: Result<HelperProcess.Outcome, any Error>) async {
        let id = run.job.id
        hooks.ended(id)
        defer { startHooks() }
        let (level, summary) = run.summary(of: outcome)
        guard var job = store.jobs[id] else {
            Log.notice("job \(id) (removed): \(summary)")
            return
        }
        Log.job(level, JobLogContext(job), summary)
        guard !stopping else { return }  // the daemon's stop killed it: it runs again at the next start
        job.hookPending = false
        if let refusal = run.url.refusal { job.record(refusal, at: dependencies.now()) }
        job.record(String(summary.prefix(300)), at: dependencies.now())
        do {
            // Durable: a hook that ran must not run again after a crash.
            try await waitUntilDurable(store.saveDurably(job))
            announce(job)
        } catch {
            Log.error("job \(id): cannot journal that its hook ran: \(error); it may run again after a restart")
        }
    }
}
