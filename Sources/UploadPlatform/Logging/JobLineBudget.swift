import UploadWire

/// Keeps the routine lines about single jobs (notice and info: completed, canceled, removed,
/// retrying) from flooding the log when thousands of small files go by.
///
/// journald stops taking a service's messages for the rest of 30 s past a burst (10,000 by
/// default, scaled up with the journal's free disk space: 47,500 with 50 GB free), warnings
/// included, and spends CPU on every line. uploadd ends up to ~5,500 small files a second, one
/// line each. So up to `perSecond` such lines a second are written as they come; past that they
/// are counted, and one line at the end of the second says how many there were, of which jobs, in
/// which states. Warnings, errors and debug lines are never held.
package struct JobLineBudget {
    /// Lines a second written one by one: with a summary each second, 3,030 in 30 s at most.
    package static let perSecond = 100

    /// What to do with a routine line.
    package enum Decision: Equatable {
        case write
        case hold
    }

    /// The line that counts the lines held, at the most severe level among them.
    package typealias Summary = (level: LogLevel, text: String)

    private var windowStart: Double?
    private var written = 0
    private var held: [String: Int] = [:]
    private var lowest: JobID?
    private var highest: JobID?
    /// The most severe level of the lines held so far: the summary's own.
    private(set) var summaryLevel = LogLevel.info

    /// Whether lines are held for a summary not written yet (the caller then asks `summary(at:)`
    /// again when the second is over).
    package var isHolding: Bool { !held.isEmpty }

    /// Takes in a line about job `id` in `state` at `now` (seconds of a monotonic clock). Also
    /// returns the summary of a second that ended before `now`, to write before the line.
    package mutating func admit(_ id: JobID, state: String, level: LogLevel = .info, at now: Double) -> (
        Decision, summary: Summary?
    ) {
        let summary = summary(at: now)
        if windowStart == nil { windowStart = now }
        guard written >= Self.perSecond else {
            written += 1
            return (.write, summary)
        }
        held[state, default: 0] += 1
        summaryLevel = min(summaryLevel, level)
        lowest = min(lowest ?? id, id)
        highest = max(highest ?? id, id)
        return (.hold, summary)
    }

    /// The summary of the lines held, once their second is over at `now` (nil: none, or not yet).
    /// The next second starts empty.
    package mutating func summary(at now: Double) -> Summary? {
        guard let start = windowStart, now - start >= 1 else { return nil }
        defer {
            windowStart = nil
            written = 0
            held = [:]
            lowest = nil
            highest = nil
            summaryLevel = .info
        }
        guard let lowest, let highest else { return nil }
        let count = held.values.reduce(0, +)
        let states = held.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.value) \($0.key)" }
        let jobs = lowest == highest ? "job \(lowest)" : "jobs \(lowest) to \(highest)"
        let text =
            "\(count) more \(count == 1 ? "line" : "lines") about \(jobs) in that second, not written one by one (over "
            + "\(Self.perSecond) a second): \(states.joined(separator: ", ")). "
            + "`uploadctl show ID` tells a job's story"
        return (summaryLevel, text)
    }
}
