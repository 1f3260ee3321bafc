import UploadCore
import UploadPlatform
import UploadWire

/// Big files copied alongside their upload (`GrowingCopy`), so that the default snapshot does not
/// hold a big upload back by the time the disk takes to copy and sync it.
///
/// The job is made and queued at once, and may upload the part already copied. Until its copy is
/// saved (every byte, then its name, on disk), the store holds its records back
/// (`JobStore+HeldAdds`), so a crash forgets it, as it forgets an add it never answered. Its add
/// is answered, and the job journaled as it then is, when the copy is saved, or when the job
/// completes or is canceled first (it needs no copy then, and the copy is dropped unsynced). A
/// copy that fails undoes the add, which is answered with why.
///
/// A copy is saved once every byte is copied, unless its upload is about to end: then the disk
/// would write a gigabyte nobody needs, and every journal sync would wait behind it. It waits
/// while the upload's time left is under what the disk would take (`deferral`).
extension Scheduler {
    /// Holds back the records of jobs whose copies are being made, and waits for each copy.
    func holdUntilSaved(_ copies: [JobID: GrowingCopy]) {
        for (id, copy) in copies {
            store.hold(id, copy: copy)
            Task { [weak self] in
                let outcome = await copy.outcome()
                await self?.copyEnded(id, outcome)
            }
        }
    }

    /// Waits until job `id`'s copy is saved or its add undone: nil, or why the add failed.
    func untilSaved(_ id: JobID) async -> RPCError? {
        guard store.heldAdds[id] != nil else { return nil }
        return await withCheckedContinuation { store.heldAdds[id]?.waiters.append($0) }
    }

    /// The copy being made for a job, if it is not saved yet.
    func growingCopy(of id: JobID) -> GrowingCopy? { store.heldAdds[id]?.copy }

    private func copyEnded(_ id: JobID, _ outcome: GrowingCopy.Outcome) async {
        guard store.heldAdds[id] != nil, let job = store.jobs[id] else { return }
        switch outcome {
        case .copied: await saveWhenNeeded(id, copiedAt: .now)
        case .failed(let failure): copyFailed(job, failure)
        case .canceled: return
        }
    }

    /// Saves a copied file, unless its upload ends first (checked again after `deferral`).
    private func saveWhenNeeded(_ id: JobID, copiedAt: ContinuousClock.Instant) async {
        guard let copy = store.heldAdds[id]?.copy else { return }
        if let wait = deferral(of: id, copy: copy), ContinuousClock.now + wait < copiedAt + Self.longestDeferral {
            if let job = store.jobs[id] {
                Log.job(.debug, JobLogContext(job), "copy made; the upload ends first, in about \(wait)")
            }
            try? await Task.sleep(for: wait)
            await saveWhenNeeded(id, copiedAt: copiedAt)
            return
        }
        let saved: Result<FileIdentity?, TransferFailure>
        do {
            saved = .success(try await Blocking.run { try copy.save() })
        } catch {
            saved = .failure(error as? TransferFailure ?? .io("\(error)"))
        }
        // The job may have ended (or been removed) while its copy was synced.
        guard store.heldAdds[id] != nil, var job = store.jobs[id] else { return }
        switch saved {
        case .failure(let failure): copyFailed(job, failure)
        case .success(let identity):
            Log.job(.debug, JobLogContext(job), "copy saved, \(ContinuousClock.now - copiedAt) after it was made")
            job.snapshot?.cachedCopy = identity
            let waiters = store.release(id)
            store.apply(.job(job))
            do {
                try await announceOnceSaved([job], store.saveDurably([.job(store.jobs[id] ?? job)]))
                for waiter in waiters { waiter.resume(returning: nil) }
            } catch {
                // As an add whose journal write failed: the job goes (memory is ahead of the
                // journal, which catches up by compacting without it).
                running[id]?.task.cancel()
                _ = forgetInMemory(job)
                dependencies.snapshots.discardFiles(of: job)
                let failure = RPCError(code: RPCError.noSpaceCode, message: "cannot journal the new job: \(error)")
                for waiter in waiters { waiter.resume(returning: failure) }
            }
        }
    }

    /// How long a copied file waits before it is saved (`GrowingCopy.deferral`); nil: now.
    private func deferral(of id: JobID, copy: GrowingCopy) -> Duration? {
        guard let attempt = running[id], let job = store.jobs[id], job.state == .running else { return nil }
        return copy.deferral(bytesLeft: job.bytesTotal - attempt.meter.bytesSent, speed: attempt.meter.speed)
    }

    /// The longest a copied file waits for its upload to end before it is saved anyway.
    static let longestDeferral: Duration = .seconds(5)

    /// The copy could not be made or saved: the add is undone, and answered with why.
    private func copyFailed(_ job: Job, _ failure: TransferFailure) {
        Log.job(.warning, JobLogContext(job), "add undone: \(failure.error.message)")
        let code = failure.error.code == "no_space" ? RPCError.noSpaceCode : RPCError.sourceErrorCode
        store.heldAdds[job.id]?.failure = RPCError(code: code, message: failure.error.message)
        running[job.id]?.task.cancel()
        _ = forgetInMemory(job)  // never journaled: nothing to journal of it now
        store.undoAdd(job.id)
        dependencies.snapshots.discardFiles(of: job)
        fillSlots()
    }
}
