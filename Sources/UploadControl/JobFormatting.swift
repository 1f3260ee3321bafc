import Foundation
import UploadCore

/// Text for people: progress, durations, one-line job summaries and the `list` table.
enum JobFormatting {
    /// The bytes to show as done: the committed count, or more when this attempt has sent more
    /// (a PUT only commits at the end, yet its progress should move).
    static func bytesDone(acked: Int64, sent: Int64) -> Int64 { max(acked, sent) }

    /// `12.40 MB / 80.00 MB`.
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

    /// A `job.progress` line for `watch`: `7 running  12.40 MB / 80.00 MB  15.5%  3.2 MB/s  eta 21s`.
    static func progressLine(_ event: JobProgressEvent, state: JobState = .running) -> String {
        let done = bytesDone(acked: event.bytesAcked, sent: event.bytesSent)
        var parts = ["\(event.id) \(state.rawValue)", progress(done: done, total: event.bytesTotal)]
        if let percent = percent(done: done, total: event.bytesTotal) { parts.append(percent) }
        parts.append(ByteSize.formatRate(event.speed))
        if let eta = event.eta { parts.append("eta \(duration(eta))") }
        return parts.joined(separator: "  ")
    }

    /// A `job.state` line for `watch`: `7 completed`, `7 failed: MESSAGE`, `7 queued (retry in 30s)`.
    static func stateLine(_ job: JobInfo, now: Date = Date()) -> String {
        var line = "\(job.id) \(job.state.rawValue)"
        if job.state == .failed, let error = job.error {
            line += ": \(error.message)"
        } else if job.state == .queued, let next = job.nextAttemptAt, next > now {
            line += " (retry in \(duration(next.timeIntervalSince(now))))"
        }
        return line
    }

    /// The header of `list`'s table.
    static let tableHeader = ["ID", "STATE", "PROGRESS", "SPEED", "PROTOCOL", "SOURCE -> DESTINATION"]

    /// One `list` row: speed only while running.
    static func tableRow(_ job: JobInfo) -> [String] {
        let done = bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        return [
            job.id.description, job.state.rawValue, progress(done: done, total: job.bytesTotal),
            job.state == .running ? ByteSize.formatRate(job.speed) : "-", job.protocol.rawValue,
            "\(job.source) -> \(job.destination)",
        ]
    }

    /// Lines of left-aligned columns two spaces apart; the last column is not padded.
    static func table(_ rows: [[String]]) -> [String] {
        guard let columnCount = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columnCount)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
    }

    /// `list`'s output for people.
    static func listLines(_ jobs: [JobInfo]) -> [String] {
        guard !jobs.isEmpty else { return ["no jobs"] }
        return table([tableHeader] + jobs.map(tableRow))
    }
}
