import Foundation
import UploadWire

/// What `--image SPEC` asks of an image before it is sent: `max=2048,quality=75,format=jpeg,
/// max-bytes=300K,strip-gps`. Parsed by the daemon when the job is added (a bad SPEC fails the
/// add) and by the helper that does the work; journaled as the user wrote it.
struct ImageSpec: Equatable, Sendable {
    enum Format: String, Sendable, CaseIterable {
        case jpeg, webp, keep
    }

    enum Metadata: String, Sendable {
        /// EXIF kept (capture time, camera); the orientation tag reset once applied.
        case keep
        /// The EXIF GPS directory and XMP (which can carry a position) removed.
        case stripGPS = "strip-gps"
        /// All metadata removed.
        case strip
    }

    enum OnError: String, Sendable, CaseIterable {
        /// A corrupt or refused image fails the job.
        case fail
        /// It is uploaded as it is.
        case original
    }

    /// The longest side in pixels; never upscaled. Nil: the size is kept.
    var maxSide: Int?
    var quality = 75
    var format = Format.jpeg
    /// A size goal: the quality, then the size, go down until the file fits.
    var maxBytes: Int64?
    var metadata = Metadata.keep
    var onError = OnError.fail
    /// Images declaring more pixels are refused before decoding (decompression bombs).
    var maxPixels: Int64 = 200_000_000
    /// Whether libvips's loaders marked untrusted (less fuzzed: JPEG 2000, FITS, …) may read it.
    var allowUntrusted = false

    init() {}

    struct ParseError: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// The words a SPEC may contain, for messages.
    static let syntax =
        "max=PIXELS, quality=1-100, format=jpeg|webp|keep, max-bytes=SIZE, strip-gps, strip, on-error=fail|original, max-pixels=MEGAPIXELS, untrusted-loaders"

    /// What a new job's SPEC must be beyond what `parse` reads: not empty, and each setting once
    /// (a second would silently win). Checked at add only: a journaled job's SPEC, taken by an
    /// older uploadd, is prepared as it was taken.
    static func checkNew(_ text: String) throws(ParseError) {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ParseError(
                description: "image SPEC is empty: say what to do, as max=2048 or format=jpeg (it takes \(syntax))")
        }
        var given: [String: String] = [:]
        for item in text.split(separator: ",", omittingEmptySubsequences: true) {
            let name = item.split(separator: "=", maxSplits: 1)[0].trimmingCharacters(in: .whitespaces)
            // strip and strip-gps are one setting.
            let setting = name == "strip-gps" ? "strip" : name
            if let earlier = given[setting] {
                throw ParseError(
                    description: "image SPEC '\(text)': \(earlier) and \(item) both set \(setting); give it once")
            }
            given[setting] = String(item)
        }
    }

    static func parse(_ text: String) throws(ParseError) -> ImageSpec {
        var spec = ImageSpec()
        func bad(_ message: String) -> ParseError {
            ParseError(description: "image SPEC '\(text)': \(message) (it takes \(syntax))")
        }
        func number(_ value: String?, _ name: String, _ range: ClosedRange<Int>) throws(ParseError) -> Int {
            guard let value, let number = Int(value), range.contains(number) else {
                throw bad("\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        for item in text.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let value = parts.count == 2 ? parts[1] : nil
            switch parts[0] {
            case "max": spec.maxSide = try number(value, "max", 16...65_535)
            case "quality": spec.quality = try number(value, "quality", 1...100)
            case "format":
                guard let value, let format = Format(rawValue: value) else { throw bad("format is jpeg, webp or keep") }
                spec.format = format
            case "max-bytes":
                guard let value, let bytes = try? ByteSize.parse(value), bytes >= 1024 else {
                    throw bad("max-bytes takes a size of at least 1K (300K, 2M)")
                }
                spec.maxBytes = bytes
            case "strip-gps" where value == nil: spec.metadata = .stripGPS
            case "strip" where value == nil: spec.metadata = .strip
            case "on-error":
                guard let value, let onError = OnError(rawValue: value) else {
                    throw bad("on-error is fail or original")
                }
                spec.onError = onError
            case "max-pixels":
                spec.maxPixels = Int64(try number(value, "max-pixels (megapixels)", 1...10_000)) * 1_000_000
            case "untrusted-loaders" where value == nil: spec.allowUntrusted = true
            default: throw bad("unknown '\(item)'")
            }
        }
        return spec
    }

    /// Whether the SPEC asks only that the image keep its format, at most its size: then a
    /// result larger than the original is no better than it (a PNG written again by libvips may
    /// come out bigger), and the original is sent instead.
    var asksOnlyToKeepFormat: Bool { format == .keep && maxBytes == nil && metadata == .keep }

    /// The helper's arguments: one `name=value` each, every option spelled out.
    var helperArguments: [String] {
        var items: [String] = []
        if let maxSide { items.append("max=\(maxSide)") }
        items.append("quality=\(quality)")
        items.append("format=\(format.rawValue)")
        if let maxBytes { items.append("max-bytes=\(maxBytes)") }
        items.append("metadata=\(metadata.rawValue)")
        items.append("max-pixels=\(maxPixels)")
        items.append("untrusted-loaders=\(allowUntrusted ? 1 : 0)")
        return items
    }
}
