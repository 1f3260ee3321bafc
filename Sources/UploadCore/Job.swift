import Foundation
import UploadWire

/// What the user asked for when adding a job. Stored in the journal as given; a remote's
/// settings and secrets are resolved when the job runs, so a reload applies to queued jobs.
///
/// What is the job's own (the source's file name) is stored inline; what the jobs of one add
/// share (the destination, the source's folder, headers, credentials, metadata, the batch...) is
/// kept in `AddOptions`, behind one reference that the jobs of an add share: a queue of a million
/// jobs held 104 bytes of options per job, then a source path of 64 bytes and a destination of 16.
public struct JobSpec: Decodable, Sendable, Equatable {
    /// The last part of `source`: inline when it is 15 bytes or shorter, as most file names are.
    @usableFromInline var sourceName: String
    /// The rest, shared: read through the properties below.
    @usableFromInline var options: OutOfLine<AddOptions>
    /// From -1000 to 1000 (`JobSpecBuilder`): two bytes, where an `Int` took eight.
    @usableFromInline var storedPriority: Int16
    // Last, so that the job's one-byte fields pack after them (`Job.Fields`).
    public var uploadProtocol: UploadProtocol
    public var snapshot: SnapshotMode

    /// Absolute path of the file the user named: its folder (shared by the jobs of an add) and
    /// `sourceName`, joined when read.
    public var source: String {
        @inlinable get { (options.box?.value.sourceFolder ?? "") + sourceName }
        set {
            let (folder, name) = Self.split(newValue)
            sourceName = name
            options.value.sourceFolder = folder
        }
    }
    /// An http(s) URL, `s3://bucket/key`, `file:///dir/`, or `REMOTE:path`.
    public var destination: String {
        @inlinable get { options.box?.value.destination ?? "" }
        set { options.value.destination = newValue }
    }

    /// A path as its folder (up to and with the last `/`) and the name after it.
    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        let nameStart = path.utf8.index(after: slash)
        return (String(path[..<nameStart]), String(path[nameStart...]))
    }

    /// Higher starts first. Kept within what two bytes hold; `job.add` takes -1000 to 1000.
    public var priority: Int {
        @inlinable get { Int(storedPriority) }
        set { storedPriority = Int16(clamping: newValue) }
    }
    /// The client's name for the job, which makes a repeated `job.add` answer the first job
    /// (`--client-token`): set on few jobs, so kept with the options, out of line.
    public var clientToken: String? {
        @inlinable get { options.box?.value.clientToken }
        set { options.value.clientToken = newValue }
    }
    public var headers: [KeyValue] {
        @inlinable get { options.box?.value.headers ?? [] }
        set { options.value.headers = newValue }
    }
    public var fields: [KeyValue] {
        @inlinable get { options.box?.value.fields ?? [] }
        set { options.value.fields = newValue }
    }
    /// `USER[:PASSWORD]` for Basic auth. The password is a secret: never logged or shown.
    public var user: String? {
        @inlinable get { options.box?.value.user }
        set { options.value.user = newValue }
    }
    public var chunkSize: Int64? {
        @inlinable get { options.box?.value.chunkSize }
        set { options.value.chunkSize = newValue }
    }
    /// What to make of the source before it is sent (image shrinking), in order; empty: the
    /// source as it is. Journaled as given, so a resume prepares nothing twice.
    public var preparation: [PreparationRequest] {
        @inlinable get { options.box?.value.preparation ?? [] }
        set { options.value.preparation = newValue }
    }
    public var metadata: [String: String]? {
        @inlinable get { options.box?.value.metadata }
        set { options.value.metadata = newValue }
    }
    /// The umask of the client that added the job, for what a `file://` copy creates (as `cp`
    /// would); nil: the daemon's own.
    public var umask: UInt32? {
        @inlinable get { options.box?.value.umask }
        set { options.value.umask = newValue }
    }
    /// The batch the job was added in: the ID of the batch's first job.
    public var batch: JobID? {
        @inlinable get { options.box?.value.batch }
        set { options.value.batch = newValue }
    }
    /// post: the name of the form part that carries the file; nil: the remote's `file_field`, else `file`.
    public var fileField: String? {
        @inlinable get { options.box?.value.fileField }
        set { options.value.fileField = newValue }
    }
    /// The watched folder (`[folder NAME]`) that took the file; nil for a job a client added.
    /// With the snapshot's identity, the job is the folder's record of having taken that version.
    public var folder: String? {
        @inlinable get { options.box?.value.folder }
        set { options.value.folder = newValue }
    }
    /// What the folder's rule said, when the file was taken, to do with it once uploaded:
    /// `delete` or `move:DIR`; nil to keep it. Fixed at the take: a rule changed later does not
    /// act on files taken before.
    public var folderAfter: String? {
        @inlinable get { options.box?.value.folderAfter }
        set { options.value.folderAfter = newValue }
    }

    public init(
        source: String, destination: String, uploadProtocol: UploadProtocol = .auto, headers: [KeyValue] = [],
        fields: [KeyValue] = [], user: String? = nil, chunkSize: Int64? = nil, priority: Int = 0,
        snapshot: SnapshotMode = .auto, preparation: [PreparationRequest] = [], clientToken: String? = nil,
        metadata: [String: String]? = nil
    ) {
        let (folder, name) = Self.split(source)
        sourceName = name
        self.uploadProtocol = uploadProtocol
        self.snapshot = snapshot
        storedPriority = Int16(clamping: priority)
        options = OutOfLine(
            AddOptions(
                destination: destination, sourceFolder: folder, headers: headers, fields: fields, user: user,
                chunkSize: chunkSize, preparation: preparation, metadata: metadata, clientToken: clientToken))
    }

    /// The fields of uploadd 0.1's JSON journal (format 1, read only): it had no preparation.
    enum CodingKeys: String, CodingKey {
        case source, destination, uploadProtocol, headers, fields, user, chunkSize, priority, snapshot
        case clientToken, metadata, umask
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            source: try container.decode(String.self, forKey: .source),
            destination: try container.decode(String.self, forKey: .destination),
            uploadProtocol: try container.decode(UploadProtocol.self, forKey: .uploadProtocol),
            headers: try container.decode([KeyValue].self, forKey: .headers),
            fields: try container.decode([KeyValue].self, forKey: .fields),
            user: try container.decodeIfPresent(String.self, forKey: .user),
            chunkSize: try container.decodeIfPresent(Int64.self, forKey: .chunkSize),
            priority: try container.decode(Int.self, forKey: .priority),
            snapshot: try container.decode(SnapshotMode.self, forKey: .snapshot),
            clientToken: try container.decodeIfPresent(String.self, forKey: .clientToken),
            metadata: try container.decodeIfPresent([String: String].self, forKey: .metadata))
        umask = try container.decodeIfPresent(UInt32.self, forKey: .umask)
    }

    /// The user name alone, for display.
    public var userName: String? { user.map { String($0.split(separator: ":", maxSplits: 1).first ?? "") } }
}

/// The part of a `JobSpec` that the jobs of one add share, and the client token that only a few
/// jobs have: see `JobSpec`'s properties.
public struct AddOptions: OutOfLineValue {
    @usableFromInline var destination = ""
    /// The source's path up to and with its last `/`.
    @usableFromInline var sourceFolder = ""
    @usableFromInline var headers: [KeyValue] = []
    @usableFromInline var fields: [KeyValue] = []
    @usableFromInline var user: String?
    @usableFromInline var chunkSize: Int64?
    @usableFromInline var preparation: [PreparationRequest] = []
    @usableFromInline var metadata: [String: String]?
    @usableFromInline var umask: UInt32?
    @usableFromInline var batch: JobID?
    @usableFromInline var fileField: String?
    @usableFromInline var folder: String?
    @usableFromInline var folderAfter: String?
    @usableFromInline var clientToken: String?

    public init() {}

    init(
        destination: String, sourceFolder: String, headers: [KeyValue], fields: [KeyValue], user: String?,
        chunkSize: Int64?, preparation: [PreparationRequest], metadata: [String: String]?, clientToken: String?
    ) {
        self.destination = destination
        self.sourceFolder = sourceFolder
        self.clientToken = clientToken
        self.headers = headers
        self.fields = fields
        self.user = user
        self.chunkSize = chunkSize
        self.preparation = preparation
        self.metadata = metadata
    }
}

extension AddOptions {
    /// By bytes, not as Swift compares strings: its `==` holds canonically equivalent text equal
    /// ("café" with its é as one code point, or as an e and an accent), and on Linux those are two
    /// folders, two URLs, two header values. A job given a shared box (`AddOptionsSharer`) must
    /// find its own bytes in it.
    public static func == (a: Self, b: Self) -> Bool {
        same(a.destination, b.destination) && same(a.sourceFolder, b.sourceFolder) && same(a.headers, b.headers)
            && same(a.fields, b.fields) && same(a.user, b.user) && a.chunkSize == b.chunkSize
            && a.preparation.elementsEqual(b.preparation) { same($0.step, $1.step) && same($0.options, $1.options) }
            && same(a.metadata, b.metadata) && a.umask == b.umask && a.batch == b.batch
            && same(a.fileField, b.fileField) && same(a.folder, b.folder) && same(a.folderAfter, b.folderAfter)
            && same(a.clientToken, b.clientToken)
    }

    private static func same(_ a: String?, _ b: String?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.hasTheBytes(of: b)
    }

    private static func same(_ a: [KeyValue], _ b: [KeyValue]) -> Bool {
        a.elementsEqual(b) { same($0.name, $1.name) && same($0.value, $1.value) }
    }

    private static func same(_ a: [String: String]?, _ b: [String: String]?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        func pairs(_ map: [String: String]) -> [KeyValue] {
            map.map { KeyValue(name: $0.key, value: $0.value) }.sorted {
                $0.name.utf8.lexicographicallyPrecedes($1.name.utf8)
            }
        }
        return a.count == b.count && same(pairs(a), pairs(b))
    }
}

extension String {
    /// Whether the two hold the same UTF-8 bytes (`==` holds canonically equivalent text equal).
    func hasTheBytes(of other: String) -> Bool {
        var mine = self
        var theirs = other
        return mine.withUTF8 { a in
            theirs.withUTF8 { b in
                a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
    }
}

/// Lets specs made one after another share their `AddOptions` when they hold the same bytes, as
/// the jobs of one add do: one box for the add rather than one per job.
public struct AddOptionsSharer: Sendable {
    private var last = OutOfLine<AddOptions>()

    public init() {}

    public mutating func share(_ spec: inout JobSpec) {
        guard spec.options.box !== last.box else { return }
        if spec.options == last { spec.options = last } else { last = spec.options }
    }

    /// Lets go of the options kept for the next job when they hold a password or headers (which
    /// may carry a token): the jobs that share them keep them, but the sharer would keep them
    /// after those jobs are gone.
    public mutating func forgetSecrets() {
        guard let kept = last.box?.value, kept.user != nil || !kept.headers.isEmpty else { return }
        last = OutOfLine()
    }
}

/// What `OutOfLine` holds: a value whose `init()` is "nothing set".
public protocol OutOfLineValue: Sendable, Equatable {
    init()
}

/// Fields most values never set, behind a reference, and no reference at all while none is set.
/// Every change makes a new box (they change a few times in a job's life), so a box never
/// changes while another value shares it, and values may share one box (`StringSharer`).
public struct OutOfLine<Value: OutOfLineValue>: Sendable, Equatable {
    @usableFromInline final class Box: Sendable {
        @usableFromInline let value: Value
        init(_ value: Value) { self.value = value }
    }
    /// Read each field from the box on its own (`box?.value.field`), in a plain getter: a
    /// `_read` yielding from the box was ended by Swift 6.3's optimizer before `Job.write(to:)`
    /// had read what it yielded, a use after free that AddressSanitizer caught and that crashed
    /// the daemon when the freed frame was reused.
    @usableFromInline var box: Box?

    init(_ value: Value = Value()) {
        box = value == Value() ? nil : Box(value)
    }

    /// All of them, for a change (which makes a new box).
    @usableFromInline var value: Value {
        get { box?.value ?? Value() }
        set { box = newValue == Value() ? nil : Box(newValue) }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.box === rhs.box || lhs.value == rhs.value }
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

    // Declared in this order so that the value packs (81 bytes rather than 89): `kind` fills
    // the byte after `cachedCopy`'s tag.
    /// The file to read: in the cache for reflink/copy, else the source itself.
    public var path: String
    public var size: Int64
    /// Identity of the original when it was added, to notice a change when `kind == .original`.
    public var device: UInt64
    public var inode: UInt64
    public var modificationTimeNanoseconds: Int64
    /// Identity of the cached copy itself (reflink or copy), checked before its bytes are sent:
    /// nil in journals of uploadd 0.2 and older. For a pack, the pack's identity.
    public var cachedCopy: FileIdentity?
    public var kind: Kind
    /// Where the job's `size` bytes start in `path` when the copy is in a pack: one file in the
    /// cache holding the copies of many small files of one `add`, one after another, deleted when
    /// the last of its jobs is done with it. Nil: the file holds this job's bytes alone. Journal
    /// format 5 and later.
    public var packOffset: Int64?

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

    /// As a job keeps it: an empty path where it is the source's (`Job.snapshot`).
    func kept(for spec: JobSpec) -> SourceSnapshot {
        guard path.hasTheBytes(of: spec.source) else { return self }
        var kept = self
        kept.path = ""
        return kept
    }

    /// Whether the cached file belongs to the daemon and is deleted when the job ends (a pack,
    /// when the last of its jobs ends).
    public var isCached: Bool { kind != .original }

    /// Whether the cached file is a pack shared with other jobs.
    public var isPacked: Bool { packOffset != nil }

    /// Where the job's bytes start in `path`.
    public var start: Int64 { packOffset ?? 0 }
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
///
/// A job is one reference to its fields, copied on write as `Array` is. A queue keeps its jobs in
/// the pages of a `JobTable`, so a slot costs 8 bytes rather than the 225 of the fields
/// themselves, and a copy of a job costs a retain.
public struct Job: Sendable, Equatable, Decodable {
    /// Internal rather than private so that reads inline into other modules (`@inlinable`): a
    /// read through a call copied the whole property, a `JobSpec` for its `clientToken`.
    @usableFromInline var storage: Storage

    public init(id: JobID, spec: JobSpec, createdAt: Date) {
        storage = Storage(Fields(id: id, spec: spec, createdAt: createdAt))
    }

    /// Reads uploadd 0.1's JSON journal (format 1).
    public init(from decoder: any Decoder) throws {
        storage = Storage(try Fields(from: decoder))
    }

    public static func == (lhs: Job, rhs: Job) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    /// The fields, for changing in place: copied first when another job value shares them.
    private var fields: Fields {
        get { storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
            yield &storage.fields
        }
    }

    public var id: JobID {
        @inlinable _read { yield storage.fields.id }
        _modify { yield &fields.id }
    }
    public var spec: JobSpec {
        @inlinable _read { yield storage.fields.spec }
        _modify { yield &fields.spec }
    }
    public var state: JobState {
        @inlinable _read { yield storage.fields.state }
        _modify { yield &fields.state }
    }
    /// The protocol actually used, once `auto` has been resolved.
    public var resolvedProtocol: UploadProtocol? {
        @inlinable _read { yield storage.fields.resolvedProtocol }
        _modify { yield &fields.resolvedProtocol }
    }
    /// Where the job's bytes come from. An original's path is its source, and is kept as an empty
    /// path: the source is kept as a folder and a name (`JobSpec`), and a whole path of its own
    /// would cost the 64 bytes per job that splitting the source saved.
    public var snapshot: SourceSnapshot? {
        @inlinable get {
            guard var snapshot = storage.fields.snapshot else { return nil }
            if snapshot.path.isEmpty { snapshot.path = storage.fields.spec.source }
            return snapshot
        }
        set { fields.snapshot = newValue?.kept(for: spec) }
    }
    /// The snapshot's kind, without making the path `snapshot` returns (a listing of a million
    /// jobs asks each for it).
    public var snapshotKind: SourceSnapshot.Kind? { storage.fields.snapshot?.kind }
    /// Whether the job's bytes are a copy of the daemon's (`SourceSnapshot.isCached`), without
    /// making the path `snapshot` returns.
    public var snapshotIsCached: Bool { storage.fields.snapshot?.isCached == true }
    public var bytesTotal: Int64 {
        @inlinable _read { yield storage.fields.bytesTotal }
        _modify { yield &fields.bytesTotal }
    }
    /// Bytes the server has committed. Never goes backwards within an upload.
    public var bytesAcked: Int64 {
        @inlinable _read { yield storage.fields.bytesAcked }
        _modify { yield &fields.bytesAcked }
    }
    public var checkpoint: Checkpoint? {
        @inlinable get { storage.fields.rare.box?.value.checkpoint }
        _modify { yield &fields.rare.value.checkpoint }
    }
    /// Transfer attempts started, in all.
    public var attempts: Int {
        @inlinable get { Int(storage.fields.attempts) }
        set { fields.attempts = Int32(clamping: newValue) }
    }
    /// Failed attempts in a row that made no progress: what the retry budget counts.
    public var failuresWithoutProgress: Int {
        @inlinable get { Int(storage.fields.failuresWithoutProgress) }
        set { fields.failuresWithoutProgress = Int32(clamping: newValue) }
    }
    public var nextAttemptAt: Date? {
        @inlinable get { storage.fields.rare.box?.value.nextAttemptAt }
        _modify { yield &fields.rare.value.nextAttemptAt }
    }
    public var error: JobError? {
        @inlinable get { storage.fields.rare.box?.value.error }
        _modify { yield &fields.rare.value.error }
    }
    public var result: JobResult? {
        @inlinable get { storage.fields.rare.box?.value.result }
        _modify { yield &fields.rare.value.result }
    }
    public var createdAt: Date {
        @inlinable _read { yield storage.fields.createdAt }
        _modify { yield &fields.createdAt }
    }
    public var updatedAt: Date {
        @inlinable _read { yield storage.fields.updatedAt }
        _modify { yield &fields.updatedAt }
    }
    /// Its last events, oldest first (at most `historyLimit`): `record` adds one.
    public var history: [JobEvent] {
        @inlinable get { storage.fields.history.events }
        set { fields.history = JobHistory(newValue) }
    }
    /// The last event, without making an array of them all.
    public var lastEvent: JobEvent? { storage.fields.history.last }
    /// Attempts in a row during which the daemon died (a crash, a kill, a power cut): a job
    /// that takes the daemon down twice is failed rather than run a third time.
    public var crashes: Int {
        @inlinable get { Int(storage.fields.crashes) }
        set { fields.crashes = Int32(clamping: newValue) }
    }
    /// When the current run of failed attempts began (nil while none failed): the time budget of
    /// `RetryPolicy` counts from here.
    public var failingSince: Date? {
        @inlinable get { storage.fields.rare.box?.value.failingSince }
        _modify { yield &fields.rare.value.failingSince }
    }
    /// The file preparation made, once made: what every attempt sends instead of the snapshot.
    public var prepared: PreparedFile? {
        @inlinable get { storage.fields.rare.box?.value.prepared }
        _modify { yield &fields.rare.value.prepared }
    }
    /// Its place among the jobs of its priority once moved (`job.move`); nil: `defaultRank`.
    public var rank: Int64? {
        @inlinable get { storage.fields.rare.box?.value.rank }
        _modify { yield &fields.rare.value.rank }
    }
    /// The job ended and its `on_complete`/`on_failure` hook has not run yet. Set in the record
    /// that ends the job and cleared once the hook ran, so a hook cut off by a crash runs after
    /// the restart. Absent in older records: nothing pending.
    public var hookPending: Bool {
        @inlinable _read { yield storage.fields.hookPending }
        _modify { yield &fields.hookPending }
    }
    /// Counts the job's changes (`JournalState.apply` raises it with every record of the job), so
    /// clients can order what they hear of it. Journaled, so it keeps growing across restarts.
    public var revision: UInt64 {
        @inlinable _read { yield storage.fields.revision }
        _modify { yield &fields.revision }
    }

    /// Where the job stands in the queue.
    public var place: QueuePlace { QueuePlace(priority: spec.priority, rank: rank ?? Self.defaultRank(of: id)) }

    /// A job never moved ranks by its ID, spaced so that moves fit between two jobs.
    public static func defaultRank(of id: JobID) -> Int64 { Int64(clamping: id.rawValue) &<< 16 }

    /// The protocol to show: the resolved one once known, else the requested one.
    public var effectiveProtocol: UploadProtocol { resolvedProtocol ?? spec.uploadProtocol }

    /// Keeps the last few history lines: enough to tell a job's story without growing without bound.
    public mutating func record(_ message: String, at date: Date) {
        fields.history.append(JobEvent(at: date, message: message), keepingLast: Self.historyLimit)
    }

    /// The first event's message, shared by the decoder with the job before (`StringSharer`).
    var firstEventMessage: String? {
        get { storage.fields.history.first?.message }
        set { if let newValue { fields.history.replaceFirstMessage(with: newValue) } }
    }

    public static let historyLimit = 20

    /// Sets the fields most jobs never set all at once, as a decoder reads them: one box at most,
    /// rather than a box made and compared for each.
    mutating func setRareFields(
        checkpoint: Checkpoint?, nextAttemptAt: Date?, error: JobError?, result: JobResult?, failingSince: Date?,
        prepared: PreparedFile?, rank: Int64?
    ) {
        fields.rare.value = RareFields(
            checkpoint: checkpoint, nextAttemptAt: nextAttemptAt, error: error, result: result,
            failingSince: failingSince, prepared: prepared, rank: rank)
    }
}

extension Job {
    /// What a job holds; `Job`'s properties describe each field.
    @usableFromInline struct Fields: Sendable, Equatable, Decodable {
        // In this order, the fields pack into 225 bytes: a job's storage is then a 256-byte
        // block of malloc's, where it took 416 with the rarely set fields inline and 288 with
        // the client token and an 8-byte priority in the spec. Swift lays a
        // struct out in the order of its declarations; `JobLayoutTests` keeps the size.
        @usableFromInline var id: JobID
        @usableFromInline var spec: JobSpec
        @usableFromInline var state: JobState = .queued
        @usableFromInline var resolvedProtocol: UploadProtocol?
        @usableFromInline var hookPending = false
        @usableFromInline var snapshot: SourceSnapshot?
        @usableFromInline var attempts: Int32 = 0
        @usableFromInline var failuresWithoutProgress: Int32 = 0
        @usableFromInline var crashes: Int32 = 0
        @usableFromInline var bytesTotal: Int64 = 0
        @usableFromInline var bytesAcked: Int64 = 0
        @usableFromInline var createdAt: Date
        @usableFromInline var updatedAt: Date
        @usableFromInline var revision: UInt64 = 0
        @usableFromInline var rare = OutOfLine<RareFields>()
        @usableFromInline var history = JobHistory.none

        init(id: JobID, spec: JobSpec, createdAt: Date) {
            self.id = id
            self.spec = spec
            self.createdAt = createdAt
            self.updatedAt = createdAt
        }

        /// The fields of uploadd 0.1's JSON journal (format 1, read only).
        enum CodingKeys: String, CodingKey {
            case id, spec, state, resolvedProtocol, snapshot, bytesTotal, bytesAcked, checkpoint, attempts
            case failuresWithoutProgress, nextAttemptAt, error, result, createdAt, updatedAt, history
        }

        @usableFromInline init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(JobID.self, forKey: .id)
            spec = try container.decode(JobSpec.self, forKey: .spec)
            state = try container.decode(JobState.self, forKey: .state)
            resolvedProtocol = try container.decodeIfPresent(UploadProtocol.self, forKey: .resolvedProtocol)
            snapshot = try container.decodeIfPresent(SourceSnapshot.self, forKey: .snapshot)?.kept(for: spec)
            bytesTotal = try container.decode(Int64.self, forKey: .bytesTotal)
            bytesAcked = try container.decode(Int64.self, forKey: .bytesAcked)
            attempts = Int32(clamping: try container.decode(Int.self, forKey: .attempts))
            failuresWithoutProgress = Int32(clamping: try container.decode(Int.self, forKey: .failuresWithoutProgress))
            createdAt = try container.decode(Date.self, forKey: .createdAt)
            updatedAt = try container.decode(Date.self, forKey: .updatedAt)
            history = JobHistory(try container.decode([JobEvent].self, forKey: .history))
            rare.value.checkpoint = try container.decodeIfPresent(Checkpoint.self, forKey: .checkpoint)
            rare.value.nextAttemptAt = try container.decodeIfPresent(Date.self, forKey: .nextAttemptAt)
            rare.value.error = try container.decodeIfPresent(JobError.self, forKey: .error)
            rare.value.result = try container.decodeIfPresent(JobResult.self, forKey: .result)
        }
    }

    /// What most queued jobs have never set, or no longer have: kept out of line, so that a
    /// queued job does not carry 230 bytes of nothing.
    @usableFromInline struct RareFields: OutOfLineValue {
        @usableFromInline var checkpoint: Checkpoint?
        @usableFromInline var nextAttemptAt: Date?
        @usableFromInline var error: JobError?
        @usableFromInline var result: JobResult?
        @usableFromInline var failingSince: Date?
        @usableFromInline var prepared: PreparedFile?
        /// Set by `job.move` only.
        @usableFromInline var rank: Int64?

        @usableFromInline init() {}

        init(
            checkpoint: Checkpoint?, nextAttemptAt: Date?, error: JobError?, result: JobResult?, failingSince: Date?,
            prepared: PreparedFile?, rank: Int64?
        ) {
            self.rank = rank
            self.checkpoint = checkpoint
            self.nextAttemptAt = nextAttemptAt
            self.error = error
            self.result = result
            self.failingSince = failingSince
            self.prepared = prepared
        }
    }

    /// Changed only through `fields`, which copies it first unless this job is its only owner (the
    /// copy-on-write of the standard library's collections): no two threads ever change one, and no
    /// read overlaps a change, so the runtime's exclusivity check (a thread-local set on every
    /// access, 20% of replay) is left out.
    @usableFromInline final class Storage: @unchecked Sendable {
        @usableFromInline @exclusivity(unchecked) var fields: Fields

        init(_ fields: Fields) { self.fields = fields }
    }
}
