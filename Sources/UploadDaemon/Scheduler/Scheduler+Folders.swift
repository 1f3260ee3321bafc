import UploadCore
import UploadPlatform
import UploadWire

/// Files that watched folders hand over (`FolderWatcher`), added as `job.add` adds them.
extension Scheduler {
    /// The config's watched folders that are not paused, in the order of their sections: the
    /// ones to watch.
    var folderRules: [FolderRule] {
        config.folders.values.filter { pausedFolders[$0.name] == nil }.sorted { $0.line < $1.line }
    }

    /// Adds the files of `rule` that settled and that the folder has not taken yet, with the
    /// identity the watcher checked: the job uploads that file or fails, never another one put in
    /// its place. Jobs carry the folder's name, which with their snapshot's identity is the
    /// folder's durable record of having taken that version of the file.
    ///
    /// Returns the files whose add failed for a reason that may pass (a full disk, an internal error),
    /// for the watcher to look at again later.
    @discardableResult
    func takeFolderFiles(_ rule: FolderRule, _ files: [FolderWatcher.Settled]) async -> [String] {
        guard !stopping, config.folders[rule.name] == rule, pausedFolders[rule.name] == nil else { return [] }
        var fresh = folderIntake.admit(files, folder: rule.name, ledger: store.state.folderLedgers[rule.name]) {
            store.jobs[$0]
        }
        var contents: [FolderFileKey: String] = [:]
        if rule.matchContent, !fresh.isEmpty { (fresh, contents) = await leaveSameContent(fresh, rule) }
        guard !fresh.isEmpty else { return [] }
        let openBatch = folderIntake.openBatch(of: rule.name) { store.unfinishedInBatch[$0] != nil }
        let results = await add(
            fresh.map { rule.addParams(relativePath: $0.relativePath, identity: $0.identity) },
            origin: AddRun.FolderOrigin(name: rule.name, batch: openBatch, after: rule.after.journalText))
        folderIntake.added(fresh, folder: rule.name)
        var taken = 0
        var superseded: [JobID] = []
        var retry: [String] = []
        for (file, result) in zip(fresh, results) {
            switch result {
            case .success(let job):
                taken += 1
                if let sha256 = contents[file.key] {
                    noteContent(sha256, of: file, job: job.id, folder: rule.name)
                }
                if let batch = job.batch { folderIntake.noteBatch(batch, of: rule.name) }
                superseded += olderUnfinishedJobs(
                    at: rule.path + "/" + file.relativePath, than: job.id, folder: rule.name)
            case .failure(let error):
                // A full disk passes; a file that cannot be read (permissions, not a regular
                // file) waits for a change of its own.
                let passing = [RPCError.noSpaceCode, RPCError.internalErrorCode].contains(error.code)
                Log.warning(
                    "[folder \(rule.name)] \(file.relativePath) not taken: \(error.message)"
                        + (passing ? "; tried again later" : ""))
                if passing { retry.append(file.relativePath) }
            }
        }
        if taken > 0 { Log.info("[folder \(rule.name)] took \(taken) file\(taken == 1 ? "" : "s")") }
        await cancelSuperseded(superseded, folder: rule.name)
        // Paused while these were being added: their jobs are paused too.
        if pausedFolders[rule.name] != nil {
            let added = results.compactMap { try? $0.get().id }
            if !added.isEmpty { try? await pauseJobs(added, ofFolder: rule.name) }
        }
        return retry
    }

    /// `match = content`: of the files whose size or modification time is new, those whose content
    /// was taken before (a file touched, or saved again unchanged) are left alone, each with an
    /// entry that says so, so that it is not read again; the others go, with their contents.
    private func leaveSameContent(_ files: [FolderWatcher.Settled], _ rule: FolderRule) async -> (
        [FolderWatcher.Settled], [FolderFileKey: String]
    ) {
        let hashes =
            (try? await Blocking.run {
                files.map { FolderContent.sha256(of: rule.path + "/" + $0.relativePath, rule: rule, expecting: $0) }
            }) ?? []
        var fresh: [FolderWatcher.Settled] = []
        var contents: [FolderFileKey: String] = [:]
        var same: [FolderWatcher.Settled] = []
        var entries: [FolderFile] = []
        let ledger = store.state.folderLedgers[rule.name]
        for (file, sha256) in zip(files, hashes) {
            let key = file.key
            let path = rule.path + "/" + file.relativePath
            guard let sha256 else {
                fresh.append(file)  // unreadable: its add says why
                continue
            }
            if hasUploadedOrWillUpload(ledger?.takes(ofContent: sha256, key: key, path: path) ?? []) {
                same.append(file)
                entries.append(
                    FolderFile(
                        key: key, path: path, size: file.size, modifiedNanoseconds: file.modifiedNanoseconds,
                        state: .done, job: nil, sha256: sha256))
            } else {
                fresh.append(file)
                contents[key] = sha256
            }
        }
        folderIntake.added(same, folder: rule.name)
        if !entries.isEmpty {
            noteFolderEntries(entries, folder: rule.name)
            Log.info(
                "[folder \(rule.name)] \(entries.count) file\(entries.count == 1 ? "" : "s") unchanged in content: left alone"
            )
        }
        return (fresh, contents)
    }

    /// Whether one of these takes of a content uploaded it, or will: its job completed, or has
    /// not ended and holds a copy of it; once its job is gone, its entry says it was uploaded.
    /// A take that failed, was canceled, or uploads from the file itself (which changed since)
    /// does not count: the file goes again.
    private func hasUploadedOrWillUpload(_ takes: [(job: JobID, state: FolderFileState)]) -> Bool {
        takes.contains { take in
            guard let job = store.jobs[take.job] else { return take.state == .done || take.state == .uploaded }
            return job.state == .completed || (!job.state.isTerminal && job.snapshotIsCached)
        }
    }

    /// The content a job took, in the folder's ledger: a later version of the file (or a file
    /// saved at its path) with the same content is left alone.
    private func noteContent(_ sha256: String, of file: FolderWatcher.Settled, job: JobID, folder: String) {
        guard let rule = config.folders[folder], store.jobs[job] != nil else { return }
        let entry = FolderFile(
            key: file.key, path: rule.path + "/" + file.relativePath, size: file.size,
            modifiedNanoseconds: file.modifiedNanoseconds, state: .taken, job: job, sha256: sha256)
        noteFolderEntries([entry], folder: folder)
    }

    /// Applies entries of `folder`'s ledger and saves them, not waited for: a crash that loses
    /// them makes the folder look at those files again (and hash them, or act on them, again).
    func noteFolderEntries(_ entries: [FolderFile], folder: String) {
        let record = JournalRecord.folderFiles(FolderLedgerRecord(folder: folder, files: entries))
        store.apply(record)
        store.saveSoon([record])
    }

    /// The jobs of older versions of the file at `path` (changed in place, or saved anew under
    /// its name) that have not ended: each would upload an older version to the same name,
    /// perhaps after the newer one. By path, not by inode: a new file may get an inode a file
    /// that left the folder had.
    private func olderUnfinishedJobs(at path: String, than newest: JobID, folder: String) -> [JobID] {
        (store.state.folderLedgers[folder]?.unfinishedByPath[path] ?? []).filter { id in
            guard id < newest, let state = store.jobs[id]?.state else { return false }
            return !state.isTerminal
        }
    }

    /// Cancels the jobs of versions a newer version replaced: the newer one's upload is the one
    /// the server must keep.
    private func cancelSuperseded(_ ids: [JobID], folder: String) async {
        guard !ids.isEmpty else { return }
        do {
            let outcome = try await performEach(.cancel, selection: JobSelection(ids: ids.sorted()))
            let names = outcome.jobs.map { "job \($0.id)" }.joined(separator: ", ")
            if !names.isEmpty { Log.info("[folder \(folder)] canceled \(names): a newer version of the file is taken") }
        } catch {
            Log.warning("[folder \(folder)] cannot cancel the jobs of older versions \(ids): \(error.message)")
        }
    }
}

/// `folder.list`, `folder.pause` and `folder.resume`.
extension Scheduler {
    /// Every watched folder of the config with what it took, `states` being the watcher's view
    /// of the ones it watches.
    func folderList(states: [String: FolderWatcher.RuleState]) -> FolderList {
        let rules = config.folders.values.sorted { $0.line < $1.line }
        return FolderList(folders: rules.map { folderInfo($0, state: states[$0.name]) })
    }

    func folderInfo(_ rule: FolderRule, state: FolderWatcher.RuleState?) -> FolderInfo {
        let ledger = store.state.folderLedgers[rule.name] ?? FolderLedger()
        var queued = 0
        var uploaded = 0
        var failed = 0
        var last: FolderInfo.LastUpload?
        for id in ledger.jobs.values.joined() {
            guard let job = store.jobs[id] else { continue }
            switch job.state {
            case .queued, .running, .paused: queued += 1
            case .failed, .canceled: failed += 1
            case .completed:
                uploaded += 1
                if last.map({ job.updatedAt > $0.at }) ?? true {
                    last = FolderInfo.LastUpload(id: job.id, source: job.spec.source, at: job.updatedAt)
                }
            }
        }
        // Versions whose jobs were removed since (cleared, most often); not those left alone as
        // the same content (no job).
        for entry in ledger.files.values where entry.job.map({ store.jobs[$0] == nil }) ?? false {
            switch entry.state {
            case .taken: queued += 1  // not written for a job still to run: counted for completeness
            case .uploaded, .done: uploaded += 1
            case .failed: failed += 1
            case .gone: break
            }
        }
        let (stateName, reason): (FolderInfo.State, String?) =
            switch state {
            case _ where pausedFolders[rule.name] != nil: (.paused, nil)
            case .watching?: (.watching, nil)
            case .waiting(let why)?: (.waiting, why)
            case .failing(let why)?: (.failing, why)
            case nil: (.starting, nil)
            }
        return FolderInfo(
            name: rule.name, path: rule.path, destination: Redaction.redactURL(rule.destination), state: stateName,
            reason: reason, taken: queued + uploaded + failed, queued: queued, uploaded: uploaded, failed: failed,
            lastUpload: last)
    }

    /// Pauses the watched folder `name` (nothing more is taken, and its unfinished jobs are
    /// paused) or resumes it (its paused jobs are resumed, and the folder is scanned again for
    /// what came meanwhile). Kept across restarts. The caller hands `folderRules` to the watcher.
    func setFolder(_ name: String, paused: Bool) async throws(RPCError) -> FolderRule {
        guard let rule = config.folders[name] else {
            let known = config.folders.keys.sorted()
            throw RPCError.invalidParams(
                "no [folder \(name)] in the config"
                    + (known.isEmpty
                        ? "; add one to uploadd.conf" : "; its folders are \(known.joined(separator: ", "))"))
        }
        if paused {
            if pausedFolders[name] == nil {
                var folders = pausedFolders
                folders[name] = []
                try dependencies.pausedFoldersFile?.keep(folders)
                pausedFolders = folders
                Log.info("[folder \(name)] paused")
            }
            let ledger = store.state.folderLedgers[name] ?? FolderLedger()
            let ids = ledger.jobs.values.joined().filter { id in
                store.jobs[id].map { $0.state == .queued || $0.state == .running } ?? false
            }
            try await pauseJobs(ids.sorted(), ofFolder: name)
        } else if let pausedWithIt = pausedFolders[name] {
            var folders = pausedFolders
            folders[name] = nil
            try dependencies.pausedFoldersFile?.keep(folders)
            pausedFolders = folders
            Log.info("[folder \(name)] resumed")
            // The jobs its pause paused, and no other: one the user paused by itself stays paused.
            let ids = pausedWithIt.filter { store.jobs[$0]?.state == .paused }.sorted()
            if !ids.isEmpty {
                report(try await performEach(.resume, selection: JobSelection(ids: ids)), "resumed", name)
            }
        }
        return rule
    }

    /// Pauses `ids`, jobs of the paused folder `name`, and remembers them as its pause's: its
    /// resume resumes them.
    private func pauseJobs(_ ids: [JobID], ofFolder name: String) async throws(RPCError) {
        guard !ids.isEmpty else { return }
        let outcome = try await performEach(.pause, selection: JobSelection(ids: ids))
        report(outcome, "paused", name)
        guard var paused = pausedFolders[name] else { return }  // resumed meanwhile
        paused.formUnion(outcome.jobs.map(\.id))
        var folders = pausedFolders
        folders[name] = paused
        do {
            try dependencies.pausedFoldersFile?.keep(folders)
        } catch {
            Log.warning("[folder \(name)] \(error.message): its resume after a restart leaves these jobs paused")
        }
        pausedFolders = folders
    }

    private func report(_ outcome: (jobs: [JobInfo], errors: [JobFailure]), _ verb: String, _ name: String) {
        for failure in outcome.errors {
            let job = failure.id.map { "job \($0)" } ?? "a job"
            Log.warning("[folder \(name)] \(job) not \(verb): \(failure.message)")
        }
    }
}
