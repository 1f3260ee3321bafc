import Foundation
import Synchronization

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
        // The jobs of one add share their destination, and each is parsed at add, at every
        // attempt and at its end; URLComponents is the costly part, so the last few are kept.
        if let known = recentlyParsed.withLock({ $0.first { $0.text == text } }) { return known.destination }
        let destination = try parseAnew(text)
        recentlyParsed.withLock { recent in
            if recent.count == 8 { recent.removeFirst() }
            recent.append((text, destination))
        }
        return destination
    }

    /// Where the files of `folder` (a path inside a folder being uploaded, empty for the folder's
    /// own files) go: DEST itself, or its folder path below DEST, each name percent-encoded (what
    /// is not unreserved in RFC 3986), so that a `#`, `?` or `%` stays part of the name on every
    /// kind of destination. Nil when DEST is not a folder (a trailing `/`, or `REMOTE:` alone)
    /// and `folder` is not empty.
    public static func under(_ destination: String, folder: String) -> String? {
        guard !folder.isEmpty else { return destination }
        guard isFolder(destination) else { return nil }
        return destination
            + folder.split(separator: "/").map {
                $0.addingPercentEncoding(withAllowedCharacters: URLUnreserved.characters) ?? String($0)
            }.joined(separator: "/") + "/"
    }

    /// Whether DEST names a folder, which a file's name is appended to: a trailing `/`, or `REMOTE:`.
    public static func isFolder(_ destination: String) -> Bool {
        destination.hasSuffix("/") || destination.hasSuffix(":")
    }

    private static let recentlyParsed = Mutex<[(text: String, destination: Destination)]>([])

    private static func parseAnew(_ text: String) throws(ParseError) -> Destination {
        func fail(_ reason: String) -> ParseError { ParseError(text: text, reason: reason) }
        if text.isEmpty { throw fail("it is empty") }
        if text.contains(where: { $0.isNewline || $0 == "\0" }) { throw fail("it contains a control character") }
        let lower = text.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            guard let components = URLComponents(string: Self.encodingSpecialCharacters(text)),
                let host = components.host, !host.isEmpty, let url = components.url
            else {
                throw fail("not a valid URL")
            }
            if components.fragment != nil {
                throw fail("a fragment (#...) is never sent to a server; remove it")
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
            guard path.hasPrefix("/") else {
                throw fail("a file:// destination needs an absolute path, as file:///dir/")
            }
            if path.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
                throw fail(
                    "a file:// destination takes no query (?) or fragment (#); write such characters as %3F and %23")
            }
            return .file(path: path.removingPercentEncoding ?? path)
        }
        if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon])
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." })
            else { throw fail("unknown scheme") }
            let path = text[text.index(after: colon)...]
            // A URL of a scheme uploadd does not speak (ftp://, sftp://, webdav://), not a remote
            // named like one: otherwise the add fails with "no remote named 'ftp'".
            if path.hasPrefix("//") { throw fail("uploadd does not upload to \(name):// URLs") }
            return .remote(name: name, path: String(path))
        }
        throw fail("no scheme")
    }

    /// `text` with the characters a URL cannot hold as they are (spaces, quotes, `<>`, control
    /// characters, non-ASCII) percent-encoded, as rclone and browsers do; `%` escapes already there
    /// and the URL's own delimiters are kept.
    public static func encodingSpecialCharacters(_ text: String) -> String {
        // Most URLs need nothing: no CharacterSet work then (it showed in the profile of many adds).
        if text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !isUnsafeInURL($0) }) { return text }
        return text.addingPercentEncoding(withAllowedCharacters: urlAllowed) ?? text
    }

    /// Printable ASCII that `urlAllowed` lacks. A switch: a `Set` hashed each byte of each URL.
    private static func isUnsafeInURL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), UInt8(ascii: "^"),
            UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
            true
        default: false
        }
    }
    private static let urlAllowed: CharacterSet = {
        var allowed = CharacterSet.urlQueryAllowed.union(.urlPathAllowed).union(.urlHostAllowed).union(.urlUserAllowed)
        allowed.insert(charactersIn: "%#[]:@")
        return allowed
    }()

    /// The file name the destination itself gives (`http://h/dir/name`, `s3://b/key`,
    /// `file:///dir/name`, `REMOTE:dir/name`), or nil when it names a folder (a trailing `/`).
    public var explicitFileName: String? {
        let path: String
        switch self {
        case .http(let url): path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        case .s3(_, let key): path = key
        case .file(let filePath): path = filePath
        case .remote(_, let remotePath): path = remotePath
        }
        guard !path.isEmpty, !path.hasSuffix("/") else { return nil }
        let last = String(path.split(separator: "/").last ?? "")
        let name = last.removingPercentEncoding ?? last
        return SafeFileName.isSafe(name) ? name : nil
    }

    /// What a protocol can upload to (a remote is one of these once its config is read).
    public enum Kind: String, Sendable, Hashable {
        case http, s3, file
    }

    /// The kind of destination; nil for a remote, whose kind its config decides.
    public var kind: Kind? {
        switch self {
        case .http: return .http
        case .s3: return .s3
        case .file: return .file
        case .remote: return nil
        }
    }

    /// The protocol `auto` picks without asking a server: the one whose traits say so for this
    /// kind of destination (`chosenByAutoFor`); nil where the server must be asked (http), or for
    /// a remote.
    public var impliedProtocol: UploadProtocol? {
        guard let kind else { return nil }
        return UploadProtocol.allCases.first { $0.traits.chosenByAutoFor.contains(kind) }
    }
}

/// Turns a local file name into a single safe path component for a destination.
public enum SafeFileName {
    /// The last path component of `path`, refused when it could escape a directory or confuse a server.
    public static func component(from path: String) -> String? {
        let name = lastComponent(of: path)
        guard isSafe(name) else { return nil }
        return name
    }

    /// What `NSString.lastPathComponent` gives (`a/b/` → `b`, `/` → `/`), by bytes: it runs for
    /// every job that starts and every file of an add, where splitting the path showed in the profiles.
    public static func lastComponent(of path: String) -> String {
        let bytes = path.utf8
        guard let lastKept = bytes.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return path.isEmpty ? "" : "/" }
        // Both ends sit next to a `/` or at an end of the string: never inside a character.
        let end = bytes.index(after: lastKept)
        let start =
            bytes[..<lastKept].lastIndex(of: UInt8(ascii: "/")).map { bytes.index(after: $0) } ?? bytes.startIndex
        return String(path[start..<end])
    }

    public static func isSafe(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    }
}
