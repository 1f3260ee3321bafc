/// The wire protocol a job uploads with.
public enum UploadProtocol: String, Codable, Sendable, CaseIterable {
    /// Chosen from the destination: `s3://` is s3, `file://` is file, http(s) is tus when an
    /// OPTIONS probe answers `Tus-Resumable`, else put.
    case auto
    case put
    case post
    case tus
    case s3
    case chunked
    case file

    /// What uploadd knows of a protocol before it sends anything: the one table a new protocol adds
    /// its row to (its Transfer goes in the daemon's `TransferRegistry`).
    public struct Traits: Sendable {
        /// The kinds of destination it uploads to.
        public var destinations: Set<Destination.Kind>
        /// One line for `uploadctl add --help`.
        public var summary: String
        /// What to say when it is asked to upload to another kind of destination, by kind, where
        /// more can be said than that it cannot.
        public var wrongDestination: [Destination.Kind: String] = [:]
        /// The kinds of destination `auto` picks it for without asking a server. Never more than
        /// one protocol per kind (`UploadProtocolTests`); a new protocol is picked by `auto` only
        /// where it says so, so a second protocol for `file://` leaves `auto` as it was.
        public var chosenByAutoFor: Set<Destination.Kind> = []
        /// Whether an http upload lands under the URL's own name, a URL ending in `/` getting the
        /// file's name appended (the others send the name in the body: a form part, tus metadata).
        public var namesTheFileByURL = false
    }

    /// Made once per protocol: asked at each add and each attempt, and a `Traits` holds sets.
    public var traits: Traits {
        switch self {
        case .auto: Self.autoTraits
        case .put: Self.putTraits
        case .post: Self.postTraits
        case .tus: Self.tusTraits
        case .s3: Self.s3Traits
        case .chunked: Self.chunkedTraits
        case .file: Self.fileTraits
        }
    }

    private static let autoTraits = makeTraits(.auto)
    private static let putTraits = makeTraits(.put)
    private static let postTraits = makeTraits(.post)
    private static let tusTraits = makeTraits(.tus)
    private static let s3Traits = makeTraits(.s3)
    private static let chunkedTraits = makeTraits(.chunked)
    private static let fileTraits = makeTraits(.file)

    private static func makeTraits(_ uploadProtocol: UploadProtocol) -> Traits {
        switch uploadProtocol {
        case .auto:
            return Traits(
                destinations: [.http, .s3, .file],
                summary: "s3:// is s3, file:// is file, http(s) is tus when the server says so, else put")
        case .put:
            return Traits(
                destinations: [.http], summary: "one PUT of the whole file (WebDAV)", namesTheFileByURL: true)
        case .post:
            return Traits(destinations: [.http], summary: "a multipart/form-data POST")
        case .tus:
            return Traits(destinations: [.http], summary: "tus 1.0, resumable, in chunks")
        case .s3:
            return Traits(
                destinations: [.s3], summary: "S3 multipart upload, resumable",
                wrongDestination: [
                    .http:
                        "protocol s3 uploads to s3://bucket/prefix/ (with an endpoint in a remote or AWS_ENDPOINT_URL), not to an http URL"
                ], chosenByAutoFor: [.s3])
        case .chunked:
            return Traits(destinations: [.http], summary: "the block protocol, resumable")
        case .file:
            return Traits(destinations: [.file], summary: "a copy into a local folder", chosenByAutoFor: [.file])
        }
    }

    /// The names as people type them, for help and messages: "auto, put, post, … or file".
    public static var spelledOut: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// The names separated by `|`, for a synopsis.
    public static var alternatives: String { allCases.map(\.rawValue).joined(separator: "|") }
}

/// How the source file is protected against changes between `add` and upload.
public enum SnapshotMode: String, Codable, Sendable, CaseIterable {
    /// A reflink into the cache, else a copy when there is room, else the original with a guard.
    case auto
    /// A reflink or a copy; fails the add when there is no room.
    case copy
    /// The original file, with a size/mtime/inode guard that fails the job when the file changes.
    case none
}
