import Foundation

/// SIZE and RATE values: a number with an optional binary suffix (`512K`, `8M`, `1G`).
public enum ByteSize {
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var text: String
        public var description: String {
            "'\(text)' is not a size; write a number of bytes with an optional K, M, G or T suffix (binary: 8M = 8 MiB)"
        }
    }

    /// Parses `123`, `512K`, `8M`, `1G`, `2T` (also `8MiB`, `8m`, `1.5G`).
    public static func parse(_ text: String) throws(ParseError) -> Int64 {
        var digits = text.trimmingCharacters(in: .whitespaces)
        var multiplier: Double = 1
        let lower = digits.lowercased()
        let (kib, mib, gib, tib): (Double, Double, Double, Double) = (1024, 1024 * 1024, 1024 * 1024 * 1024, 1024 * 1024 * 1024 * 1024)
        let suffixes: [(String, Double)] = [
            ("kib", kib), ("mib", mib), ("gib", gib), ("tib", tib), ("k", kib), ("m", mib), ("g", gib), ("t", tib), ("b", 1),
        ]
        for (suffix, value) in suffixes where lower.hasSuffix(suffix) {
            multiplier = value
            digits = String(digits.dropLast(suffix.count))
            break
        }
        guard let number = Double(digits), number >= 0, number.isFinite, !digits.isEmpty,
            digits.allSatisfy({ $0.isNumber || $0 == "." })
        else { throw ParseError(text: text) }
        let bytes = number * multiplier
        guard bytes < Double(Int64.max) else { throw ParseError(text: text) }
        return Int64(bytes.rounded())
    }

    /// Formats bytes for people, in decimal units like the mobile app did: `12.40 MB`.
    public static func format(_ bytes: Int64) -> String {
        let value = Double(bytes)
        switch value {
        case ..<1000: return "\(bytes) B"
        case ..<1e6: return String(format: "%.2f KB", value / 1e3)
        case ..<1e9: return String(format: "%.2f MB", value / 1e6)
        case ..<1e12: return String(format: "%.2f GB", value / 1e9)
        default: return String(format: "%.2f TB", value / 1e12)
        }
    }

    /// Formats a speed in bytes per second: `38.2 MB/s`.
    public static func formatRate(_ bytesPerSecond: Double) -> String {
        switch bytesPerSecond {
        case ..<1000: return String(format: "%.0f B/s", bytesPerSecond)
        case ..<1e6: return String(format: "%.1f KB/s", bytesPerSecond / 1e3)
        case ..<1e9: return String(format: "%.1f MB/s", bytesPerSecond / 1e6)
        default: return String(format: "%.2f GB/s", bytesPerSecond / 1e9)
        }
    }
}
