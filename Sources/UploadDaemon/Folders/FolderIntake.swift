import UploadCore
import UploadWire

/// What the scheduler keeps of the files watched folders hand over: which are being added now,
/// and each folder's open batch. A value; the scheduler owns it.
struct FolderIntake {
    private struct Taking: Hashable {
        var folder: String
        var file: FolderFileKey
    }

    private var beingAdded: Set<Taking> = []
    /// Each folder's last batch: its files join it while it has jobs that have not ended, so that
    /// a camera's 200 photos end in one notification, not one per settled chunk.
    private var batches: [String: JobID] = [:]

    /// The settled files of `folder` not taken yet, now marked as being added: the ledger has no
    /// entry of their version, no job of the folder has it, and no add of it is under way (the
    /// start-up scan and an event may hand the same file over twice).
    mutating func admit(
        _ files: [FolderWatcher.Settled], folder: String, ledger: FolderLedger?, job: (JobID) -> Job?
    ) -> [FolderWatcher.Settled] {
        files.filter { file in
            let key = file.key
            if ledger?.hasTaken(key, size: file.size, modifiedNanoseconds: file.modifiedNanoseconds, job: job) == true {
                return false
            }
            return beingAdded.insert(Taking(folder: folder, file: key)).inserted
        }
    }

    /// Their add is over (taken or refused): they may be handed over again.
    mutating func added(_ files: [FolderWatcher.Settled], folder: String) {
        for file in files {
            beingAdded.remove(
                Taking(folder: folder, file: file.key))
        }
    }

    /// The batch `folder`'s next files join, if its last one has jobs that have not ended.
    func openBatch(of folder: String, isUnfinished: (JobID) -> Bool) -> JobID? {
        batches[folder].flatMap { isUnfinished($0) ? $0 : nil }
    }

    mutating func noteBatch(_ batch: JobID, of folder: String) { batches[folder] = batch }
}
