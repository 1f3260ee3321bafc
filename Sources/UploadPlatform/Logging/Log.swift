import Foundation
import Glibc
import Synchronization
import UploadWire

/// Syslog priorities, as journald understands them in `<N>` prefixes.
package enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    package init?(name: String) {
        switch name.lowercased() {
        case "error", "err": self = .error
        case "warning", "warn": self = .warning
        case "notice": self = .notice
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    package static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Lines on stderr: with a `<N>` priority prefix when journald reads them (JOURNAL_STREAM names
/// stderr), else plain readable lines with a level word for people.
package enum Log {
    private struct Settings {
        var level: LogLevel = .info
        var journald = false
        var jobLines = JobLineBudget()
        /// Whether a write of the held lines' summary is scheduled.
        var summaryScheduled = false
    }

    private static let settings = Mutex(Settings())

    /// Reads JOURNAL_STREAM and compares it with stderr's device and inode, as sd_journal_stream_fd's
    /// documentation recommends, so a redirected stderr gets plain lines.
    package static func configure(level: LogLevel, environment: [String: String] = ProcessInfo.processInfo.environment)
    {
        var journald = false
        if let stream = environment["JOURNAL_STREAM"] {
            let parts = stream.split(separator: ":")
            var info = stat()
            if parts.count == 2, fstat(STDERR_FILENO, &info) == 0 {
                journald = UInt64(parts[0]) == UInt64(info.st_dev) && UInt64(parts[1]) == UInt64(info.st_ino)
            }
        }
        settings.withLock {
            $0.level = level
            $0.journald = journald
        }
    }

    package static var isJournald: Bool { settings.withLock { $0.journald } }

    package static func error(_ message: @autoclosure () -> String) { write(.error, message) }
    package static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    package static func notice(_ message: @autoclosure () -> String) { write(.notice, message) }
    package static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    package static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }

    /// A line about one job: under journald a structured entry with UPLOAD_JOB_ID= and friends,
    /// elsewhere a plain line.
    /// The context is built only when the line is logged (it redacts the destination).
    package static func job(
        _ level: LogLevel, _ job: @autoclosure () -> JobLogContext, _ message: @autoclosure () -> String
    ) {
        let (limit, journald) = settings.withLock { ($0.level, $0.journald) }
        guard level <= limit else { return }
        let job = job()
        if level == .info || level == .notice {
            guard admitRoutineLine(about: job, at: level) else { return }
        }
        let text = "job \(job.id): \(message())"
        if journald {
            JournaldFields.send(message: text, level: level, job: job)
        } else {
            write(level, { text })
        }
    }

    /// Whether a routine line about `job` is written now (else it is counted in a summary).
    private static func admitRoutineLine(about job: JobLogContext, at lineLevel: LogLevel) -> Bool {
        let now = MonotonicClock.seconds()
        let (decision, summary, scheduleSummary) = settings.withLock { settings in
            let (decision, summary) = settings.jobLines.admit(job.id, state: job.state, level: lineLevel, at: now)
            let schedule = settings.jobLines.isHolding && !settings.summaryScheduled
            if schedule { settings.summaryScheduled = true }
            return (decision, summary, schedule)
        }
        if let summary { write(summary.level, { summary.text }) }
        if scheduleSummary { writeSummary(after: 1.05) }
        return decision == .write
    }

    /// Writes the summary of the held lines once their second is over.
    private static func writeSummary(after seconds: Double) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + seconds) {
            let now = MonotonicClock.seconds()
            let (summary, holding) = settings.withLock { settings in
                let summary = settings.jobLines.summary(at: now)
                settings.summaryScheduled = settings.jobLines.isHolding
                return (summary, settings.summaryScheduled)
            }
            if let summary { write(summary.level, { summary.text }) }
            if holding { writeSummary(after: 0.25) }
        }
    }

    private static func write(_ level: LogLevel, _ message: () -> String) {
        let (limit, journald) = settings.withLock { ($0.level, $0.journald) }
        guard level <= limit else { return }
        var bytes = Array((journald ? "<\(level.rawValue)>" : "uploadd: \(label(level))").utf8)
        // One message, one line: its own line breaks become spaces. A server's words in it (an
        // error's body, a URL) may hold escape sequences, which the terminal of `tail -f` or
        // `journalctl` would obey: they are shown escaped, as uploadctl shows them.
        bytes += TerminalText.escaped(message(), lineBreak: " ").utf8
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeMutableBytes { _ = Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    private static func label(_ level: LogLevel) -> String {
        switch level {
        case .error: return "error: "
        case .warning: return "warning: "
        case .notice, .info: return ""
        case .debug: return "debug: "
        }
    }
}
