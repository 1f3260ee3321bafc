import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// Running transfer attempts: start, progress, and the outcome fed back into the state machine.
extension Scheduler {
    func startAttempt(_ queued: Job) {
        var job = queued
        // The target, and its transfer unless `auto` must probe the server first: made once,
        // here, so that a destination no transfer can serve fails before the attempt starts.
        let resolved = Result { () throws -> (ResolvedTarget, (any Transfer)?) in
            let target = try TargetResolver(
                config: config, environment: dependencies.environment, umask: dependencies.umask
            )
            .resolve(job)
            let transfer =
                target.needsProbe ? nil : try dependencies.makeTransfer(target.uploadProtocol, dependencies.http)
            return (target, transfer)
        }
        if case .success(let (target, _)) = resolved, let reason = conditions.holdReason(for: target) {
            hold(job, reason)
            return
        }
        job.start(at: dependencies.now())
        let target: ResolvedTarget
        let transfer: (any Transfer)?
        switch resolved {
        case .success(let value):
            (target, transfer) = value
        case .failure(let error):
            finishWithoutTransfer(job, failure: error)
            return
        }
        if job.resolvedProtocol == nil && !target.needsProbe { job.resolvedProtocol = target.uploadProtocol }
        job.record(
            "attempt \(job.attempts) started (\(target.needsProbe ? "auto" : target.uploadProtocol.rawValue))",
            at: dependencies.now())
        Log.job(.debug, JobLogContext(job), job.lastEvent?.message ?? "started")
        // The "running" record is what counts a crash against the job at the next start. The
        // crash marker lists the jobs in `RunningJobs` too, so it may wait for the journal's
        // next write, and the job's next record may replace it; with no room there, it is
        // written at once.
        let crashSlot = RunningJobs.add(job.id)
        if crashSlot == nil {
            store.saveSoon(job)
        } else {
            store.saveStart(job, writeWithin: dependencies.startRecordDelay)
        }
        announce(job)

        let meter = ProgressMeter()
        let id = job.id
        let startedJob = job
        let makeTransfer = dependencies.makeTransfer
        let http = dependencies.http
        let reachability = dependencies.reachability
        let growing = growingCopy(of: id)
        // A small file's upload over the network is a request or two: on the HTTP thread, it hands
        // them over and hears their answers without waking another thread each time (and the
        // scheduler's work for its end runs there too). Not `file://`: its copy and fsyncs would
        // hold up every other transfer.
        let executor =
            job.bytesLeft <= TransferSlots.smallFile && TransferRegistry.entry(target.uploadProtocol).usesNetwork
            ? dependencies.smallAttemptExecutor : nil
        let run = AttemptRun(
            job: startedJob, growing: growing, target: target, transfer: transfer, meter: meter, http: http,
            makeTransfer: { try makeTransfer($0, http) }, reachability: reachability, probeAnswers: probeAnswers,
            queue: AttemptRun.Queue(
                protocolResolved: { [weak self] in await self?.protocolResolved(id, $0, $1) },
                untilSaved: { [weak self] in await self?.untilSaved(id) },
                commit: { [weak self] acked, checkpoint, durable in
                    try await self?.commitProgress(id, bytesAcked: acked, checkpoint: checkpoint, durable: durable)
                },
                note: { [weak self] message in await self?.note(id, message) }))
        let task = Task(executorPreference: executor) { [weak self] in
            // Held for the attempt's length: its progress and its end must reach the queue.
            guard let self else { return }
            let outcome = await run.run()
            await self.attemptEnded(id, outcome: outcome)
        }
        running[id] = RunningAttempt(
            task: task, meter: meter, ackedAtStart: job.bytesAcked, target: target, bytesLeft: job.bytesLeft,
            crashSlot: crashSlot, isSuspect: job.crashes > 0, server: server(of: job),
            paceMark: (.now, 0))
    }

    /// The protocol `auto` chose for an http destination, journaled so later attempts keep it.
    func protocolResolved(_ id: JobID, _ uploadProtocol: UploadProtocol, _ why: String) {
        guard var job = store.jobs[id] else { return }
        job.resolvedProtocol = uploadProtocol
        job.record(why, at: dependencies.now())
        store.saveSoon(job)
    }

    /// Journals bytes the server has committed, and the protocol's checkpoint.
    func commitProgress(_ id: JobID, bytesAcked: Int64, checkpoint: Checkpoint?, durable: Bool) async throws {
        guard let job = store.jobs[id], job.state == .running else { throw CancellationError() }
        let progress = JobProgress(id: id, bytesAcked: max(bytesAcked, 0), checkpoint: checkpoint)
        store.apply(.progress(progress))
        if durable {
            try await waitUntilDurable(store.saveDurably([.progress(progress)]))
        } else {
            store.saveSoon([.progress(progress)])
        }
    }

    /// A transfer's remark for the job's history.
    func note(_ id: JobID, _ message: String) {
        guard var job = store.jobs[id] else { return }
        job.record(message, at: dependencies.now())
        store.saveSoon(job)
        Log.job(.notice, JobLogContext(job), message)
    }

    /// How long the end of an upload may wait for others' to share one fdatasync (only while other
    /// uploads run: a lone upload's end is synced at once). Each sync has a cost of its own (the
    /// file system's commit, and in a VM an exit to the host): 20,000 small files ending within two
    /// seconds took ~550 syncs with 5 ms and ~165 with 20 ms, with a fifth fewer context switches.
    /// An end is heard of at most 20 ms later.
    static let sharedSyncDelay: Duration = .milliseconds(20)

    /// An attempt ended: feed its outcome to the job's state machine and find more work.
    func attemptEnded(_ id: JobID, outcome: AttemptOutcome?) async {
        guard let attempt = running.removeValue(forKey: id) else { return }
        if let slot = attempt.crashSlot { RunningJobs.remove(slot) }
        defer { fillSlots() }
        guard var job = store.jobs[id] else { return }
        guard let outcome else {
            // Stopped on purpose: the daemon survived this attempt.
            if job.crashes > 0 {
                job.crashes = 0
                store.saveSoon(job)
            }
            // A job paused and resumed meanwhile is queued again: let it start.
            enqueue(job)
            return
        }
        let madeProgress = job.bytesAcked > attempt.ackedAtStart
        let effects = job.finishAttempt(
            outcome, madeProgress: madeProgress, policy: config.retry, at: dependencies.now())
        guard !effects.isEmpty else { return }
        logOutcome(job)
        if case .noNetwork = outcome {
            // Held until the network changes (`networkChanged`), not retried on a timer.
            store.saveSoon(job)
            waiting[id] = .network
            announce(job)
            return
        }
        guard job.state.isTerminal else {
            // Queued for a retry, which may start at once: its record goes into the journal now,
            // before the new attempt's own, so that the file keeps the order of what happened.
            store.saveSoon(job)
            announce(job)
            enqueue(job)
            return
        }
        // The next job starts while this one's final state is being synced (nothing can start
        // this one again: it is done).
        markEnding(&job)
        store.apply(.job(job))
        // Failed for good: what the server holds of the upload (a tus upload, an S3 multipart
        // upload) is dropped in the background, after this end in the journal; the job keeps its
        // checkpoint until the server has let go, and a resume then starts over.
        if effects.contains(.discardServerUpload), job.state == .failed, job.checkpoint != nil {
            discardPartialUpload(of: job, thenForget: false)
        }
        // With other uploads running, more ends are coming: this one's sync waits a moment to share
        // theirs (small files end hundreds of times a second). Its slot is free already.
        let ticket = store.saveDurably([.job(job)], within: running.isEmpty ? .zero : Self.sharedSyncDelay)
        fillSlots()
        endsAwaitingSync.append(
            EndAwaitingSync(ticket: ticket, job: job, deletesCachedFile: effects.contains(.deleteCachedFile)))
        // One ended attempt sees every end through, in order: the ends that shared a sync are
        // done in one turn, not each in its own after a hop from the journal's thread.
        guard !finishingEnds else { return }
        await finishEndsAwaitingSync()
    }

    /// Announces each end once its record is on disk, and only then deletes its cached copy (before
    /// the sync, a crash would bring the job back without its bytes): `wait` returning 0 means it
    /// stays done. The ends whose records shared the sync are seen through in the same turn, and
    /// announced together.
    private func finishEndsAwaitingSync() async {
        finishingEnds = true
        defer { finishingEnds = false }
        while let oldest = endsAwaitingSync.first {
            let synced = await durability(of: oldest.ticket)
            announcingTogether {
                var outcome: Result<Void, any Error>? = synced
                while let end = endsAwaitingSync.first, let known = outcome ?? knownDurability(of: end.ticket) {
                    endsAwaitingSync.removeFirst()
                    outcome = nil
                    finish(end, synced: known)
                }
            }
        }
    }

    private func finish(_ end: EndAwaitingSync, synced: Result<Void, any Error>) {
        do {
            try synced.get()
            if end.deletesCachedFile { dependencies.snapshots.discardFiles(of: end.job) }
            announce(end.job)
            folderJobEnded(end.job)  // durable: a watched folder's `after` may act on the file
        } catch {
            Log.error("job \(end.job.id): cannot journal its new state: \(error)")
        }
        jobEnded(end.job)
    }

    /// The attempt could not even start (unknown remote, unsupported protocol): the same rules apply.
    private func finishWithoutTransfer(_ started: Job, failure: any Error) {
        var job = started
        let transferFailure = failure as? TransferFailure ?? .config("\(failure)")
        _ = job.finishAttempt(
            .failed(
                transferFailure.error, retryable: transferFailure.retryable, retryAfter: transferFailure.retryAfter),
            madeProgress: false, policy: config.retry, at: dependencies.now())
        logOutcome(job)
        markEnding(&job)
        store.saveSoon(job)
        announce(job)
        enqueue(job)
        jobEnded(job)
    }

    private func logOutcome(_ job: Job) {
        let context = JobLogContext(job)
        switch job.state {
        case .completed:
            Log.job(
                .info, context,
                "completed: \(job.spec.source) -> \(job.result?.url ?? Redaction.redactURL(job.spec.destination))")
        case .failed:
            Log.job(.warning, context, "failed: \(job.error?.message ?? "unknown error")")
        case .queued:
            Log.job(.notice, context, job.lastEvent?.message ?? "retrying")
        default:
            break
        }
    }
}
