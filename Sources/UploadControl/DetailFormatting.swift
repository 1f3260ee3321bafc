import Foundation
import UploadWire

/// `key: value` text for `show` and `status`.
enum DetailFormatting {
    /// `155.0 KiB from 5.11 MiB, 667x1000 jpeg quality 75, as IMG_1.jpg`.
    static func preparedText(_ prepared: PreparedInfo) -> String {
        var text = "\(ByteSize.format(prepared.size)) from \(ByteSize.format(prepared.originalSize))"
        let details = prepared.details
        if let width = details["width"], let height = details["height"] {
            text += ", \(width)x\(height)"
            if let format = details["format"] { text += " \(format)" }
            if let quality = details["quality"], details["format"] != "png" { text += " quality \(quality)" }
        }
        if let fileName = prepared.fileName { text += ", as \(fileName)" }
        if let why = details["image_error"] ?? details["image"] { text += " (\(why))" }
        return text
    }

    /// Every field of a job that says something, one `key: value` line each, then its history.
    static func jobLines(_ job: JobInfo) -> [String] {
        let done = JobFormatting.bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        var progress = JobFormatting.progress(done: done, total: job.bytesTotal)
        if let percent = JobFormatting.percent(done: done, total: job.bytesTotal) { progress += " (\(percent))" }
        var lines = [
            "id: \(job.id)",
            "state: \(JobFormatting.stateText(job))",
            "source: \(job.source)",
            "destination: \(job.destination)",
            "protocol: \(job.protocolName)",
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
        if let snapshot = job.snapshot {
            // The journal calls --snapshot none's choice "original": say it in the option's words.
            lines.append(
                "snapshot: \(snapshot == "original" ? "none (the original file, checked for changes)" : snapshot)")
        }
        if let image = job.image { lines.append("image: \(image)") }
        if let prepared = job.prepared { lines.append("prepared: \(preparedText(prepared))") }
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
            "bandwidth limit: \(status.bandwidthLimit.map { ByteSize.formatRate(Double($0)) } ?? "none")",
            "max transfers: \(status.maxTransfers)",
        ]
        if let conditions = status.conditions { lines += conditionLines(conditions) }
        lines += [
            "socket: \(status.socket)",
            "state directory: \(status.stateDirectory)",
            "cache directory: \(status.cacheDirectory)",
            "journal: \(ByteSize.format(status.journalBytes))",
        ]
        if let damage = status.journalDamage { lines.append("journal damage: \(damage)") }
        lines += status.configWarnings.map { "config warning: \($0)" }
        lines += (status.folderProblems ?? []).map { "folder not watched: \($0)" }
        if let errors = status.configErrors, !errors.isEmpty {
            lines.append("config errors (the last reload was refused; the config loaded before is in use):")
            lines += errors.map { "  \($0)" }
        }
        return lines
    }

    /// The connection, the power, and what the jobs held back wait for (only when some are).
    static func conditionLines(_ conditions: DaemonConditions) -> [String] {
        var lines = [
            "connection: \(DaemonConditions.connectionText(conditions.metered))",
            "power: \(DaemonConditions.powerText(conditions.onBattery))",
        ]
        let order = WaitReason.allCases.map(\.rawValue)
        let held = conditions.waiting.filter { $0.value > 0 }.sorted {
            (order.firstIndex(of: $0.key) ?? order.count, $0.key) < (
                order.firstIndex(of: $1.key) ?? order.count, $1.key
            )
        }
        if !held.isEmpty {
            let parts = held.map { "\($0.value) \(JobFormatting.waitingText($0.key) ?? $0.key)" }
            lines.append("held back: \(parts.joined(separator: ", "))")
        }
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
