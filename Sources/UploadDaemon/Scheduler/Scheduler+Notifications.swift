import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// Desktop notifications (`notify = failures|all|none`): one per batch, once all of its jobs have
/// ended, never one per file.
extension Scheduler {
    /// How long a batch must stay ended before it is announced: its first job can end before
    /// uploadctl has sent the rest, and a retry may follow a failure at once.
    static let batchQuietTime: Duration = .seconds(2)

    /// A job ended (completed or failed): if that ended its batch, announce it once the batch has
    /// stayed ended for `batchQuietTime`.
    func noteBatchProgress(of job: Job) {
        guard job.state == .completed || job.state == .failed, config.notify != .none,
            dependencies.notifier != nil
        else { return }
        let batch = job.spec.batch ?? job.id
        guard store.unfinishedInBatch[batch] == nil else { return }
        batchAnnouncements[batch]?.cancel()
        batchAnnouncements[batch] = Task { [weak self] in
            try? await Task.sleep(for: Self.batchQuietTime)
            guard !Task.isCancelled else { return }
            await self?.announceBatchIfEnded(batch)
        }
    }

    private func announceBatchIfEnded(_ batch: JobID) {
        batchAnnouncements[batch] = nil
        guard store.unfinishedInBatch[batch] == nil, let notifier = dependencies.notifier else { return }
        let jobs = store.jobs.values.filter { ($0.spec.batch ?? $0.id) == batch }.sorted { $0.id < $1.id }
        let failed = jobs.filter { $0.state == .failed }
        let completed = jobs.filter { $0.state == .completed }
        guard !jobs.isEmpty, !(failed.isEmpty && config.notify == .failures) else { return }
        guard !failed.isEmpty || !completed.isEmpty else { return }  // all canceled: the user knows
        let message = Self.batchMessage(batch: batch, completed: completed, failed: failed)
        Log.info("notification: \(message.summary)")
        notifier.show(summary: message.summary, body: message.body, urgency: failed.isEmpty ? .normal : .critical) {
            [weak self] shown in
            Task { await self?.notificationShown(shown) }
        }
    }

    private func notificationShown(_ shown: Bool) {
        notificationsShown += shown ? 1 : 0
    }

    static func batchMessage(batch: JobID, completed: [Job], failed: [Job]) -> (summary: String, body: String) {
        func name(_ job: Job) -> String { (job.spec.source as NSString).lastPathComponent }
        func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }
        let total = completed.count + failed.count
        guard let firstFailure = failed.first else {
            let what = completed.count == 1 ? name(completed[0]) : files(completed.count)
            let destination = Redaction.redactURL(completed[0].spec.destination)
            return ("Uploaded \(what)", "to \(destination)")
        }
        let summary =
            total == 1
            ? "Upload of \(name(firstFailure)) failed" : "\(failed.count) of \(files(total)) failed to upload"
        let body =
            "\(name(firstFailure)): \(firstFailure.error?.message ?? "failed")"
            + (total == 1 ? "" : "\nuploadctl list --batch \(batch) --state failed")
        return (summary, body)
    }
}
