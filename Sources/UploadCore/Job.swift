import Foundation

/// A `K: V` header or a `K=V` form field, in the order the user gave them.
public struct KeyValue: Codable, Sendable, Equatable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// What the user asked for when adding a job. Stored in the journal as given; a remote's
/// settings and secrets are resolved when the job runs, so a reload applies to queued jobs.
public struct JobSpec: Codable, Sendable, Equatable {
    /// Absolute path of the file the user named.
    public var source: String
    /// An http(s) URL, `s3://bucket/key`, `file:///dir/`, or `REMOTE:path`.
    public var destination: String
    public var uploadProtocol: UploadProtocol
    public var headers: [KeyValue]
    public var fields: [KeyValue]
    /// `USER[:PASSWORD]` for Basic auth. The password is a secret: never logged or shown.
    public var user: String?
    public var chunkSize: Int64?
    public var priority: Int
    public var snapshot: SnapshotMode
    public var image: String?
    public var clientToken: String?
    public var metadata: [String: String]?

    public init(
        source: String, destination: String, uploadProtocol: UploadProtocol = .auto, headers: [KeyValue] = [],
        fields: [KeyValue] = [], user: String? = nil, chunkSize: Int64? = nil, priority: Int = 0,
        snapshot: SnapshotMode = .auto, image: String? = nil, clientToken: String? = nil,
        metadata: [String: String]? = nil
    ) {
        self.source = source
        self.destination = destination
        self.uploadProtocol = uploadProtocol
        self.headers = headers
        self.fields = fields
        self.user = user
        self.chunkSize = chunkSize
        self.priority = priority
        self.snapshot = snapshot
        self.image = image
        self.clientToken = clientToken
        self.metadata = metadata
    }

    /// The user name alone, for display.
    public var userName: String? { user.map { String($0.split(separator: ":", maxSplits: 1).first ?? "") } }
}

/// Where a job's bytes come from, fixed at `add`.
public struct SourceSnapshot: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// A FICLONE copy-on-write clone in the cache directory.
        case reflink
        /// A full copy in the cache directory.
        case copy
        /// The user's own file, guarded by its identity below.
        case original
    }

    public var kind: Kind
    /// The file to read: in the cache for reflink/copy, else the source itself.
    public var path: String
    public var size: Int64
    /// Identity of the original when it was added, to notice a change when `kind == .original`.
    public var device: UInt64
    public var inode: UInt64
    public var modificationTimeNanoseconds: Int64

    public init(kind: Kind, path: String, size: Int64, device: UInt64, inode: UInt64, modificationTimeNanoseconds: Int64)
    {
        self.kind = kind
        self.path = path
        self.size = size
        self.device = device
        self.inode = inode
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
    }

    /// Whether the cached file belongs to the daemon and is deleted when the job ends.
    public var isCached: Bool { kind != .original }
}

/// A classified error, as shown in a job's `error` field.
public struct JobError: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// A stable, machine-readable class: `network`, `timeout`, `stalled`, `http`, `tls`, `source`,
    /// `config`, `protocol`, `io`, `no_space`, `canceled`.
    public var code: String
    /// What happened and, where it helps, what to do about it.
    public var message: String
    /// The HTTP status, when the server answered.
    public var status: Int?

    public init(code: String, message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { message }
}

/// What the server said when the upload finished.
public struct JobResult: Codable, Sendable, Equatable {
    /// Where the uploaded file can be found, when known.
    public var url: String?
    /// The final HTTP status, when HTTP was used.
    public var status: Int?
    /// The start of the final response body (capped), for post and block uploads.
    public var body: String?

    public init(url: String? = nil, status: Int? = nil, body: String? = nil) {
        self.url = url
        self.status = status
        self.body = body
    }
}

/// Protocol-specific state that lets an interrupted upload continue where the server has it.
/// Journaled as soon as the server hands it out (a tus URL, an S3 UploadId, a block token).
public enum Checkpoint: Codable, Sendable, Equatable {
    case tus(uploadURL: String, expires: String?)
    case s3(uploadID: String, key: String, partSize: Int64)
    case chunked(upToken: String, blockSize: Int64, blocksAcknowledged: Int64)
}

/// One line of a job's history: what happened and when.
public struct JobEvent: Codable, Sendable, Equatable {
    public var at: Date
    public var message: String

    public init(at: Date, message: String) {
        self.at = at
        self.message = message
    }
}

/// A job as the daemon keeps it: the spec plus everything that changes.
public struct Job: Codable, Sendable, Equatable {
    public var id: JobID
    public var spec: JobSpec
    public var state: JobState
    /// The protocol actually used, once `auto` has been resolved.
    public var resolvedProtocol: UploadProtocol?
    public var snapshot: SourceSnapshot?
    public var bytesTotal: Int64
    /// Bytes the server has committed. Never goes backwards within an upload.
    public var bytesAcked: Int64
    public var checkpoint: Checkpoint?
    /// Transfer attempts started, in all.
    public var attempts: Int
    /// Failed attempts in a row that made no progress: what the retry budget counts.
    public var failuresWithoutProgress: Int
    public var nextAttemptAt: Date?
    public var error: JobError?
    public var result: JobResult?
    public var createdAt: Date
    public var updatedAt: Date
    public var history: [JobEvent]

    public init(id: JobID, spec: JobSpec, createdAt: Date) {
        self.id = id
        self.spec = spec
        self.state = .queued
        self.bytesTotal = 0
        self.bytesAcked = 0
        self.attempts = 0
        self.failuresWithoutProgress = 0
        self.createdAt = createdAt
        self.updatedAt = createdAt
        self.history = []
    }

    /// The protocol to show: the resolved one once known, else the requested one.
    public var effectiveProtocol: UploadProtocol { resolvedProtocol ?? spec.uploadProtocol }

    /// Keeps the last few history lines: enough to tell a job's story without growing without bound.
    public mutating func record(_ message: String, at date: Date) {
        history.append(JobEvent(at: date, message: message))
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }

    public static let historyLimit = 20
}
