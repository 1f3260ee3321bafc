import UploadCore
import UploadPlatform
import UploadWire

/// `after = delete | move:DIR` of watched folders, done once a job's end is durable and recorded
/// in the folder's ledger once done (`done`, with the job): a file whose job completed and has no
/// such entry is owed its action, after a crash too. The action finds a file that changed, or
/// that is gone, and then does nothing (`FolderAfterUpload`), so doing it twice is harmless;
/// uploading twice cannot happen, as the completed job (or, once it is cleared, its ledger entry)
/// is the record that the version was taken.
extension Scheduler {
    /// Once a job's ending record is durable (never before): the action its folder's rule asked
    /// for when it took the file (`JobSpec.folderAfter`; a rule changed since does not act on
    /// files taken before). A job whose end could not be journaled gets its action at the next
    /// start, if its end is in the journal by then.
    func folderJobEnded(_ job: Job) {
        guard job.state == .completed, let folder = job.spec.folder,
            let after = FolderAfter(journalText: job.spec.folderAfter), let version = FolderAfterUpload.Version(of: job)
        else { return }
        oweFolderAction(after, folder: folder, job: job.id, version: version)
    }

    /// At start: the actions a crash (or a stop) left owed, from each folder's completed jobs and
    /// from the entries of jobs cleared before their action ran (`uploaded`, acted on as the
    /// folder's rule says now: `keep` leaves them).
    func runOwedFolderActions() {
        for (folder, ledger) in store.state.folderLedgers.sorted(by: { $0.key < $1.key }) {
            for id in ledger.jobs.values.joined().sorted() {
                guard let job = store.jobs[id], job.state == .completed,
                    let after = FolderAfter(journalText: job.spec.folderAfter),
                    let version = FolderAfterUpload.Version(of: job)
                else { continue }
                oweFolderAction(after, folder: folder, job: id, version: version)
            }
            guard let after = config.folders[folder]?.after, after != .keep else { continue }
            for entry in ledger.files.values where entry.state == .uploaded {
                guard let job = entry.job, let version = FolderAfterUpload.Version(entry) else { continue }
                oweFolderAction(after, folder: folder, job: job, version: version)
            }
        }
    }

    private func oweFolderAction(
        _ after: FolderAfter, folder: String, job: JobID, version: FolderAfterUpload.Version
    ) {
        let key = FolderFileKey(device: version.device, inode: version.inode)
        if let entry = store.state.folderLedgers[folder]?.files[key], entry.job == job, entry.state == .done { return }
        // Once per job and run of the daemon: one that failed is tried again at the next start.
        guard store.folderActionsOwed.insert(job).inserted else { return }
        CrashPoint.folderActionDue.reached()
        Task {
            let outcome = (try? await Blocking.run { FolderAfterUpload.perform(after, on: version) }) ?? .failed("")
            self.folderActionEnded(folder: folder, job: job, version: version, outcome: outcome)
        }
    }

    private func folderActionEnded(
        folder: String, job: JobID, version: FolderAfterUpload.Version, outcome: FolderAfterUpload.Outcome
    ) {
        if outcome == .deleted || outcome.isMove { CrashPoint.folderActionDone.reached() }
        let path = version.path
        switch outcome {
        case .deleted: Log.info("[folder \(folder)] deleted \(path), uploaded by job \(job)")
        case .moved(let to): Log.info("[folder \(folder)] moved \(path) to \(to), uploaded by job \(job)")
        case .gone: Log.info("[folder \(folder)] \(path) is gone already")
        case .changed: Log.notice("[folder \(folder)] \(path) changed since job \(job) uploaded it: left alone")
        case .symlink:
            Log.notice("[folder \(folder)] \(path) is a symlink: left where it is (after acts on files, not links)")
        case .failed(let why):
            Log.warning("[folder \(folder)] \(path), uploaded by job \(job): \(why); tried again at the next start")
        }
        guard outcome.isFinal, !stopping else { return }
        store.folderActionsOwed.remove(job)
        let key = FolderFileKey(device: version.device, inode: version.inode)
        let entry = FolderFile(
            key: key, path: path, size: version.size, modifiedNanoseconds: version.modifiedNanoseconds, state: .done,
            job: job, sha256: store.state.folderLedgers[folder]?.files[key]?.sha256)
        // A crash that loses it makes the next start look again, and find the file gone (or
        // moved, or changed).
        noteFolderEntries([entry], folder: folder)
    }
}
