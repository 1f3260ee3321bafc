import Foundation
import UploadCore
import UploadHTTP
import UploadWire

/// What a job is doing or waiting for, in words, when its state alone does not say
/// (`JobInfo.activity`): a queued job showed only "queued" while it waited to retry after a 500,
/// for its image, or for the network, and a running one "100%, eta 0s" while the server had not
/// answered yet. Worked out from what the scheduler knows of the job, with nothing changed.
enum JobActivity {
    /// What the scheduler knows of a job beyond the job itself.
    struct Facts {
        /// Its attempt's meter, while it runs.
        var meter: ProgressMeter?
        var waiting: WaitReason?
        var preparing = false
        /// The time of day, asked only for a job waiting out a retry (a list of thousands asks none).
        var now: () -> Date
    }

    /// The public view of a job, with live numbers when it is running.
    static func info(_ job: Job, _ facts: Facts, includeHistory: Bool) -> JobInfo {
        if let meter = facts.meter, job.state == .running {
            let reading = meter.reading
            var info = JobInfo(
                job: job, bytesSent: meter.bytesSent, speed: reading.speed, speedSettled: reading.settled,
                includeHistory: includeHistory)
            info.activity = describe(job, facts)
            return info
        }
        var info = JobInfo(job: job, includeHistory: includeHistory, waiting: facts.waiting?.rawValue)
        if job.state == .queued { info.activity = describe(job, facts) }
        return info
    }

    static func describe(_ job: Job, _ facts: Facts) -> String? {
        switch job.state {
        case .running:
            guard let meter = facts.meter else { return nil }
            if let note = meter.note { return "sending again: \(note)" }
            if job.bytesTotal > 0 && meter.bytesSent >= job.bytesTotal { return "waiting for the server's answer" }
            return nil
        case .queued:
            if let reason = facts.waiting { return reason.description }
            if facts.preparing { return "preparing: \(steps(of: job))" }
            if job.needsPreparation { return "waiting to be prepared: \(steps(of: job))" }
            if let next = job.nextAttemptAt {
                let seconds = max(next.timeIntervalSince(facts.now()), 0)
                let why = job.error.map { ": \(reason($0))" } ?? ""
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
