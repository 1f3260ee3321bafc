import Foundation
import UploadWire

/// What `uploadctl top` shows: every job (from one `job.list`, then kept current by events), the
/// selected one, the filter, and the scroll position. Pure: the screen draws it, tests drive it.
struct TopModel {
    private(set) var jobs: [JobID: JobInfo] = [:]
    /// The jobs shown, in ID order, filtered.
    private(set) var visible: [JobID] = []
    private(set) var selected: JobID?
    /// The first visible row drawn (rows scroll to keep the selection on screen).
    private(set) var scroll = 0
    /// Shows only jobs whose name, source or state contains it.
    var filter = "" { didSet { refresh() } }
    var bandwidthLimit: Int64?

    mutating func load(_ list: [JobInfo]) {
        jobs = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        refresh()
    }

    mutating func apply(state job: JobInfo) {
        let isNew = jobs[job.id] == nil
        var updated = job
        // A state event has no history: keep nothing else of the old object, it is the newest.
        if let old = jobs[job.id], updated.history == nil { updated.history = old.history }
        jobs[job.id] = updated
        if isNew || !filter.isEmpty { refresh() }
    }

    mutating func apply(progress: JobProgressEvent) {
        guard var job = jobs[progress.id] else { return }
        job.bytesSent = progress.bytesSent
        job.bytesAcked = progress.bytesAcked
        job.bytesTotal = progress.bytesTotal
        job.speed = progress.speed
        job.eta = progress.eta
        if job.state == .queued { job.state = .running }
        jobs[progress.id] = job
    }

    mutating func remove(_ ids: [JobID]) {
        for id in ids { jobs[id] = nil }
        refresh()
    }

    var selectedJob: JobInfo? { selected.flatMap { jobs[$0] } }

    /// Moves the selection `delta` rows (clamped), keeping it on a screen of `rows` rows.
    mutating func moveSelection(by delta: Int, rows: Int) {
        guard !visible.isEmpty else { return }
        let index = selected.flatMap { visible.firstIndex(of: $0) } ?? 0
        let target = min(max(index + delta, 0), visible.count - 1)
        selected = visible[target]
        keepSelectionVisible(rows: rows)
    }

    mutating func keepSelectionVisible(rows: Int) {
        guard let selected, let index = visible.firstIndex(of: selected), rows > 0 else {
            scroll = 0
            return
        }
        if index < scroll { scroll = index }
        if index >= scroll + rows { scroll = index - rows + 1 }
        scroll = max(0, min(scroll, max(visible.count - rows, 0)))
    }

    /// The rows to draw on a screen of `rows` rows.
    func rows(_ count: Int) -> [JobInfo] {
        guard count > 0, scroll < visible.count else { return [] }
        return visible[scroll..<min(scroll + count, visible.count)].compactMap { jobs[$0] }
    }

    /// `3 running · 12 queued · 1 failed · 4.2 MiB/s · limit 5.0 MiB/s`.
    var header: String {
        var counts: [JobState: Int] = [:]
        var waiting = 0
        for job in jobs.values {
            counts[job.state, default: 0] += 1
            if job.waiting != nil { waiting += 1 }
        }
        var parts = JobState.allCases.compactMap { state in counts[state].map { "\($0) \(state.rawValue)" } }
        if parts.isEmpty { parts = ["no jobs"] }
        if waiting > 0 { parts.append("\(waiting) waiting (network, metered or battery)") }
        let speed = jobs.values.filter { $0.state == .running }.reduce(0) { $0 + $1.speed }
        parts.append(ByteSize.formatRate(speed))
        if let bandwidthLimit { parts.append("limit \(ByteSize.formatRate(Double(bandwidthLimit)))") }
        return parts.joined(separator: " · ")
    }

    /// One job on one line of `width` columns: ID, state, name, a bar, bytes, speed, ETA, and
    /// the attempts or the error.
    static func line(_ job: JobInfo, width: Int) -> String {
        let done = JobFormatting.bytesDone(acked: job.bytesAcked, sent: job.bytesSent)
        let fraction = job.bytesTotal > 0 ? Double(done) / Double(job.bytesTotal) : (job.state == .completed ? 1 : 0)
        let id = String("\(job.id)".prefix(7)).padding(toLength: 7, withPad: " ", startingAt: 0)
        let state = job.state.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
        let bytes = JobFormatting.progress(done: done, total: job.bytesTotal)
        var tail = " \(bytes)"
        if job.state == .running {
            tail += "  \(ByteSize.formatRate(job.speed))"
            if let eta = job.eta { tail += "  eta \(JobFormatting.duration(eta))" }
        }
        if let error = job.error, job.state == .failed || job.state == .queued {
            // The error gets at most a third of the line: the name and the bar stay readable.
            tail += "  " + TerminalText.middleTruncated(TerminalText.escaped(error.message), to: max(width / 3, 16))
        } else if job.attempts > 1 {
            tail += "  attempt \(job.attempts)"
        }
        // Name and bar share what the fixed columns leave; the bar gets a fifth, 10 to 30 columns.
        let room = max(width - 18 - TerminalText.width(tail), 12)
        let barWidth = min(max(room / 4, 10), 30)
        let filled = Int((fraction * Double(barWidth - 2)).rounded(.down))
        let bar =
            "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - 2 - filled) + "]"
        let nameRoom = max(room - barWidth - 2, 4)
        let name = TerminalText.middleTruncated(
            TerminalText.escaped((job.source as NSString).lastPathComponent), to: nameRoom)
        let namePadding = String(repeating: " ", count: max(nameRoom - TerminalText.width(name), 0))
        let line = "\(id) \(state) \(name)\(namePadding) \(bar)\(tail)"
        return TerminalText.width(line) > width ? TerminalText.middleTruncated(line, to: width) : line
    }

    private mutating func refresh() {
        let needle = filter.lowercased()
        visible = jobs.keys.sorted().filter { id in
            guard !needle.isEmpty, let job = jobs[id] else { return true }
            return job.source.lowercased().contains(needle) || job.state.rawValue.hasPrefix(needle)
        }
        if let selected, visible.contains(selected) { return }
        selected = visible.first
    }
}
