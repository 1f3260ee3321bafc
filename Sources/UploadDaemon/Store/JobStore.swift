import UploadCore
import UploadPlatform
import UploadWire

/// The jobs in memory and their records in the journal, kept in one order.
///
/// A change is applied to memory and saved with one of three verbs, named by what a crash does to
/// it:
///
/// | verb | after a crash |
/// |---|---|
/// | `saveSoon` | may be lost: written within a delay, no sync waited for (a history note, a retry) |
/// | `saveStart` | may be lost, or never written at all: the end of the attempt replaces it |
/// | `saveDurably` | kept, once its ticket is (`Scheduler.durability(of:)` waits for it) |
///
/// A verb given a `Job` applies it to memory first; one given records saves changes the caller
/// has applied already (several changes of one command, saved together).
///
/// Records of jobs whose copies are not saved yet are held back (`JobStore+HeldAdds`): a crash
/// forgets such a job, as it forgets an add it never answered.
///
/// A value the `Scheduler` actor owns: every call happens in one of its turns, so the journal gets
/// the records in the order memory took them.
struct JobStore {
    let journal: Journal
    private(set) var state: JournalState
    /// Adds whose copies are made alongside their uploads and not saved yet (`JobStore+HeldAdds`).
    var heldAdds: [JobID: HeldAdd] = [:]
    /// Jobs whose attempt's start record may still wait in the journal, withdrawable
    /// (`saveStart`); some the writer has taken already.
    private var withdrawableStarts: Set<JobID> = []
    /// What watched folders' jobs removed in memory leave in their folders' ledgers, until their
    /// removals are saved (`withFolderEntries`).
    private var removedFolderFiles: [JobID: FolderLedgerRecord] = [:]
    /// Watched folders' completed jobs whose `after` action (delete or move) is not done yet: a
    /// removal of one leaves an `uploaded` entry (owed) rather than `done`.
    var folderActionsOwed: Set<JobID> = []
    /// Records written since the last compaction beyond which the journal is rewritten
    /// (`compact_after`), unless the live jobs need more.
    var compactAfter: Int
    /// Told when a write nobody else waits for failed (a full disk), or left the journal behind:
    /// memory is ahead of the journal, and the owner starts catching up
    /// (`Scheduler.catchUpWithJournal`). Set once the owner exists.
    var writeFailed: @Sendable () -> Void = {}

    init(replayed: JournalState, journal: Journal, compactAfter: Int) {
        self.state = replayed
        self.journal = journal
        self.compactAfter = compactAfter
    }

    var jobs: JobTable { state.jobs }
    var stateCounts: [JobState: Int] { state.stateCounts }
    func count(of jobState: JobState) -> Int { state.count(of: jobState) }
    var unfinishedInBatch: [JobID: Int] { state.unfinishedInBatch }

    /// Applies a change to memory only; a verb below saves it.
    mutating func apply(_ record: JournalRecord) {
        if case .removed(let id) = record, let job = state.jobs[id], var file = FolderFile(leftBy: job) {
            // Uploaded, and its folder's `after` (delete or move) not done yet: still owed.
            if file.state == .done, folderActionsOwed.contains(id) { file.state = .uploaded }
            // The content its take recorded (`match = content`) stays with the version (an entry
            // with no job was the same content, left alone).
            if let taken = state.folderLedgers[job.spec.folder!]?.files[file.key], taken.job == id || taken.job == nil {
                file.sha256 = taken.sha256
            }
            removedFolderFiles[id] = FolderLedgerRecord(folder: job.spec.folder!, files: [file])
        }
        state.apply(record)
    }

    /// `records` with, before the removal of a watched folder's job, the ledger entry that keeps
    /// what it took once the job is gone (applied to memory as it is saved): the folder must not
    /// take that version again. A removal that is never saved (an add undone) leaves none.
    private mutating func withFolderEntries(_ records: [JournalRecord]) -> [JournalRecord] {
        guard !removedFolderFiles.isEmpty else { return records }
        var result: [JournalRecord] = []
        result.reserveCapacity(records.count + 1)
        for record in records {
            if case .removed(let id) = record, let entry = removedFolderFiles.removeValue(forKey: id) {
                state.apply(.folderFiles(entry))
                result.append(.folderFiles(entry))
            }
            result.append(record)
        }
        return result
    }

    // MARK: - The three verbs

    /// Applies a job's new state and saves it without waiting for the disk: a crash may lose it.
    mutating func saveSoon(_ job: Job, writeWithin delay: Duration = .zero) {
        state.apply(.job(job))
        saveSoon([.job(job)], writeWithin: delay)
    }

    /// Saves applied changes without waiting for the disk: a crash may lose them.
    mutating func saveSoon(_ records: [JournalRecord], writeWithin delay: Duration = .zero) {
        let (journalable, ended) = journalable(records)
        let kept = settlingStarts(withFolderEntries(journalable))
        if !kept.isEmpty { journal.append(kept, writeWithin: delay) }
        savedByEnding(ended)
        compactIfWorthwhile()
    }

    /// Applies an attempt's start and queues its record for the journal's next write (within
    /// `delay`), withdrawable: a small file's upload ends within a millisecond, and its end's
    /// record then replaces the start's, which is never encoded or written. A crash before the
    /// write still counts against the job only if the crash marker lists it (`RunningJobs`): only
    /// for such a job.
    mutating func saveStart(_ job: Job, writeWithin delay: Duration) {
        state.apply(.job(job))
        let (kept, _) = journalable([.job(job)])
        // A job whose copy is not saved has no record yet: its start has none either.
        guard let record = kept.first else { return }
        journal.appendWithdrawable(record, of: job.id, writeWithin: delay)
        withdrawableStarts.insert(job.id)
        compactIfWorthwhile()
    }

    /// Applies a job's new state and saves it durably (see below).
    mutating func saveDurably(_ job: Job, within delay: Duration = .zero) -> Journal.DurableTicket {
        state.apply(.job(job))
        return saveDurably([.job(job)], within: delay)
    }

    /// Saves applied changes durably: the records take their place in the journal now, in this
    /// actor turn, ahead of any change made after it; they are on disk once the ticket is
    /// (`Scheduler.durability(of:)`). The sync may wait `delay` to be shared.
    mutating func saveDurably(_ records: [JournalRecord], within delay: Duration = .zero) -> Journal.DurableTicket {
        let (journalable, ended) = journalable(records)
        let ticket = journal.queueDurably(settlingStarts(withFolderEntries(journalable)), within: delay)
        savedByEnding(ended)
        return ticket
    }

    // MARK: - Order and compaction

    /// `records` in the order the journal takes them, after the start records they settle: a
    /// record of the whole job (or of its removal) replaces its start's, if that is still
    /// withdrawable; progress goes after it.
    private mutating func settlingStarts(_ records: [JournalRecord]) -> [JournalRecord] {
        guard !withdrawableStarts.isEmpty else { return records }
        var settled = records
        var inserted = 0
        for (index, record) in records.enumerated() {
            let id: JobID
            switch record {
            case .job(let job): id = job.id
            case .progress(let progress): id = progress.id
            case .removed(let removed): id = removed
            case .nextID, .folderFiles, .foreign: continue
            }
            guard withdrawableStarts.remove(id) != nil, let start = journal.withdraw(id) else { continue }
            if case .progress = record {
                settled.insert(start, at: index + inserted)
                inserted += 1
            }
        }
        return settled
    }

    /// Rewrites the journal when it holds far more records than live jobs: a clear of 100,000
    /// jobs leaves a journal of a few bytes.
    func compactIfWorthwhile() {
        guard journal.recordsSinceCompaction > max(compactAfter, state.jobs.count * 4) else { return }
        journal.compact(compactedRecords())
        HeapTrimmer.trimSoon()  // what the compaction freed
    }

    /// Queues a compaction if the journal is behind memory (a write failed); false once it has
    /// caught up.
    func compactIfBehind() -> Bool {
        guard journal.isBehind else { return false }
        journal.compact(compactedRecords())
        return true
    }

    /// The live state for a compaction, without the jobs whose copies are not saved.
    private func compactedRecords() -> [JournalRecord] {
        let records = state.compactedRecords()
        guard !heldAdds.isEmpty else { return records }
        return records.filter { record in
            guard case .job(let job) = record else { return true }
            return heldAdds[job.id] == nil
        }
    }
}
