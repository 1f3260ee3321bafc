import Foundation

/// A parsed DEST: where a job uploads to.
public enum Destination: Sendable, Equatable {
    /// An http(s) URL. A trailing slash means "append the file's name".
    case http(URL)
    /// `s3://bucket/key-or-prefix`.
    case s3(bucket: String, key: String)
    /// `file:///dir/` or `file:///dir/name`.
    case file(path: String)
    /// `REMOTE:path`, a named remote from the config.
    case remote(name: String, path: String)

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var text: String
        public var reason: String
        public var description: String {
            "bad destination '\(Redaction.redactURL(text))': \(reason); use http(s)://host/dir/, s3://bucket/prefix/, file:///dir/ or REMOTE:path"
        }
    }

    public static func parse(_ text: String) throws(ParseError) -> Destination {
        func fail(_ reason: String) -> ParseError { ParseError(text: text, reason: reason) }
        if text.isEmpty { throw fail("it is empty") }
        if text.contains(where: { $0.isNewline || $0 == "\0" }) { throw fail("it contains a control character") }
        let lower = text.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
                throw fail("not a valid URL (spaces and other special characters must be percent-encoded)")
            }
            return .http(url)
        }
        if lower.hasPrefix("s3://") {
            let rest = text.dropFirst(5)
            let bucket = String(rest.prefix(while: { $0 != "/" }))
            guard !bucket.isEmpty else { throw fail("no bucket name") }
            let key = String(rest.dropFirst(bucket.count).drop(while: { $0 == "/" }))
            return .s3(bucket: bucket, key: key)
        }
        if lower.hasPrefix("file://") {
            let path = String(text.dropFirst(7))
            guard path.hasPrefix("/") else { throw fail("a file:// destination needs an absolute path, as file:///dir/") }
            return .file(path: path.removingPercentEncoding ?? path)
        }
        if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon])
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." })
            else { throw fail("unknown scheme") }
            return .remote(name: name, path: String(text[text.index(after: colon)...]))
        }
        throw fail("no scheme")
    }

    /// The protocol `auto` picks without asking a server; nil when it must probe (http).
    public var impliedProtocol: UploadProtocol? {
        switch self {
        case .s3: return .s3
        case .file: return .file
        case .http, .remote: return nil
        }
    }
}

/// Turns a local file name into a single safe path component for a destination.
public enum SafeFileName {
    /// The last path component of `path`, refused when it could escape a directory or confuse a server.
    public static func component(from path: String) -> String? {
        let name = (path as NSString).lastPathComponent
        guard isSafe(name) else { return nil }
        return name
    }

    public static func isSafe(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/")
            && !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    }
}
