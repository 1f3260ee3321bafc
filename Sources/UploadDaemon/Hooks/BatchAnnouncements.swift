import Foundation
import UploadCore
import UploadWire

/// Desktop notifications (`notify = failures|all|none`): one per batch, once all of its jobs have
/// ended and the batch has stayed ended for `quietTime`, never one per file. A state machine with
/// no clock: the scheduler arms a timer for each `Wait` it is handed, and asks `quietTimeEnded`
/// when it fires.
struct BatchAnnouncements {
    /// How long a batch must stay ended before it is announced: its first job can end before
    /// uploadctl has sent the rest, and a retry may follow a failure at once.
    static let quietTime: Duration = .seconds(2)

    /// A timer to arm: `quietTimeEnded(wait)` once it has run out.
    struct Wait: Equatable {
        let batch: JobID
        let token: UInt64
    }

    struct Message: Equatable {
        let summary: String
        let body: String
        let urgent: Bool
    }

    /// The latest timer of each batch waiting: an earlier one that fires finds its token stale.
    private var waits: [JobID: UInt64] = [:]
    private var tokens: UInt64 = 0

    /// Every job of `batch` has ended (just now, once more): wait out the quiet time again.
    mutating func batchEnded(_ batch: JobID) -> Wait {
        tokens += 1
        waits[batch] = tokens
        return Wait(batch: batch, token: tokens)
    }

    /// A timer ran out: true if it is its batch's latest, whose announcement is due now.
    mutating func quietTimeEnded(_ wait: Wait) -> Bool {
        guard waits[wait.batch] == wait.token else { return false }
        waits[wait.batch] = nil
        return true
    }

    /// What to show for an ended batch's jobs under `policy`; nil: nothing (all canceled, which
    /// the user did, or all completed under `failures`).
    static func message(batch: JobID, jobs: [Job], policy: NotifyPolicy) -> Message? {
        let failed = jobs.filter { $0.state == .failed }
        let completed = jobs.filter { $0.state == .completed }
        guard policy != .none, !(failed.isEmpty && policy == .failures), !failed.isEmpty || !completed.isEmpty
        else { return nil }
        let (summary, body) = text(batch: batch, completed: completed, failed: failed)
        return Message(summary: summary, body: body, urgent: !failed.isEmpty)
    }

    /// The text of a batch's notification; a watched folder's batch names the folder
    /// ("Uploaded 12 files from screenshots").
    static func text(batch: JobID, completed: [Job], failed: [Job]) -> (summary: String, body: String) {
        func name(_ job: Job) -> String { (job.spec.source as NSString).lastPathComponent }
        func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }
        let total = completed.count + failed.count
        let from = (completed.first ?? failed.first)?.spec.folder.map { " from \($0)" } ?? ""
        guard let firstFailure = failed.first else {
            let what = completed.count == 1 ? name(completed[0]) : files(completed.count)
            let destination = Redaction.redactURL(completed[0].spec.destination)
            return ("Uploaded \(what)\(from)", "to \(destination)")
        }
        let summary =
            total == 1
            ? "Upload of \(name(firstFailure))\(from) failed"
            : "\(failed.count) of \(files(total))\(from) failed to upload"
        let body =
            "\(name(firstFailure)): \(firstFailure.error?.message ?? "failed")"
            + (total == 1 ? "" : "\nuploadctl list --batch \(batch) --state failed")
        return (summary, body)
    }
}
