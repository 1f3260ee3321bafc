import Foundation
import UploadWire

/// Text for people: progress, durations, one-line job summaries and the `list` table.
enum JobFormatting {
    /// The bytes to show as done: the committed count, or more when this attempt has sent more
    /// (a PUT only commits at the end, yet its progress should move).
    static func bytesDone(acked: Int64, sent: Int64) -> Int64 { max(acked, sent) }

    /// `12.40 MiB / 80.00 MiB`.
    static func progress(done: Int64, total: Int64) -> String {
        "\(ByteSize.format(done)) / \(ByteSize.format(total))"
    }

    /// `15.5%`, or nil when the size is unknown (zero).
    static func percent(done: Int64, total: Int64) -> String? {
        guard total > 0 else { return nil }
        return String(format: "%.1f%%", min(Double(done) / Double(total), 1) * 100)
    }

    /// `0.3s`, `21s`, `3m05s`, `2h03m`, `4d02h`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds > 0 else { return "0s" }
        if seconds < 10, seconds != seconds.rounded() { return String(format: "%.1fs", seconds) }
        let whole = Int(min(seconds.rounded(), Double(Int.max / 2)))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3600: return String(format: "%dm%02ds", whole / 60, whole % 60)
        case ..<86400: return String(format: "%dh%02dm", whole / 3600, whole % 3600 / 60)
        default: return String(format: "%dd%02dh", whole / 86400, whole % 86400 / 3600)
        }
    }

    /// A `job.progress` line for `watch`: `7 running  12.40 MiB / 80.00 MiB  15.5%  3.2 MiB/s  eta 21s`.
    static func progressLine(_ event: JobProgressEvent, state: JobState = .running) -> String {
        let done = bytesDone(acked: event.bytesAcked, sent: event.bytesSent)
        var parts = ["\(event.id) \(state.rawValue)", progress(done: done, total: event.bytesTotal)]
        if let percent = percent(done: done, total: event.bytesTotal) { parts.append(percent) }
        parts.append(ByteSize.formatRate(event.speed))
        if let eta = event.eta { parts.append("eta \(duration(eta))") }
        return parts.joined(separator: "  ")
    }

    /// What a queued job waits for, for people: `waiting for the network`.
    static func waitingText(_ job: JobInfo) -> String? { waitingText(job.waiting) }

    /// What a job's `waiting` means, for people.
    static func waitingText(_ waiting: String?) -> String? {
        guard let waiting else { return nil }
        return WaitReason(rawValue: waiting)?.description ?? "waiting (\(waiting))"
    }

    /// `queued`, or `queued (retrying in 43s: HTTP 500)`: the daemon's `activity` says what a
    /// waiting job waits for, and `waiting` for a daemon that has no `activity`.
    static func stateText(_ job: JobInfo) -> String {
        if let activity = job.activity { return "\(job.state.rawValue) (\(TerminalText.escaped(activity)))" }
        return waitingText(job).map { "\(job.state.rawValue), \($0)" } ?? job.state.rawValue
    }

    /// A `job.state` line for `watch`: `7 completed`, `7 failed: MESSAGE`, `7 queued (retry in 30s)`.
    static func stateLine(_ job: JobInfo, now: Date = Date()) -> String {
        var line = "\(job.id) \(stateText(job))"
        if job.state == .failed, let error = job.error {
            line += ": \(error.message)"
        } else if job.activity == nil, job.state == .queued, let next = job.nextAttemptAt, next > now {
            line += " (retry in \(duration(next.timeIntervalSince(now))))"
        }
        return line
    }

    /// The header of `list`'s table.
    static let tableHeader = ["ID", "STATE", "PROGRESS", "SPEED", "PROTOCOL", "SOURCE -> DESTINATION"]

    /// One `list` row: speed only while running; a completed job points at where its file is.
    static func tableRow(_ job: JobInfo) -> [String] {
        let done = bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        let target = job.state == .completed ? job.result?.url ?? job.destination : job.destination
        return [
            job.id.description, stateText(job), progress(done: done, total: job.bytesTotal),
            job.state == .running ? ByteSize.formatRate(job.speed) : "-", job.protocolName,
            "\(TerminalText.escaped(job.source)) -> \(TerminalText.escaped(target))",
        ]
    }

    /// Lines of left-aligned columns two spaces apart, measured in terminal columns; the last
    /// column is not padded.
    static func table(_ rows: [[String]]) -> [String] {
        guard let columnCount = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columnCount)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], TerminalText.width(cell)) }
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                if column == row.count - 1 { return cell }
                return cell + String(repeating: " ", count: widths[column] - TerminalText.width(cell))
            }.joined(separator: "  ")
        }
    }

    /// `list`'s output for people, in the order the jobs run: fitted to `width` on a terminal
    /// (`ListLayout`, with what a job waits for on a line of its own), whole values otherwise.
    static func listLines(_ jobs: [JobInfo], width: Int? = nil) -> [String] {
        guard !jobs.isEmpty else { return ["no jobs"] }
        let jobs = QueueOrder.sorted(jobs)
        guard let width else { return table([tableHeader] + jobs.map(tableRow)) }
        return ListLayout.lines(jobs, width: width)
    }
}
