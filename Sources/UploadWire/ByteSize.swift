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
        let (kib, mib, gib, tib): (Double, Double, Double, Double) = (
            1024, 1024 * 1024, 1024 * 1024 * 1024, 1024 * 1024 * 1024 * 1024
        )
        let suffixes: [(String, Double)] = [
            ("kib", kib), ("mib", mib), ("gib", gib), ("tib", tib), ("k", kib), ("m", mib), ("g", gib), ("t", tib),
            ("b", 1),
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

    /// Formats bytes for people in binary units with IEC names, the units SIZE and RATE are read
    /// in (`8M` is 8 MiB): `12.40 MiB`.
    public static func format(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        let (shift, unit) =
            switch bytes {
            case ..<0x10_0000: (10, "KiB")
            case ..<0x4000_0000: (20, "MiB")
            case ..<0x100_0000_0000: (30, "GiB")
            default: (40, "TiB")
            }
        // Hundredths of the unit, rounded as printf's %.2f rounds (half to even: the quotient of
        // a division by a power of two is exact), without Foundation's formatter: every add
        // formats the size of each file for its history.
        let whole = UInt64(bytes) >> shift
        let scaled = (UInt64(bytes) & ((1 << shift) - 1)) * 100
        var hundredths = whole * 100 + scaled >> shift
        let rest = scaled & ((1 << shift) - 1)
        let half: UInt64 = 1 << (shift - 1)
        if rest > half || (rest == half && hundredths % 2 == 1) { hundredths += 1 }
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) \(unit)"
    }

    /// Formats a speed in bytes per second, in the same units: `38.2 MiB/s`.
    public static func formatRate(_ bytesPerSecond: Double) -> String {
        switch bytesPerSecond {
        case ..<1024: return String(format: "%.0f B/s", bytesPerSecond)
        case ..<0x10_0000: return String(format: "%.1f KiB/s", bytesPerSecond / 0x400)
        case ..<0x4000_0000: return String(format: "%.1f MiB/s", bytesPerSecond / 0x10_0000)
        default: return String(format: "%.2f GiB/s", bytesPerSecond / 0x4000_0000)
        }
    }
}

/// A chunk or part size (`--chunk-size`, `chunk_size`): a SIZE from 1 byte to 5 GiB, S3's own
/// largest part. Larger values only come from typos or attackers, and would overflow the
/// arithmetic of block and part counts.
public enum ChunkSize {
    public static let largest: Int64 = 5 << 30

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var text: String
        public var description: String {
            "'\(text)' is not a chunk size; use 1 byte to 5G, with an optional K, M or G suffix (binary: 8M = 8 MiB)"
        }
    }

    public static func parse(_ text: String) throws(ParseError) -> Int64 {
        guard let size = try? ByteSize.parse(text), (1...largest).contains(size) else { throw ParseError(text: text) }
        return size
    }

    public static func isValid(_ size: Int64) -> Bool { (1...largest).contains(size) }
}
