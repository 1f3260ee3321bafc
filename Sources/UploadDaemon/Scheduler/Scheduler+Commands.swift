import Foundation
import UploadCore

/// What the control socket asks of the queue.
extension Scheduler {
    /// Adds a job: checks and snapshots the source, journals the job durably, then answers.
    func add(_ params: AddParams) async throws(RPCError) -> JobInfo {
        let spec = try JobSpecBuilder.build(params)
        if let token = spec.clientToken, let existing = clientTokens[token], let job = store.jobs[existing] {
            return info(for: job)
        }
        guard !stopping else { throw RPCError(code: RPCError.shuttingDownCode, message: "uploadd is stopping; add the file again once it is back") }
        let snapshots = dependencies.snapshots
        let source = spec.source
        let original: SourceSnapshot
        do {
            // Checked before an ID is handed out, so a mistyped path does not leave a gap in the IDs.
            original = try await Blocking.run { try snapshots.original(of: source) }
        } catch {
            throw RPCError(code: RPCError.sourceErrorCode, message: (error as? TransferFailure)?.error.message ?? "\(error)")
        }
        let id = JobID(reservedNextID)
        reservedNextID += 1
        let snapshot: SourceSnapshot
        do {
            // Without a copy to make, the file as just checked is the snapshot: one trip to the disk.
            snapshot =
                spec.snapshot == .none
                ? original : try await Blocking.run { try snapshots.snapshot(source: source, id: id, mode: spec.snapshot) }
        } catch let failure as TransferFailure {
            let code = failure.error.code == "no_space" ? RPCError.noSpaceCode : RPCError.sourceErrorCode
            throw RPCError(code: code, message: failure.error.message)
        } catch {
            throw RPCError(code: RPCError.sourceErrorCode, message: "\(error)")
        }
        let now = Date()
        var job = Job(id: id, spec: spec, createdAt: now)
        job.snapshot = snapshot
        job.bytesTotal = snapshot.size
        job.record("added (\(snapshot.kind.rawValue) of \(ByteSize.format(snapshot.size)))", at: now)
        if let token = spec.clientToken { clientTokens[token] = id }
        do {
            try await commit(job, durable: true)
        } catch {
            store.apply(.removed(id))
            if let token = spec.clientToken { clientTokens[token] = nil }
            snapshots.discard(snapshot)
            throw RPCError(code: RPCError.noSpaceCode, message: "cannot journal the new job: \(error)")
        }
        enqueue(job)
        fillSlots()
        Log.job(.info, JobLogContext(job), "added: \(spec.source) -> \(Redaction.redactURL(spec.destination))")
        return info(for: store.jobs[id] ?? job)
    }

    func get(_ id: JobID) throws(RPCError) -> JobInfo {
        guard let job = store.jobs[id] else { throw RPCError.jobNotFound(id) }
        return info(for: job, includeHistory: true)
    }

    func list(states: [JobState]?, ids: [JobID]?) -> [JobInfo] {
        let wanted = states.map(Set.init)
        let chosen: [Job]
        if let ids {
            chosen = ids.compactMap { store.jobs[$0] }
        } else {
            chosen = store.jobs.values.sorted { $0.id < $1.id }
        }
        return chosen.filter { wanted?.contains($0.state) ?? true }.map { info(for: $0) }
    }

    /// pause, resume, cancel or remove: all named jobs or none (an unknown ID or a transition that
    /// makes no sense changes nothing and says which).
    func perform(_ command: JobCommand, selection: JobSelection) async throws(RPCError) -> [JobInfo] {
        let ids: [JobID]
        if selection.all == true {
            guard command == .pause || command == .resume else {
                throw RPCError.invalidParams("'all' works with pause and resume only; name the jobs to \(command.rawValue)")
            }
            let from: Set<JobState> = command == .pause ? [.queued, .running] : [.paused]
            ids = store.jobs.values.filter { from.contains($0.state) }.map(\.id).sorted()
        } else {
            ids = selection.namedIDs
            guard !ids.isEmpty else { throw RPCError.invalidParams("name the jobs: {\"id\": N} or {\"ids\": [...]}") }
        }
        let now = Date()
        var planned: [(Job, JobEffects)] = []
        for id in ids {
            guard var job = store.jobs[id] else { throw RPCError.jobNotFound(id) }
            do {
                let effects = try job.apply(command, at: now)
                planned.append((job, effects))
            } catch {
                throw RPCError(code: RPCError.invalidTransitionCode, message: error.description)
            }
        }
        // Every job changes in this one actor turn (transfers stopped, queues updated, memory
        // applied) before the single durable write, so no job can start in between.
        var records: [JournalRecord] = []
        for (job, effects) in planned {
            records.append(applyInMemory(effects, for: job))
            Log.job(.info, JobLogContext(job), effects.contains(.forget) ? "removed" : job.state.rawValue)
        }
        fillSlots()
        do {
            try await commitDurably(records, announcing: planned.map(\.0))
        } catch {
            throw RPCError(code: RPCError.noSpaceCode, message: "cannot journal the change: \(error)")
        }
        for (job, effects) in planned where effects.contains(.deleteCachedFile) { dependencies.snapshots.discard(job.snapshot) }
        return planned.map { info(for: $0.0) }
    }

    /// Drops completed, failed and canceled jobs, and their cached files.
    func clear() async throws(RPCError) -> [JobInfo] {
        let finished = store.jobs.values.filter { $0.state.isTerminal }.sorted { $0.id < $1.id }
        let records = finished.map { applyInMemory([.deleteCachedFile, .forget], for: $0) }
        do {
            try await commitDurably(records, announcing: finished)
        } catch {
            throw RPCError(code: RPCError.noSpaceCode, message: "cannot journal the change: \(error)")
        }
        for job in finished { dependencies.snapshots.discard(job.snapshot) }
        return finished.map { info(for: $0) }
    }

    /// Removes uploaded files from their servers, then forgets the jobs. Jobs not completed are
    /// removed as `remove` would (their partial uploads are discarded).
    func delete(_ ids: [JobID]) async throws(RPCError) -> [JobInfo] {
        guard !ids.isEmpty else { throw RPCError.invalidParams("name the jobs: {\"id\": N} or {\"ids\": [...]}") }
        for id in ids where store.jobs[id] == nil { throw RPCError.jobNotFound(id) }
        var results: [JobInfo] = []
        for id in ids {
            guard let job = store.jobs[id] else { continue }
            if job.state == .completed {
                do {
                    let target = try TargetResolver(config: config, environment: dependencies.environment).resolve(job)
                    let transfer = try dependencies.makeTransfer(target.uploadProtocol, dependencies.http)
                    try await transfer.deleteUploaded(job, target: target)
                    Log.job(.info, JobLogContext(job), "deleted \(job.result?.url ?? "the upload") from the server")
                } catch {
                    let message = (error as? TransferFailure)?.error.message ?? "\(error)"
                    throw RPCError(code: RPCError.invalidTransitionCode, message: "job \(id): delete failed: \(message)")
                }
                do {
                    try await commitDurably([applyInMemory([.deleteCachedFile, .forget], for: job)], announcing: [job])
                    dependencies.snapshots.discard(job.snapshot)
                } catch {
                    throw RPCError(code: RPCError.noSpaceCode, message: "cannot journal the change: \(error)")
                }
                results.append(info(for: job))
            } else {
                results += try await perform(.remove, selection: JobSelection(ids: [id]))
            }
        }
        return results
    }

    /// Acts on a transition's effects in memory, at once, and returns the record to journal.
    private func applyInMemory(_ effects: JobEffects, for planned: Job) -> JournalRecord {
        var job = planned
        if effects.contains(.stopTransfer) { running[job.id]?.task.cancel() }
        // (The cached file is deleted by the caller once this change is durable.)
        let holdsServerUpload = job.checkpoint != nil || running[job.id] != nil
        if effects.contains(.discardServerUpload) && holdsServerUpload {
            // The server holds a partial upload: the job stays (canceled, with its checkpoint) in the
            // journal until the server has dropped it, so a crash in between retries the discard.
            let forget = effects.contains(.forget)
            if forget, !job.state.isTerminal { _ = try? job.apply(.cancel, at: Date()) }
            if forget { job.record("removing: the server drops the partial upload first", at: Date()) }
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
        let attempt = running[job.id]
        let environment = dependencies.environment
        let config = config
        let http = dependencies.http
        let makeTransfer = dependencies.makeTransfer
        Task { [weak self] in
            if let task = attempt?.task { await task.value }
            // The attempt may have journaled a newer checkpoint (a tus URL, an UploadId) as it stopped.
            let latest = await self?.store.jobs[job.id] ?? job
            for delay in [0, 1, 4, 15, 60] {
                if delay > 0 { try? await Task.sleep(for: .seconds(delay)) }
                do {
                    let target = try TargetResolver(config: config, environment: environment).resolve(latest)
                    if !target.probeForTus {
                        try await makeTransfer(target.uploadProtocol, http).discardPartialUpload(latest, target: target)
                    }
                    await self?.partialUploadDiscarded(job.id, forget: forget)
                    return
                } catch {
                    Log.job(.warning, JobLogContext(latest), "could not discard the partial upload on the server: \(error)")
                }
            }
        }
    }

    private func partialUploadDiscarded(_ id: JobID, forget: Bool) async {
        guard var job = store.jobs[id] else { return }
        let record: JournalRecord
        if forget {
            record = forgetInMemory(job)
        } else {
            job.checkpoint = nil
            store.apply(.job(job))
            record = .job(job)
        }
        do {
            try await commitDurably([record], announcing: forget ? [] : [job])
        } catch {
            Log.error("job \(id): cannot journal that the partial upload is gone: \(error)")
        }
    }

    func status(socket: String, startedAt: Date, journalDamage: String?, configWarnings: [String]) -> DaemonStatus {
        let counts = stateCounts()
        var byName: [String: Int] = [:]
        for state in JobState.allCases { byName[state.rawValue] = counts[state] ?? 0 }
        return DaemonStatus(
            version: UploaddVersion.string, pid: getpid(), uptime: Date().timeIntervalSince(startedAt), jobs: byName,
            speed: running.values.reduce(0) { $0 + $1.meter.speed }, maxTransfers: config.maxTransfers,
            stateDirectory: (dependencies.journal.path as NSString).deletingLastPathComponent,
            cacheDirectory: (dependencies.snapshots.directory as NSString).deletingLastPathComponent, socket: socket,
            journalBytes: dependencies.journal.fileBytes, journalDamage: journalDamage, configWarnings: configWarnings)
    }
}
