import Foundation
import UploadWire

/// One job on one line of `top`, laid out for the terminal's width. The ID, the state and the
/// file's name always show; the bar, the bytes and the ETA give way as the terminal narrows, and
/// what the job waits for (or its error) takes what is left. At 80 columns the whole line was cut
/// in its middle: `fo…n [##------] 11.37…15 MiB`.
struct TopLine {
    /// Below this `top` says the terminal is too narrow rather than draw garbage.
    static let minimumWidth = 50

    let width: Int
    let idWidth: Int

    static let stateWidth = 9  // "completed"

    /// The name's column: a quarter of the line, 12 to 32 columns.
    var nameWidth: Int { min(max(width / 4, 12), 32) }
    /// No bar below 60 columns; then an eighth of the line, 10 to 24 columns.
    var barWidth: Int { width < 60 ? 0 : min(max(width / 8, 10), 24) }
    /// Bytes as `1.25 MiB / 8.00 MiB` from 100 columns; a percentage below.
    var showsBytes: Bool { width >= 100 }

    init(width: Int, ids: [JobID]) {
        self.width = width
        idWidth = max(ids.map { "\($0)".count }.max() ?? 2, 2)
    }

    /// The column titles, over the columns they name.
    var titles: String {
        let head = pad("ID", idWidth) + " " + pad("STATE", Self.stateWidth) + " " + pad("NAME", nameWidth)
        return head + (barWidth > 0 ? " " + pad("PROGRESS", barWidth) : "") + " DONE"
    }

    func line(_ job: JobInfo) -> String {
        let done = JobFormatting.bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        let name = TerminalText.middleTruncated(
            TerminalText.escaped((job.source as NSString).lastPathComponent), to: nameWidth)
        var line =
            pad("\(job.id)", idWidth) + " " + pad(job.state.rawValue, Self.stateWidth) + " " + pad(name, nameWidth)
        if barWidth > 0 { line += " " + bar(job, done: done) }
        if showsBytes || job.bytesTotal == 0 {
            line += " " + JobFormatting.progress(done: done, total: job.bytesTotal)
        } else {
            line += " " + (JobFormatting.percent(done: done, total: job.bytesTotal) ?? "")
        }
        if job.state == .running {
            line += "  " + ByteSize.formatRate(job.speed)
            if let eta = job.eta, width >= 70 { line += "  eta \(JobFormatting.duration(eta))" }
        }
        if let note = Self.note(job) {
            let room = width - TerminalText.width(line) - 2
            if room >= 8 { line += "  " + TerminalText.middleTruncated(TerminalText.escaped(note), to: room) }
        }
        return TerminalText.width(line) > width ? TerminalText.middleTruncated(line, to: width) : line
    }

    /// What the job waits for or why it failed; otherwise its attempt when it is not the first.
    static func note(_ job: JobInfo) -> String? {
        if let activity = job.activity { return activity }
        if let waiting = JobFormatting.waitingText(job) { return waiting }
        if let error = job.error, job.state == .failed || job.state == .queued { return error.message }
        return job.attempts > 1 ? "attempt \(job.attempts)" : nil
    }

    private func bar(_ job: JobInfo, done: Int64) -> String {
        let fraction =
            job.bytesTotal > 0 ? min(Double(done) / Double(job.bytesTotal), 1) : (job.state == .completed ? 1 : 0)
        let filled = Int((fraction * Double(barWidth - 2)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - 2 - filled) + "]"
    }

    private func pad(_ text: String, _ columns: Int) -> String {
        text + String(repeating: " ", count: max(columns - TerminalText.width(text), 0))
    }
}
