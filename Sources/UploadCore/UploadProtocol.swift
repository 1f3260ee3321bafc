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

    /// Whether the server can tell us how much it already holds, so a retry continues rather than restarts.
    public var resumesFromServer: Bool {
        switch self {
        case .tus, .s3, .chunked: return true
        case .auto, .put, .post, .file: return false
        }
    }
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
