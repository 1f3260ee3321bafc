import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// How the Scheduler waits for its journal: the store (`JobStore`) saves changes in the actor's
/// order; this is where a durable save is awaited, announced, and caught up with after a failed
/// write.
extension Scheduler {

    /// Waits until a durable save is on disk, then announces the jobs: subscribers hear of a
    /// change only once it is durable.
    func announceOnceSaved(_ jobs: [Job], _ ticket: Journal.DurableTicket) async throws {
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

    /// Drops a job from memory and its queues, and returns the record that says so; the caller
    /// saves it.
    func forgetInMemory(_ job: Job) -> JournalRecord {
        store.apply(.removed(job.id))
        unqueue(job)
        if let token = job.spec.clientToken { clientTokens[token] = nil }
        delayed.shrinkIfSparse()
        waiting.shrinkIfSparse()
        clientTokens.shrinkIfSparse()
        return .removed(job.id)
    }

    func waitUntilDurable(_ ticket: Journal.DurableTicket) async throws {
        try await durability(of: ticket).get()
    }

    /// What became of a durable save's records, once they are on disk or their write failed.
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

    /// After a durable save: a failed write (a full disk) leaves memory ahead of the journal, so
    /// catching up starts, as it does after a compaction whose rename could not be synced; a write
    /// that went through may make compaction worthwhile.
    private func settled(_ outcome: Result<Void, any Error>) -> Result<Void, any Error> {
        if case .failure = outcome {
            catchUpWithJournal()
        } else if dependencies.journal.isBehind {
            catchUpWithJournal()
        } else {
            store.compactIfWorthwhile()
        }
        return outcome
    }

    /// After a failed write (a full disk) memory is ahead of the journal: every two seconds, until
    /// one succeeds, compact it (write the live state), so it catches up by itself once there is
    /// room. A compaction that fails leaves the old file as it was.
    func catchUpWithJournal() {
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
        guard store.compactIfBehind() else {
            journalCatchUp = nil
            return false
        }
        return true
    }
}
