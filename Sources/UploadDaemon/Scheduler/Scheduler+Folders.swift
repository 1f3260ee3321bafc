import UploadCore
import UploadPlatform
import UploadWire

/// Files that watched folders hand over (`FolderWatcher`), added as `job.add` adds them.
extension Scheduler {
    /// The config's watched folders, in the order of their sections.
    var folderRules: [FolderRule] { config.folders.values.sorted { $0.line < $1.line } }

    /// Adds the files of `rule` that settled and that the folder has not taken yet, with the
    /// identity the watcher checked: the job uploads that file or fails, never another one put in
    /// its place. Jobs carry the folder's name, which with their snapshot's identity is the
    /// folder's durable record of having taken that version of the file.
    func takeFolderFiles(_ rule: FolderRule, _ files: [FolderWatcher.Settled]) async {
        guard !stopping, config.folders[rule.name] == rule else { return }
        let fresh = folderIntake.admit(files, folder: rule.name, ledger: store.state.folderLedgers[rule.name]) {
            store.jobs[$0]
        }
        guard !fresh.isEmpty else { return }
        let openBatch = folderIntake.openBatch(of: rule.name) { store.unfinishedInBatch[$0] != nil }
        let results = await add(
            fresh.map { rule.addParams(relativePath: $0.relativePath, identity: $0.identity) },
            origin: AddRun.FolderOrigin(name: rule.name, batch: openBatch))
        folderIntake.added(fresh, folder: rule.name)
        var taken = 0
        for (file, result) in zip(fresh, results) {
            switch result {
            case .success(let job):
                taken += 1
                if let batch = job.batch { folderIntake.noteBatch(batch, of: rule.name) }
            case .failure(let error):
                Log.warning("[folder \(rule.name)] \(file.relativePath) not taken: \(error.message)")
            }
        }
        if taken > 0 { Log.info("[folder \(rule.name)] took \(taken) file\(taken == 1 ? "" : "s")") }
    }
}
