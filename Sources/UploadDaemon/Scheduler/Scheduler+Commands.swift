import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// What the control socket asks of the queue.
extension Scheduler {
    /// pause, resume, cancel or remove one job: its error when it cannot.
    func perform(_ command: JobCommand, selection: JobSelection) async throws(RPCError) -> [JobInfo] {
        let outcome = try await performEach(command, selection: selection)
        if let failure = outcome.errors.first { throw RPCError(code: failure.code, message: failure.message) }
        return outcome.jobs
    }

    /// pause, resume, cancel or remove each named job that can be (as `kill` and
    /// transmission-remote do): the jobs acted on, and for each other one, why not.
    func performEach(_ command: JobCommand, selection: JobSelection) async throws(RPCError)
        -> (jobs: [JobInfo], errors: [JobFailure])
    {
        let ids = try selection.ids(for: command, in: store.jobs)
        let now = dependencies.now()
        var planned: [(Job, JobEffects)] = []
        var errors: [JobFailure] = []
        for id in ids {
            guard var job = store.jobs[id] else {
                errors.append(JobFailure(id: id, error: RPCError.jobNotFound(id)))
                continue
            }
            do {
                let effects = try job.apply(command, at: now)
                // Nothing changes (pausing a paused job): nothing to journal or log.
                if effects.isEmpty && job == store.jobs[id] { continue }
                planned.append((job, effects))
            } catch {
                errors.append(
                    JobFailure(
                        id: id, error: RPCError(code: RPCError.invalidTransitionCode, message: error.description)))
            }
        }
        let unchanged = ids.filter { id in
            !planned.contains { $0.0.id == id } && !errors.contains { $0.id == id }
        }.compactMap { store.jobs[$0] }
        // Every job changes in this one actor turn (transfers stopped, queues updated, memory
        // applied) before the single durable write, so no job can start in between.
        var records: [JournalRecord] = []
        var applied: [Job] = []
        for (job, effects) in planned {
            records.append(applyInMemory(effects, for: job))
            applied.append(store.jobs[job.id] ?? job)
            Log.job(.info, JobLogContext(job), effects.contains(.forget) ? "removed" : job.state.rawValue)
        }
        if !records.isEmpty {
            // Queued for the disk in this turn, before a job this resumed can start (and journal
            // its start), so the file keeps the order of what happened.
            let ticket = store.saveDurably(records)
            if planned.contains(where: { $0.1.contains(.reschedule) }) { fillSlots() }
            do {
                try await announceOnceSaved(planned.map(\.0), ticket)
            } catch {
                throw RPCError.appliedButNotSaved(
                    "\(command.rawValue) \(RPCError.describe(planned.map(\.0.id)))", error)
            }
        }
        for (job, effects) in planned where effects.contains(.deleteCachedFile) {
            dependencies.snapshots.discardFiles(of: job)
        }
        let acted = applied + unchanged
        let order = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        return (acted.sorted { order[$0.id, default: 0] < order[$1.id, default: 0] }.map { info(for: $0) }, errors)
    }

    /// Sets a job's priority: queued jobs take their new place in the queue at once (a running
    /// transfer is not interrupted). Journaled, so the order survives a restart.
    func setPriority(_ id: JobID, to priority: Int) async throws(RPCError) -> JobInfo {
        guard (-1000...1000).contains(priority) else {
            throw RPCError.invalidParams("priority must be from -1000 to 1000")
        }
        guard var job = store.jobs[id] else { throw RPCError.jobNotFound(id) }
        let old = job.spec.priority
        guard old != priority else { return info(for: job) }
        job.spec.priority = priority
        job.record("priority \(old) → \(priority)", at: dependencies.now())
        return try await replace(job, "priority of job \(id)")
    }

    /// Moves a job in the queue: to the top or bottom, or right before or after another job (whose
    /// priority it takes). Paused jobs keep their place too; running and finished ones are not in
    /// the queue. Journaled, so the order survives a restart.
    func move(_ params: MoveParams) async throws(RPCError) -> JobInfo {
        let targets = [params.top == true, params.bottom == true, params.before != nil, params.after != nil]
        guard targets.filter({ $0 }).count == 1 else {
            throw RPCError.invalidParams("say where to move the job: exactly one of top, bottom, before or after")
        }
        guard var job = store.jobs[params.id] else { throw RPCError.jobNotFound(params.id) }
        guard job.state.waitsItsTurn else {
            throw RPCError(
                code: RPCError.invalidTransitionCode,
                message: "job \(job.id) is \(job.state.rawValue); only queued and paused jobs have a place in the queue"
            )
        }
        var anchor: Job?
        if let anchorID = params.before ?? params.after {
            guard anchorID != job.id else { throw RPCError.invalidParams("a job cannot move next to itself") }
            guard let found = store.jobs[anchorID] else { throw RPCError.jobNotFound(anchorID) }
            guard found.state.waitsItsTurn else {
                throw RPCError(
                    code: RPCError.invalidTransitionCode,
                    message: "job \(anchorID) is \(found.state.rawValue): it has no place in the queue to move next to"
                )
            }
            anchor = found
        }
        let others = store.jobs.values.filter { $0.state.waitsItsTurn && $0.id != job.id }
        switch QueueMove.plan(job, params, others: others, anchor: anchor) {
        case .renumber(let renumbered):
            for changed in renumbered { _ = try await replace(changed, "the order of the queue") }
            return try await move(params)
        case .place(let priority, let rank, let destination):
            if priority != job.spec.priority {
                job.record("priority \(job.spec.priority) → \(priority)", at: dependencies.now())
            }
            job.spec.priority = priority
            job.rank = rank
            job.record("moved \(destination)", at: dependencies.now())
        }
        return try await replace(job, "the move of job \(job.id)")
    }

    /// Takes a job's new place in the queues and journals it.
    private func replace(_ changed: Job, _ what: String) async throws(RPCError) -> JobInfo {
        guard let current = store.jobs[changed.id] else { throw RPCError.jobNotFound(changed.id) }
        let (wasReady, wasWaitingToPrepare) = (ready.contains(changed.id), toPrepare.contains(changed.id))
        takeOutOfReady(current)
        toPrepare.remove(changed.id, at: current.place)
        if wasReady { makeReady(changed) }
        if wasWaitingToPrepare { toPrepare.insert(changed.id, at: changed.place) }
        store.apply(.job(changed))
        do {
            try await announceOnceSaved([changed], store.saveDurably([.job(changed)]))
        } catch {
            throw RPCError.appliedButNotSaved(what, error)
        }
        fillSlots()
        return info(for: store.jobs[changed.id] ?? changed)
    }

    /// Drops completed, failed and canceled jobs, and their cached files.
    func clear() async throws(RPCError) -> [JobInfo] {
        let finished = store.jobs.values.filter { $0.state.isTerminal }.sorted { $0.id < $1.id }
        let records = finished.map { applyInMemory([.deleteCachedFile, .forget], for: $0) }
        do {
            try await announceOnceSaved(finished, store.saveDurably(records))
        } catch {
            throw RPCError.appliedButNotSaved("clear \(finished.count) finished jobs", error)
        }
        for job in finished { dependencies.snapshots.discardFiles(of: job) }
        HeapTrimmer.trimSoon()
        return finished.map { info(for: $0) }
    }

    /// Removes uploaded files from their servers, then forgets the jobs. Jobs not completed are
    /// removed as `remove` would (their partial uploads are discarded).
    func delete(_ ids: [JobID]) async throws(RPCError) -> [JobInfo] {
        let outcome = try await deleteEach(ids)
        if let failure = outcome.errors.first { throw RPCError(code: failure.code, message: failure.message) }
        return outcome.jobs
    }

    /// Deletes each job's upload from its server and forgets the job; jobs not completed are
    /// removed as `remove` would. Each job that cannot be says why; the others go on.
    func deleteEach(_ ids: [JobID]) async throws(RPCError) -> (jobs: [JobInfo], errors: [JobFailure]) {
        guard !ids.isEmpty else { throw RPCError.invalidParams("name the jobs: {\"id\": N} or {\"ids\": [...]}") }
        var results: [JobInfo] = []
        var errors: [JobFailure] = []
        for id in ids {
            guard let job = store.jobs[id] else {
                errors.append(JobFailure(id: id, error: RPCError.jobNotFound(id)))
                continue
            }
            do throws(RPCError) {
                if job.state == .completed {
                    // With its history, whose last event says whether the server had the file.
                    results.append(info(for: try await deleteUpload(of: job), includeHistory: true))
                } else {
                    results += try await perform(.remove, selection: JobSelection(ids: [id]))
                }
            } catch {
                errors.append(JobFailure(id: id, error: error))
            }
        }
        return (results, errors)
    }

    /// The job as it was forgotten: its last history event says what the server answered.
    private func deleteUpload(of original: Job) async throws(RPCError) -> Job {
        var job = original
        do {
            switch try await serverCleanup.deleteFromServer(job) {
            case .deleted:
                job.record(Self.deletedEvent, at: dependencies.now())
                Log.job(.info, JobLogContext(job), "deleted \(job.result?.url ?? "the upload") from the server")
            case .absent(let status):
                job.record(Self.notOnServerEvent(status), at: dependencies.now())
                Log.job(
                    .info, JobLogContext(job),
                    "\(job.result?.url ?? "the upload") was not on the server (HTTP \(status)): nothing deleted")
            }
        } catch {
            let message = (error as? TransferFailure)?.error.message ?? "\(error)"
            throw RPCError(code: RPCError.invalidTransitionCode, message: "job \(job.id): delete failed: \(message)")
        }
        do {
            // Deleted from the server: a watched folder's `after = delete` must not delete the
            // file too (its entry is `done`, not `uploaded`, owing nothing).
            store.folderActionsOwed.remove(job.id)
            let forgotten = applyInMemory([.deleteCachedFile, .forget], for: job)
            try await announceOnceSaved([job], store.saveDurably([forgotten]))
            dependencies.snapshots.discardFiles(of: job)
        } catch {
            throw RPCError.appliedButNotSaved("delete job \(job.id)", error)
        }
        return job
    }

    /// The history events `job.delete` ends a job's history with (uploadctl prints them).
    static let deletedEvent = "deleted from the server"
    static func notOnServerEvent(_ status: Int) -> String { "it was not on the server (\(status))" }

    /// Acts on a transition's effects in memory, at once, and returns the record to journal.
    private func applyInMemory(_ effects: JobEffects, for planned: Job) -> JournalRecord {
        var job = planned
        if effects.contains(.stopTransfer) { running[job.id]?.task.cancel() }
        // (The cached file is deleted by the caller once this change is durable.)
        let holdsServerUpload = job.checkpoint != nil || running[job.id] != nil
        let discardsServerUpload = effects.contains(.discardServerUpload) && holdsServerUpload
        if effects.contains(.forget), store.heldAdds[job.id] != nil {
            // Never journaled (its copy is not saved): its add is undone now, as `journalable` holds
            // the `.removed` record back, and what the server holds is dropped in the background,
            // with no record to retry it after a crash (as for any add a crash forgets).
            if discardsServerUpload { discardPartialUpload(of: job, thenForget: false) }
            return forgetInMemory(job)
        } else if discardsServerUpload {
            // The server holds a partial upload: the job stays (canceled, with its checkpoint) in the
            // journal until the server has dropped it, so a crash in between retries the discard.
            let forget = effects.contains(.forget)
            if forget, !job.state.isTerminal { _ = try? job.apply(.cancel, at: dependencies.now()) }
            if forget { job.record("removing: the server drops the partial upload first", at: dependencies.now()) }
            discardPartialUpload(of: job, thenForget: forget)
        } else if effects.contains(.forget) {
            return forgetInMemory(job)
        }
        if job.state == .queued { enqueue(job) } else { unqueue(job) }
        store.apply(.job(job))
        return .job(job)
    }

    /// Tells the server to drop what it holds of an unfinished upload, in the background, retrying
    /// a few times; on success the job's checkpoint is cleared (or the job forgotten). A discard that
    /// never succeeded is tried again at the next start.
    func discardPartialUpload(of job: Job, thenForget forget: Bool) {
        let attemptTask = running[job.id]?.task
        let cleanup = serverCleanup
        Task { [weak self] in
            if let attemptTask { await attemptTask.value }
            // The attempt may have journaled a newer checkpoint (a tus URL, an UploadId) as it stopped.
            let latest = await self?.store.jobs[job.id] ?? job
            guard await cleanup.discardPartialUpload(of: latest) else { return }
            await self?.partialUploadDiscarded(job.id, forget: forget, checkpoint: latest.checkpoint)
        }
    }

    /// How the queue asks servers to drop uploads, with the config of this moment.
    var serverCleanup: ServerCleanup {
        ServerCleanup(
            config: config, environment: dependencies.environment, umask: dependencies.umask, http: dependencies.http,
            makeTransfer: dependencies.makeTransfer)
    }

    /// `checkpoint`: the one whose upload the server dropped. A failed job resumed meanwhile may
    /// be running with it, or with a new upload's: either way its checkpoint is its attempt's now.
    private func partialUploadDiscarded(_ id: JobID, forget: Bool, checkpoint: Checkpoint?) async {
        guard var job = store.jobs[id] else { return }
        let record: JournalRecord
        if forget {
            record = forgetInMemory(job)
        } else {
            guard job.state == .canceled || job.state == .failed, job.checkpoint == checkpoint else { return }
            job.checkpoint = nil
            if job.state == .failed {
                job.record(
                    "let go of the partial upload on the server (dropped where the server allows it); resume or retry uploads the file from the start",
                    at: dependencies.now())
            }
            store.apply(.job(job))
            record = .job(job)
        }
        do {
            try await announceOnceSaved(forget ? [] : [job], store.saveDurably([record]))
        } catch {
            Log.error("job \(id): cannot journal that the partial upload is gone: \(error)")
        }
    }

    /// Limits all uploads together to `rate` bytes per second (nil: no limit), shared equally among
    /// the running ones; they follow within a second. Kept across restarts until changed.
    func setBandwidthLimit(_ rate: Int64?) throws(RPCError) -> Int64? {
        try dependencies.bandwidthLimitFile?.keep(rate)
        bandwidthLimit = rate
        dependencies.applyBandwidthLimit(rate)
        Log.info(rate.map { "bandwidth limit: \(ByteSize.formatRate(Double($0)))" } ?? "bandwidth limit: off")
        reportStatusIfChanged()
        return rate
    }
}
