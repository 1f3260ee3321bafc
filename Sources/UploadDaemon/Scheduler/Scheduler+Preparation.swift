import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// The preparation stage: between a job's snapshot and its upload, its preparation steps make
/// the file it will send. Queued jobs are prepared ahead of their turn, at most `max_preparations`
/// at once and in no transfer slot; the result is journaled before a byte of it is sent.
extension Scheduler {
    var preparer: Preparer { Preparer(steps: dependencies.preparationSteps, cache: dependencies.snapshots) }

    func fillPreparationSlots() {
        while !stopping, preparing.count < config.maxPreparations, let id = toPrepare.popFirst() {
            guard let job = store.jobs[id], job.state == .queued, job.needsPreparation, preparing[id] == nil else {
                continue
            }
            startPreparation(job)
        }
    }

    private func startPreparation(_ queued: Job) {
        var job = queued
        job.record("preparing (\(job.spec.preparation.map(\.step).joined(separator: ", ")))", at: dependencies.now())
        store.saveSoon(job)
        let preparer = self.preparer
        let id = job.id
        preparationRuns += 1
        let run = preparationRuns
        let task = Task { [weak self, job] in
            let result = await preparer.prepare(job)
            await self?.preparationEnded(id, run: run, result)
        }
        preparing[id] = (run, task)
    }

    private func preparationEnded(_ id: JobID, run: UInt64, _ result: Result<PreparedFile, any Error>) async {
        // Paused, canceled, removed or stopping meanwhile (`unqueue`, `shutdown`), or a run that a
        // pause and a resume replaced: what it made is nobody's.
        guard preparing[id]?.run == run else {
            if case .success(let file) = result { dependencies.snapshots.discard(file) }
            return
        }
        preparing[id] = nil
        guard var job = store.jobs[id], job.state == .queued else {
            if case .success(let file) = result { dependencies.snapshots.discard(file) }
            return
        }
        defer { fillSlots() }
        switch result {
        case .success(let file):
            let before = job.bytesTotal
            job.prepared = file
            job.bytesTotal = file.size
            let made =
                file.path == job.snapshot?.path
                ? "left as it was" : "\(ByteSize.format(before)) → \(ByteSize.format(file.size))"
            job.record("prepared: \(made)", at: dependencies.now())
            do {
                // Named in the journal, on disk, before any of it is sent: a resume sends these bytes.
                try await waitUntilDurable(store.saveDurably(job))
                announce(job)
            } catch {
                // The job in memory has its file; only the journal lacks it. A restart sweeps the
                // file away and prepares again.
                Log.error("job \(id): cannot journal its prepared file: \(error)")
                return
            }
            if let current = store.jobs[id] { enqueue(current) }
        case .failure(let error):
            let failure = error as? TransferFailure ?? .source("\(error)")
            guard
                !job.preparationFailed(
                    failure.error, retryable: failure.retryable, policy: config.retry, at: dependencies.now()
                ).isEmpty
            else { return }
            Log.job(
                job.state == .failed ? .warning : .notice, JobLogContext(job),
                job.lastEvent?.message ?? "preparation failed")
            markEnding(&job)
            store.saveSoon(job)
            announce(job)
            enqueue(job)
            jobEnded(job)
        }
    }
}
