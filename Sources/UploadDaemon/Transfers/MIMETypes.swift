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
        let ext = (name as NSString).pathExtension.lowercased()
        return types[ext] ?? "application/octet-stream"
    }
}
