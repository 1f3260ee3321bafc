import UploadWire

/// A file of a watched folder, as the kernel names it: a rename inside the folder keeps it, a new
/// file (or a file saved by write-then-rename) is another.
public struct FolderFileKey: Hashable, Sendable, Comparable {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    public static func < (a: Self, b: Self) -> Bool { (a.device, a.inode) < (b.device, b.inode) }
}

/// What became of the version of a file a watched folder took.
public enum FolderFileState: String, Sendable, CaseIterable {
    /// A job was queued for it.
    case taken
    /// Its job completed; the rule's `after` (delete or move) is owed, unless the rule keeps files.
    case uploaded
    /// Its job failed or was canceled: it is not taken again until it changes.
    case failed
    /// Nothing more is owed: it was kept, deleted or moved away.
    case done
    /// It left the folder: forgotten (its inode may be given to a new file).
    case gone
}

/// One file of a watched folder's ledger: the version taken (size and modification time, as
/// checked when its job was added) and what became of it.
public struct FolderFile: Sendable, Equatable {
    public var key: FolderFileKey
    /// Its path, as its job's source.
    public var path: String
    public var size: Int64
    public var modifiedNanoseconds: Int64
    public var state: FolderFileState
    /// The job that uploaded (or was to upload) this version.
    public var job: JobID?

    public init(
        key: FolderFileKey, path: String, size: Int64, modifiedNanoseconds: Int64, state: FolderFileState,
        job: JobID?
    ) {
        self.key = key
        self.path = path
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.state = state
        self.job = job
    }

    /// What a folder's job leaves in the ledger when it is removed (by `clear` or `remove`): its
    /// version, and whether it was uploaded. Nil for a job no folder took, or one never checked.
    public init?(leftBy job: Job) {
        guard job.spec.folder != nil, let snapshot = job.snapshot else { return nil }
        self.init(
            key: FolderFileKey(device: snapshot.device, inode: snapshot.inode), path: job.spec.source,
            size: snapshot.size, modifiedNanoseconds: snapshot.modificationTimeNanoseconds,
            state: job.state == .completed ? .done : .failed, job: job.id)
    }

    /// Whether a file of this size and modification time is the version this entry took.
    public func isVersion(size: Int64, modifiedNanoseconds: Int64) -> Bool {
        self.size == size && self.modifiedNanoseconds == modifiedNanoseconds
    }
}

/// A journal record of a watched folder's ledger: entries that replace the ones with their keys.
public struct FolderLedgerRecord: Sendable, Equatable {
    public var folder: String
    public var files: [FolderFile]

    public init(folder: String, files: [FolderFile]) {
        self.folder = folder
        self.files = files
    }
}

/// Which files a watched folder took: its jobs (a job, with its snapshot's identity, is the
/// record of the version it took) and, for jobs removed since, the ledger's entries. The last
/// entry of each file wins, and a file that is `gone` is forgotten.
public struct FolderLedger: Sendable, Equatable {
    public private(set) var files: [FolderFileKey: FolderFile] = [:]
    /// The folder's jobs in the queue, by the file each took.
    public private(set) var jobs: [FolderFileKey: JobID] = [:]

    /// Entries in one compacted record: far below the journal's payload limit with long paths.
    public static let entriesPerRecord = 4_096

    public init() {}

    public var isEmpty: Bool { files.isEmpty && jobs.isEmpty }

    public mutating func apply(_ record: FolderLedgerRecord) {
        for file in record.files {
            files[file.key] = file.state == .gone ? nil : file
        }
    }

    mutating func noteJob(_ id: JobID, of key: FolderFileKey) { jobs[key] = id }

    mutating func forgetJob(_ id: JobID, of key: FolderFileKey) {
        if jobs[key] == id { jobs[key] = nil }
    }

    /// The records that rebuild the entries, in key order, at most `entriesPerRecord` each (the
    /// jobs rebuild the rest).
    public func compactedRecords(folder: String) -> [FolderLedgerRecord] {
        let sorted = files.keys.sorted().map { files[$0]! }
        return stride(from: 0, to: sorted.count, by: Self.entriesPerRecord).map {
            FolderLedgerRecord(folder: folder, files: Array(sorted[$0..<min($0 + Self.entriesPerRecord, sorted.count)]))
        }
    }

    /// How many entries are in each state.
    public func count(of state: FolderFileState) -> Int { files.values.count { $0.state == state } }
}
