import Foundation
import UploadWire

/// What `uploadctl top` shows: every job (from one `job.list`, then kept current by events), the
/// selected one, the filter, and the scroll position. Pure: the screen draws it, tests drive it.
struct TopModel {
    private(set) var jobs: [JobID: JobInfo] = [:]
    /// The jobs shown, in the order they run (`QueueOrder`), filtered.
    private(set) var visible: [JobID] = []
    /// Each waiting job's place in the queue, from the daemon's last `job.list` (events carry
    /// none): kept apart from the jobs, which events replace whole.
    private(set) var positions: [JobID: Int] = [:]
    private(set) var selected: JobID?
    /// The first visible row drawn (rows scroll to keep the selection on screen).
    private(set) var scroll = 0
    /// Shows only jobs whose name, source or state contains it.
    var filter = "" { didSet { refresh() } }
    var bandwidthLimit: Int64?

    mutating func load(_ list: [JobInfo]) {
        jobs = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        positions = Self.positions(in: list)
        refresh()
    }

    /// Takes the queue's order again (`DaemonConnection.queuePositions`).
    mutating func load(positions: [JobID: Int]) {
        self.positions = positions
        refresh()
    }

    private static func positions(in list: [JobInfo]) -> [JobID: Int] {
        Dictionary(list.compactMap { job in job.position.map { (job.id, $0) } }, uniquingKeysWith: { $1 })
    }

    mutating func apply(state job: JobInfo) {
        let isNew = jobs[job.id] == nil
        var updated = job
        // A state event has no history: keep nothing else of the old object, it is the newest.
        if let old = jobs[job.id], updated.history == nil { updated.history = old.history }
        let stateChanged = jobs[job.id]?.state != job.state
        jobs[job.id] = updated
        if isNew || stateChanged || !filter.isEmpty { refresh() }
    }

    mutating func apply(progress: JobProgressEvent) {
        guard var job = jobs[progress.id] else { return }
        job.bytesSent = progress.bytesSent
        job.bytesAcked = progress.bytesAcked
        job.bytesTotal = progress.bytesTotal
        job.speed = progress.speed
        job.eta = progress.eta
        let started = job.state == .queued
        if started { job.state = .running }
        jobs[progress.id] = job
        if started { refresh() }
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

    private mutating func refresh() {
        let needle = filter.lowercased()
        let positions = positions
        visible = jobs.values.filter { job in
            guard !needle.isEmpty else { return true }
            return job.source.lowercased().contains(needle) || job.state.rawValue.hasPrefix(needle)
        }.sorted { QueueOrder.comesBefore($0, $1, position: { positions[$0.id] }) }.map(\.id)
        if let selected, visible.contains(selected) { return }
        selected = visible.first
    }
}
