import Foundation

/// File-name extension to MIME type, from /etc/mime.types (Debian's media-types package).
final class MIMETypes: Sendable {
    static let shared = MIMETypes(path: "/etc/mime.types")

    private let types: [String: String]

    init(path: String) {
        var types: [String: String] = [:]
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard words.count > 1 else { continue }
                for ext in words.dropFirst() where types[String(ext)] == nil { types[String(ext)] = String(words[0]) }
            }
        }
        self.types = types
    }

    func type(forFileName name: String) -> String {
        types[Self.fileExtension(of: name)] ?? "application/octet-stream"
    }

    /// What follows the last dot of a file name, lowercased; empty when there is none, or when the
    /// name only starts with a dot (`.profile`), as NSString's `pathExtension` has it. Without
    /// NSString: each small file asks. ASCII lowercasing suffices: /etc/mime.types has no other letters.
    static func fileExtension(of name: String) -> String {
        let utf8 = name.utf8
        guard let dot = utf8.lastIndex(of: UInt8(ascii: ".")), dot != utf8.startIndex else { return "" }
        let ext = utf8[utf8.index(after: dot)...]
        return String(
            decoding: ext.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
