import Foundation
import UploadCore

/// `key: value` text for `show` and `status`.
enum DetailFormatting {
    /// Every field of a job that says something, one `key: value` line each, then its history.
    static func jobLines(_ job: JobInfo) -> [String] {
        let done = JobFormatting.bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        var progress = JobFormatting.progress(done: done, total: job.bytesTotal)
        if let percent = JobFormatting.percent(done: done, total: job.bytesTotal) { progress += " (\(percent))" }
        var lines = [
            "id: \(job.id)",
            "state: \(job.state.rawValue)",
            "source: \(job.source)",
            "destination: \(job.destination)",
            "protocol: \(job.protocol.rawValue)",
            "progress: \(progress)",
            "acknowledged: \(ByteSize.format(job.bytesAcked))",
        ]
        if job.state == .running {
            lines.append("speed: \(ByteSize.formatRate(job.speed))")
            if let eta = job.eta { lines.append("eta: \(JobFormatting.duration(eta))") }
        }
        lines.append("attempts: \(job.attempts)")
        lines.append("priority: \(job.priority)")
        if let user = job.user { lines.append("user: \(user)") }
        if let snapshot = job.snapshot { lines.append("snapshot: \(snapshot)") }
        lines.append("created: \(timestamp(job.createdAt))")
        lines.append("updated: \(timestamp(job.updatedAt))")
        if let next = job.nextAttemptAt { lines.append("next attempt: \(timestamp(next))") }
        if let error = job.error {
            let status = error.status.map { " \($0)" } ?? ""
            lines.append("error: \(error.message) [\(error.code)\(status)]")
        }
        if let result = job.result {
            if let url = result.url { lines.append("result url: \(url)") }
            if let status = result.status { lines.append("result status: \(status)") }
            if let body = result.body, !body.isEmpty { lines.append("result body: \(oneLine(body))") }
        }
        if let history = job.history, !history.isEmpty {
            lines.append("history:")
            lines += history.map { "  \(timestamp($0.at))  \($0.message)" }
        }
        return lines
    }

    /// The daemon's state in a few lines.
    static func statusLines(_ status: DaemonStatus) -> [String] {
        let knownStates = JobState.allCases.map(\.rawValue)
        let otherStates = status.jobs.keys.filter { !knownStates.contains($0) }.sorted()
        let counts = (knownStates + otherStates).map { "\(status.jobs[$0] ?? 0) \($0)" }
        var lines = [
            "uploadd \(status.version), pid \(status.pid), up \(JobFormatting.duration(status.uptime))",
            "jobs: \(counts.joined(separator: ", "))",
            "speed: \(ByteSize.formatRate(status.speed))",
            "max transfers: \(status.maxTransfers)",
            "socket: \(status.socket)",
            "state directory: \(status.stateDirectory)",
            "cache directory: \(status.cacheDirectory)",
            "journal: \(ByteSize.format(status.journalBytes))",
        ]
        if let damage = status.journalDamage { lines.append("journal damage: \(damage)") }
        lines += status.configWarnings.map { "config warning: \($0)" }
        return lines
    }

    /// ISO 8601 in UTC, to the second, like the JSON.
    static func timestamp(_ date: Date) -> String {
        date.ISO8601Format()
    }

    private static func oneLine(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return flat.count > 200 ? String(flat.prefix(200)) + "…" : flat
    }
}
