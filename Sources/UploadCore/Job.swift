import Foundation
import UploadWire

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
    /// What to make of the source before it is sent (image shrinking), in order; empty: the
    /// source as it is. Journaled as given, so a resume prepares nothing twice.
    public var preparation: [PreparationRequest] = []
    public var clientToken: String?
    public var metadata: [String: String]?
    /// The umask of the client that added the job, for what a `file://` copy creates (as `cp`
    /// would); nil: the daemon's own.
    public var umask: UInt32?
    /// The batch the job was added in: the ID of the batch's first job.
    public var batch: JobID?

    public init(
        source: String, destination: String, uploadProtocol: UploadProtocol = .auto, headers: [KeyValue] = [],
        fields: [KeyValue] = [], user: String? = nil, chunkSize: Int64? = nil, priority: Int = 0,
        snapshot: SnapshotMode = .auto, preparation: [PreparationRequest] = [], clientToken: String? = nil,
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
        self.preparation = preparation
        self.clientToken = clientToken
        self.metadata = metadata
    }

    /// The fields of uploadd 0.1's JSON journal (format 1, read only): it had no preparation.
    enum CodingKeys: String, CodingKey {
        case source, destination, uploadProtocol, headers, fields, user, chunkSize, priority, snapshot
        case clientToken, metadata, umask
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
    /// Identity of the cached copy itself (reflink or copy), checked before its bytes are sent:
    /// nil in journals of uploadd 0.2 and older.
    public var cachedCopy: FileIdentity?

    public init(
        kind: Kind, path: String, size: Int64, device: UInt64, inode: UInt64, modificationTimeNanoseconds: Int64
    ) {
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

/// What tells one file from another that took its place: inode and modification time. uploadd
/// checks the mtime (inode numbers do not survive a remount everywhere); the inode is for people.
public struct FileIdentity: Codable, Sendable, Equatable {
    public var inode: UInt64
    public var modificationTimeNanoseconds: Int64

    public init(inode: UInt64, modificationTimeNanoseconds: Int64) {
        self.inode = inode
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
    }
}

/// A job as the daemon keeps it: the spec plus everything that changes.
public struct Job: Decodable, Sendable, Equatable {
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
    /// Attempts in a row during which the daemon died (a crash, a kill, a power cut): a job
    /// that takes the daemon down twice is failed rather than run a third time.
    public var crashes = 0
    /// When the current run of failed attempts began (nil while none failed): the time budget of
    /// `RetryPolicy` counts from here.
    public var failingSince: Date?
    /// The file preparation made, once made: what every attempt sends instead of the snapshot.
    public var prepared: PreparedFile?
    /// Its place among the jobs of its priority once moved (`job.move`); nil: `defaultRank`.
    public var rank: Int64?
    /// The job ended and its `on_complete`/`on_failure` hook has not run yet. Set in the record
    /// that ends the job and cleared once the hook ran, so a hook cut off by a crash runs after
    /// the restart. Absent in older records: nothing pending.
    public var hookPending = false
    /// Counts the job's changes (`JournalState.apply` raises it with every record of the job), so
    /// clients can order what they hear of it. Journaled, so it keeps growing across restarts.
    public var revision: UInt64 = 0

    /// The fields of uploadd 0.1's JSON journal (format 1, read only).
    enum CodingKeys: String, CodingKey {
        case id, spec, state, resolvedProtocol, snapshot, bytesTotal, bytesAcked, checkpoint, attempts
        case failuresWithoutProgress, nextAttemptAt, error, result, createdAt, updatedAt, history
    }

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

    /// Where the job stands in the queue.
    public var place: QueuePlace { QueuePlace(priority: spec.priority, rank: rank ?? Self.defaultRank(of: id)) }

    /// A job never moved ranks by its ID, spaced so that moves fit between two jobs.
    public static func defaultRank(of id: JobID) -> Int64 { Int64(clamping: id.rawValue) &<< 16 }

    /// The protocol to show: the resolved one once known, else the requested one.
    public var effectiveProtocol: UploadProtocol { resolvedProtocol ?? spec.uploadProtocol }

    /// Keeps the last few history lines: enough to tell a job's story without growing without bound.
    public mutating func record(_ message: String, at date: Date) {
        history.append(JobEvent(at: date, message: message))
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }

    public static let historyLimit = 20
}
