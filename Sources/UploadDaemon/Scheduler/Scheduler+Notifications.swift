import UploadCore
import UploadPlatform
import UploadWire

/// Desktop notifications of ended batches (`BatchAnnouncements`): the timers and the notifier.
extension Scheduler {
    /// A job ended (completed or failed): if that ended its batch, announce it once the batch has
    /// stayed ended for the quiet time.
    func noteBatchProgress(of job: Job) {
        guard job.state == .completed || job.state == .failed, config.notify != .none,
            dependencies.notifier != nil
        else { return }
        let batch = job.spec.batch ?? job.id
        guard store.unfinishedInBatch[batch] == nil else { return }
        let wait = batchAnnouncements.batchEnded(batch)
        Task { [weak self] in
            try? await Task.sleep(for: BatchAnnouncements.quietTime)
            await self?.quietTimeEnded(wait)
        }
    }

    private func quietTimeEnded(_ wait: BatchAnnouncements.Wait) {
        guard batchAnnouncements.quietTimeEnded(wait), store.unfinishedInBatch[wait.batch] == nil,
            let notifier = dependencies.notifier
        else { return }
        let jobs = store.jobs.values.filter { ($0.spec.batch ?? $0.id) == wait.batch }.sorted { $0.id < $1.id }
        guard let message = BatchAnnouncements.message(batch: wait.batch, jobs: jobs, policy: config.notify) else {
            return
        }
        Log.info("notification: \(message.summary)")
        notifier.show(summary: message.summary, body: message.body, urgency: message.urgent ? .critical : .normal) {
            [weak self] shown in
            Task { await self?.notificationShown(shown) }
        }
    }

    private func notificationShown(_ shown: Bool) {
        notificationsShown += shown ? 1 : 0
    }
}
