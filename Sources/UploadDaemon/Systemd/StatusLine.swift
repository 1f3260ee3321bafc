import UploadCore
import UploadWire

/// The short status line systemd shows (STATUS=): "2 uploading, 5 queued, 38.2 MiB/s".
enum StatusLine {
    static func text(counts: [JobState: Int], held: [WaitReason: Int], speed: Double, limit: Int64?) -> String {
        var parts = ["\(counts[.running] ?? 0) uploading", "\(counts[.queued] ?? 0) queued"]
        for reason in WaitReason.allCases {
            if let count = held[reason], count > 0 { parts.append("\(count) \(reason.description)") }
        }
        if let failed = counts[.failed], failed > 0 { parts.append("\(failed) failed") }
        if speed > 0 { parts.append(ByteSize.formatRate(speed)) }
        if let limit { parts.append("limit \(ByteSize.formatRate(Double(limit)))") }
        return parts.joined(separator: ", ")
    }

    /// Which lines go to systemd: only changes, at most about once a second while uploads run
    /// (idle and finished states always get through).
    struct Reports {
        private var last = ""
        private var lastAt = ContinuousClock.now - .seconds(10)

        func isDue(_ text: String, at now: ContinuousClock.Instant, busy: Bool) -> Bool {
            text != last && (!busy || now - lastAt >= .seconds(1))
        }

        /// Records `text` as sent, and returns it.
        mutating func sent(_ text: String, at now: ContinuousClock.Instant) -> String {
            last = text
            lastAt = now
            return text
        }
    }
}
