import UploadCore
import UploadWire

/// Adds whose copies are made alongside their uploads (`Scheduler+CopyAlongside`): until a copy
/// is saved (every byte, then its name, on disk), its job lives in memory only and none of its
/// records reach the journal. Its add is answered once the copy is saved, or once the job's end
/// is on disk (a job that completes or is canceled first needs no copy), or with why the add was
/// undone.
extension JobStore {
    struct HeldAdd {
        let copy: GrowingCopy
        /// The add's answer and non-streaming attempts wait here: nil once saved (or ended), else why not.
        var waiters: [CheckedContinuation<RPCError?, Never>] = []
        /// Set when the copy failed, before the job is forgotten.
        var failure: RPCError?
    }

    typealias Waiter = CheckedContinuation<RPCError?, Never>

    /// Holds back the records of a job whose copy is being made.
    mutating func hold(_ id: JobID, copy: GrowingCopy) {
        heldAdds[id] = HeldAdd(copy: copy)
    }

    /// Lets a saved copy's job be journaled; returns those waiting for it.
    mutating func release(_ id: JobID) -> [Waiter] {
        heldAdds.removeValue(forKey: id)?.waiters ?? []
    }

    /// Records as the journal gets them: job records with the revision memory gave them (so that a
    /// replay reaches the same revision however often memory applied the job in between), and none
    /// of a job whose copy is not saved. Such a job that completes or is canceled is saved by its
    /// record (returned in `ended`: its add is answered once that is on disk); one that is removed
    /// undoes its add.
    mutating func journalable(_ records: [JournalRecord]) -> (records: [JournalRecord], ended: [JobID]) {
        var ended: [JobID] = []
        var kept = records
        if !heldAdds.isEmpty {
            var undone: [JobID] = []
            kept = records.filter { record in
                switch record {
                case .job(let job) where heldAdds[job.id] != nil:
                    guard job.state == .completed || job.state == .canceled else { return false }
                    ended.append(job.id)
                    return true
                case .progress(let progress): return heldAdds[progress.id] == nil
                case .removed(let id) where heldAdds[id] != nil:
                    undone.append(id)
                    return false
                default: return true
                }
            }
            for id in undone { undoAdd(id) }
        }
        return (
            kept.map { record in
                guard case .job(let job) = record, let stored = jobs[job.id], stored.revision > job.revision
                else { return record }
                var applied = job
                applied.revision = stored.revision
                return .job(applied)
            }, ended
        )
    }

    /// A job whose copy is not saved is gone: its copy stops, and its add fails.
    mutating func undoAdd(_ id: JobID) {
        guard let undone = heldAdds.removeValue(forKey: id) else { return }
        undone.copy.cancel()
        let failure =
            undone.failure
            ?? RPCError(
                code: RPCError.invalidTransitionCode,
                message: "job \(id) was removed before its copy was made; nothing was added")
        for waiter in undone.waiters { waiter.resume(returning: failure) }
    }

    /// Jobs that ended before their copies were saved: their copies stop, and their adds are
    /// answered once their records, just queued, are on disk.
    mutating func savedByEnding(_ ended: [JobID]) {
        guard !ended.isEmpty else { return }
        var waiters: [Waiter] = []
        for id in ended {
            guard let add = heldAdds.removeValue(forKey: id) else { continue }
            add.copy.cancel()
            waiters += add.waiters
        }
        // A ticket of its own: each ticket has one waiter, and the caller waits for its own.
        let ticket = journal.queueDurably([])
        Task { [journal, writeFailed] in
            let failure: RPCError?
            do {
                try await journal.waitUntilDurable(ticket)
                failure = nil
                if journal.isBehind { writeFailed() }  // a compaction's rename not synced
            } catch {
                writeFailed()
                failure = RPCError(code: RPCError.noSpaceCode, message: "cannot journal the new job: \(error)")
            }
            for waiter in waiters { waiter.resume(returning: failure) }
        }
    }

    /// At shutdown: copies stop, and adds still waiting hear that the daemon stops (their jobs were
    /// never journaled).
    mutating func dropHeldAdds() {
        for id in heldAdds.keys {
            heldAdds[id]!.copy.cancel()
            let waiters = heldAdds[id]!.waiters
            heldAdds[id]!.waiters = []
            for waiter in waiters {
                waiter.resume(
                    returning: RPCError(
                        code: RPCError.shuttingDownCode,
                        message: "uploadd is stopping; add the file again once it is back"
                    ))
            }
        }
    }
}
