import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// `job.add`: files checked, copied and journaled as jobs, in the order the clients sent them.
extension Scheduler {
    /// Adds a job: checks and snapshots the source, journals the job durably, then answers.
    func add(_ params: AddParams, turn: AddTurn? = nil) async throws(RPCError) -> JobInfo {
        try await add([params], turn: turn)[0].get()
    }

    /// Adds several jobs, as one `add` of many files does: each is checked and snapshotted (several
    /// at once), the jobs that can be added get their IDs in the order given and are journaled in
    /// one durable write, and they queue in that order. Each gets its own answer: one bad file
    /// does not stop the others. Adds of one client running at once take their IDs in the order
    /// its lines were read (`turn`, from `AddTurns`); those of different clients do not wait for
    /// each other. The turn ends once the IDs are handed out.
    ///
    /// The phases, each a method below, in order: the requests, the sources, the IDs, the copies,
    /// saving the copies, the journal, the answers. A request that fails a phase has its answer
    /// and goes no further.
    ///
    /// `startsOneBatch`: the requests that say `new_batch` start one batch together (the first
    /// one added starts it), as the files of one `job.add` of `sources` do.
    func add(
        _ batch: [AddParams], turn: AddTurn? = nil, origin: AddRun.FolderOrigin? = nil, startsOneBatch: Bool = false
    ) async -> [Result<JobInfo, RPCError>] {
        var run = AddRun(batch, folder: origin)
        run.startsOneBatch = startsOneBatch
        checkRequests(&run)
        // Checked before IDs are handed out, so a mistyped path leaves no gap in the IDs.
        let originals = await run.checkSources(dependencies.snapshots)
        await turn?.wait()
        assignIDs(&run, originals: originals)
        turn?.end()
        await run.makeCopies(dependencies.snapshots, now: dependencies.now)
        await run.saveCopies(dependencies.snapshots)
        if !run.jobs.isEmpty { await journalAndQueue(&run) }
        return await answers(run)
    }

    /// Phase 1: each request's spec, as the config completes it; repeats of an add already made
    /// (by client token) are answered by that add.
    private func checkRequests(_ run: inout AddRun) {
        var tokensInBatch: [String: (index: Int, spec: JobSpec)] = [:]
        for (index, params) in run.batch.enumerated() {
            do throws(RPCError) {
                var spec = try JobSpecBuilder.build(params)
                spec.batch = try checkedBatch(params)
                config.applyRemoteDefaults(&spec)
                try config.check(spec, preparer: preparer)
                if let token = spec.clientToken {
                    if let existing = try jobAlreadyAdded(for: spec) {
                        run.answeredBy.append((index, existing))
                        continue
                    }
                    if let first = tokensInBatch[token] {
                        try spec.checkSameAdd(as: first.spec, token: token, job: nil)
                        run.sameTokenAs.append((index, first.index))
                        continue
                    }
                    tokensInBatch[token] = (index, spec)
                }
                guard !stopping else {
                    throw RPCError(
                        code: RPCError.shuttingDownCode,
                        message: "uploadd is stopping; add the file again once it is back")
                }
                run.pending.append((index, spec))
            } catch {
                run.results[index] = .failure(error)
            }
        }
    }

    /// Phase 3, in the client's turn: IDs, in the order the files were given.
    private func assignIDs(_ run: inout AddRun, originals: [Result<SourceSnapshot, any Error>]) {
        for (item, outcome) in zip(run.pending, originals) {
            switch outcome {
            case .success(let original):
                var spec = item.spec
                if run.batch[item.index].newBatch == true {
                    if run.startsOneBatch, let started = run.startedBatch {
                        spec.batch = started
                    } else {
                        spec.batch = JobID(reservedNextID)
                        knownBatches.insert(JobID(reservedNextID))
                        run.startedBatch = spec.batch
                    }
                }
                if var folder = run.folder {
                    if folder.batch == nil {
                        folder.batch = JobID(reservedNextID)
                        knownBatches.insert(JobID(reservedNextID))
                        run.folder = folder
                    }
                    spec.folder = folder.name
                    spec.folderAfter = folder.after
                    spec.batch = folder.batch
                }
                addOptions.share(&spec)
                run.accepted.append((item.index, spec, original, JobID(reservedNextID)))
                reservedNextID += 1
            case .failure(let error):
                run.results[item.index] = .failure(
                    RPCError(
                        code: RPCError.sourceErrorCode,
                        message: (error as? TransferFailure)?.error.message ?? "\(error)"))
            }
        }
        addOptions.forgetSecrets()
    }

    /// Phase 6: the jobs in memory and in the journal, in one durable write, then in the queue.
    private func journalAndQueue(_ run: inout AddRun) async {
        let jobs = run.jobs
        for (_, job) in jobs {
            store.apply(.job(job))
            if let token = job.spec.clientToken { clientTokens[token] = job.id }
        }
        holdUntilSaved(run.growingCopies)
        do {
            try await announceOnceSaved(jobs.map(\.job), store.saveDurably(jobs.map { .job($0.job) }))
        } catch {
            for (index, job) in jobs {
                _ = forgetInMemory(job)
                store.undoAdd(job.id)
                dependencies.snapshots.discardFiles(of: job)
                run.results[index] = .failure(
                    RPCError(code: RPCError.noSpaceCode, message: "cannot journal the new job: \(error)"))
            }
            return
        }
        // One line for an add of many files (each job's own line at debug); one add of a
        // thousand photos is not a thousand lines in the user's journal.
        let eachLevel: LogLevel = jobs.count == 1 ? .info : .debug
        for (index, job) in jobs {
            enqueue(job)
            Log.job(
                eachLevel, JobLogContext(job),
                "added: \(job.spec.source) -> \(Redaction.redactURL(job.spec.destination))")
            run.results[index] = .success(info(for: store.jobs[job.id] ?? job))
        }
        if jobs.count > 1, let first = jobs.first?.job, let last = jobs.last?.job {
            Log.info(
                "added \(jobs.count) jobs (\(first.id) to \(last.id)): \(first.spec.source) -> \(Redaction.redactURL(first.spec.destination)), and \(jobs.count - 1) more"
            )
        }
        fillSlots()
    }

    /// Phase 7: the answers, in the order asked. A job whose copy is made alongside answers once
    /// it is saved, and so do repeats of an earlier add.
    private func answers(_ run: AddRun) async -> [Result<JobInfo, RPCError>] {
        var results = run.results
        for (index, job) in run.jobs where run.growingCopies[job.id] != nil {
            guard case .success? = results[index] else { continue }
            results[index] = await answer(job.id)
        }
        for (index, id) in run.answeredBy { results[index] = await answer(id) }
        for (index, first) in run.sameTokenAs { results[index] = results[first] }
        return results.map { $0 ?? .failure(RPCError(code: RPCError.internalErrorCode, message: "not added")) }
    }

    /// The answer to an add of job `id`, once its copy is saved (at once for most jobs).
    private func answer(_ id: JobID) async -> Result<JobInfo, RPCError> {
        if let failure = await untilSaved(id) { return .failure(failure) }
        guard let job = store.jobs[id] else {
            return .failure(
                RPCError(
                    code: RPCError.invalidTransitionCode, message: "job \(id) was removed before its add was answered"))
        }
        return .success(info(for: job))
    }

    /// The batch a job joins: one named must have been started (its first job's ID).
    private func checkedBatch(_ params: AddParams) throws(RPCError) -> JobID? {
        guard let batch = params.batch else { return nil }
        guard params.newBatch != true else {
            throw RPCError.invalidParams("give either batch (to join one) or new_batch (to start one), not both")
        }
        guard knownBatches.contains(batch) else {
            throw RPCError.invalidParams(
                "there is no batch \(batch): start one with new_batch, then give its first job's ID as batch")
        }
        return batch
    }
}
