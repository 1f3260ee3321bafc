import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// How the Scheduler records changes: journal records applied to memory and appended to disk in
/// the same actor turn, and how long each caller waits for the disk.
extension Scheduler {

    /// Applies a job's new state and journals it. `durable` waits for the disk before the state is
    /// announced to subscribers.
    func commit(_ job: Job, durable: Bool) async throws {
        store.apply(.job(job))
        try await journal([.job(job)], durable: durable)
        // Subscribers hear of a change only once it is on disk (for durable changes).
        announce(job)
    }

    /// Applies a job's new state and appends it to the journal without waiting for the disk (a
    /// start, a note for its history): for changes a crash may lose.
    func commitWithoutWaiting(_ job: Job, writeWithin delay: Duration = .zero) {
        store.apply(.job(job))
        appendWithoutWaiting([.job(job)], writeWithin: delay)
    }

    /// Applies an attempt's start and queues its record for the journal's next write (within
    /// `Dependencies.startRecordDelay`), withdrawable: a small file's upload ends within a millisecond, and its
    /// end's record then replaces the start's, which is never encoded or written. A crash before
    /// the write still counts against the job: the crash marker lists it (`RunningJobs`). Only
    /// for a job the marker lists; others' starts are written at once.
    func commitStart(_ job: Job) {
        store.apply(.job(job))
        let (kept, _) = journalable([.job(job)])
        // A job whose copy is not saved has no record yet: its start has none either.
        guard let record = kept.first else { return }
        dependencies.journal.appendWithdrawable(record, of: job.id, writeWithin: dependencies.startRecordDelay)
        withdrawableStarts.insert(job.id)
        compactIfWorthwhile()
    }

    /// `records` in the order the journal takes them, after the start records they settle: a record
    /// of the whole job (or of its removal) replaces its start's, if that is still withdrawable;
    /// progress goes after it.
    private func settlingStarts(_ records: [JournalRecord]) -> [JournalRecord] {
        guard !withdrawableStarts.isEmpty else { return records }
        var settled = records
        var inserted = 0
        for (index, record) in records.enumerated() {
            let id: JobID
            switch record {
            case .job(let job): id = job.id
            case .progress(let progress): id = progress.id
            case .removed(let removed): id = removed
            case .nextID, .foreign: continue
            }
            guard withdrawableStarts.remove(id) != nil, let start = dependencies.journal.withdraw(id) else { continue }
            if case .progress = record {
                settled.insert(start, at: index + inserted)
                inserted += 1
            }
        }
        return settled
    }

    private func appendWithoutWaiting(_ records: [JournalRecord], writeWithin delay: Duration = .zero) {
        let (journalable, ended) = journalable(records)
        let kept = settlingStarts(journalable)
        if !kept.isEmpty { dependencies.journal.append(kept, writeWithin: delay) }
        savedByEnding(ended)
        compactIfWorthwhile()
    }

    /// Drops a job from memory and returns the record that says so; the caller journals it.
    func forgetInMemory(_ job: Job) -> JournalRecord {
        store.apply(.removed(job.id))
        unqueue(job)
        if let token = job.spec.clientToken { clientTokens[token] = nil }
        delayed.shrinkIfSparse()
        waiting.shrinkIfSparse()
        clientTokens.shrinkIfSparse()
        return .removed(job.id)
    }

    /// Journals records of several changes in one durable append, then announces the jobs.
    func commitDurably(_ records: [JournalRecord], announcing jobs: [Job]) async throws {
        try await finishDurably(queueDurably(records), announcing: jobs)
    }

    /// The first half of a durable append: the records take their place in the journal now, in
    /// this actor turn, ahead of any change made after it. Its sync may wait `delay` to be shared.
    func queueDurably(_ records: [JournalRecord], within delay: Duration = .zero) -> Journal.DurableTicket {
        let (journalable, ended) = journalable(records)
        let ticket = dependencies.journal.queueDurably(settlingStarts(journalable), within: delay)
        savedByEnding(ended)
        return ticket
    }

    /// The second half: waits until the records are on disk, then announces the jobs.
    func finishDurably(_ ticket: Journal.DurableTicket, announcing jobs: [Job]) async throws {
        defer {
            for job in jobs {
                if store.jobs[job.id] != nil {
                    announce(job)
                } else {
                    dependencies.events.publishRemoved(job.id, batch: job.spec.batch)
                }
            }
        }
        try await waitUntilDurable(ticket)
    }

    /// Appends records (a durable append returns once they are on disk), then compacts the journal
    /// when it has grown far beyond the live jobs: a clear of 100,000 jobs leaves a journal of a
    /// few bytes. After a durable write fails (a full disk) memory is ahead of the journal, so
    /// catching up starts.
    func journal(_ records: [JournalRecord], durable: Bool) async throws {
        guard durable else {
            appendWithoutWaiting(records)
            return
        }
        // Queued here, on the actor, in the order of the changes; only the wait leaves it.
        try await waitUntilDurable(queueDurably(records))
    }

    func waitUntilDurable(_ ticket: Journal.DurableTicket) async throws {
        try await durability(of: ticket).get()
    }

    /// What became of a durable append's records, once they are on disk or their write failed.
    func durability(of ticket: Journal.DurableTicket) async -> Result<Void, any Error> {
        let outcome: Result<Void, any Error>
        do {
            try await dependencies.journal.waitUntilDurable(ticket)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        return settled(outcome)
    }

    /// What `durability(of:)` would come to, if the journal knows it already (it is told once);
    /// nil while the records wait for their write or sync.
    func knownDurability(of ticket: Journal.DurableTicket) -> Result<Void, any Error>? {
        dependencies.journal.takeOutcome(of: ticket).map(settled)
    }

    /// After a durable append: a failed write (a full disk) leaves memory ahead of the journal, so
    /// catching up starts, as it does after a compaction whose rename could not be synced; a write
    /// that went through may make compaction worthwhile.
    private func settled(_ outcome: Result<Void, any Error>) -> Result<Void, any Error> {
        if case .failure = outcome {
            catchUpWithJournal()
        } else if dependencies.journal.isBehind {
            catchUpWithJournal()
        } else {
            compactIfWorthwhile()
        }
        return outcome
    }

    /// Rewrites the journal when it holds far more records than live jobs.
    func compactIfWorthwhile() {
        let written = dependencies.journal.recordsSinceCompaction
        guard written > max(config.compactAfter, store.jobs.count * 4) else { return }
        dependencies.journal.compact(compactedRecords())
        HeapTrimmer.trimSoon()  // what the compaction freed
    }

    /// After a failed write (a full disk) memory is ahead of the journal: every two seconds, until
    /// one succeeds, compact it (write the live state), so it catches up by itself once there is
    /// room. A compaction that fails leaves the old file as it was.
    private func catchUpWithJournal() {
        guard journalCatchUp == nil else { return }
        journalCatchUp = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(2))
                guard !Task.isCancelled, let self, await self.compactIfBehind() else { return }
            }
        }
    }

    /// Queues a compaction if the journal is behind; false once it has caught up.
    private func compactIfBehind() -> Bool {
        guard dependencies.journal.isBehind else {
            journalCatchUp = nil
            return false
        }
        dependencies.journal.compact(compactedRecords())
        return true
    }
}
