import Foundation
import UploadCore
import UploadWire

/// What a job is doing or waiting for, in words, when its state alone does not say
/// (`JobInfo.activity`): a queued job showed only "queued" while it waited to retry after a 500,
/// for its image, or for the network, and a running one "100%, eta 0s" while the server had not
/// answered yet.
extension Scheduler {
    func activity(of job: Job) -> String? {
        switch job.state {
        case .running:
            guard let attempt = running[job.id] else { return nil }
            if let note = attempt.meter.note { return "sending again: \(note)" }
            if job.bytesTotal > 0 && attempt.meter.bytesSent >= job.bytesTotal {
                return "waiting for the server's answer"
            }
            return nil
        case .queued:
            if let reason = waiting[job.id] { return reason.description }
            if preparing[job.id] != nil { return "preparing: \(Self.steps(of: job))" }
            if job.needsPreparation { return "waiting to be prepared: \(Self.steps(of: job))" }
            if let next = job.nextAttemptAt {
                let seconds = max(next.timeIntervalSince(dependencies.now()), 0)
                let why = job.error.map { ": \(Self.reason($0))" } ?? ""
                return "retrying in \(formatSeconds(seconds))\(why)"
            }
            return nil
        default:
            return nil
        }
    }

    /// An attempt's error for a line about its job: "HTTP 503 Service Unavailable: ...". The
    /// request it names first ("PUT http://host/up/a.jpg: ", as `CurlRequest` writes its errors)
    /// is the job's own destination, already on its line; the job's error keeps it.
    static func reason(_ error: JobError) -> String {
        let message = error.message
        guard let space = message.firstIndex(of: " "),
            message[..<space].allSatisfy({ $0.isASCII && $0.isUppercase }),
            let end = message[space...].range(of: ": "),
            message[message.index(after: space)..<end.lowerBound].contains("://"),
            !message[message.index(after: space)..<end.lowerBound].contains(" ")
        else { return message }
        return String(message[end.upperBound...])
    }

    private static func steps(of job: Job) -> String {
        job.spec.preparation.map(\.step).joined(separator: ", ")
    }
}
