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
    /// The job that uploaded (or was to upload) this version; nil for a version left alone as
    /// the same content as one taken before (`match = content`).
    public var job: JobID?
    /// The SHA-256 of its content (lowercase hex), for a folder that tells versions by content.
    public var sha256: String?

    public init(
        key: FolderFileKey, path: String, size: Int64, modifiedNanoseconds: Int64, state: FolderFileState,
        job: JobID?, sha256: String? = nil
    ) {
        self.key = key
        self.path = path
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.state = state
        self.job = job
        self.sha256 = sha256
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
/// record of the version it took) and, for jobs removed since, the ledger's entries. A file
/// changed in place keeps its key and gets a job per version: every one of them counts. Of the
/// entries, the one of the newest job (the highest ID) wins, whatever order removals came in,
/// and a file that is `gone` is forgotten.
public struct FolderLedger: Sendable, Equatable {
    public private(set) var files: [FolderFileKey: FolderFile] = [:]
    /// The folder's jobs in the queue, by the file each took (several when it changed in place).
    public private(set) var jobs: [FolderFileKey: [JobID]] = [:]
    /// The folder's jobs that have not ended, by their source path: the jobs of older versions of
    /// a file, whether it changed in place or was saved anew under its name.
    public private(set) var unfinishedByPath: [String: [JobID]] = [:]
    /// The content last taken at each path (by the newest job, whatever order the entries came
    /// in, as compaction writes them by key), for a folder that tells versions by content.
    public private(set) var contentByPath: [String: PathContent] = [:]

    public struct PathContent: Sendable, Equatable {
        public var sha256: String
        public var job: JobID
        /// What became of it, as its entry says (`taken` while its job is in the queue).
        public var state: FolderFileState
    }

    /// Entries in one compacted record: with paths of up to PATH_MAX (4,096 bytes), a record stays
    /// far below the journal's payload limit (16 MiB).
    public static let entriesPerRecord = 1_024

    public init() {}

    public var isEmpty: Bool { files.isEmpty && jobs.isEmpty }

    public mutating func apply(_ record: FolderLedgerRecord) {
        for file in record.files {
            if file.state == .gone {
                files[file.key] = nil
            } else if let known = files[file.key], let knownJob = known.job, let job = file.job, knownJob > job {
                continue  // an older version's job, removed after the newer one's
            } else {
                files[file.key] = file
                if let sha256 = file.sha256, let job = file.job,
                    contentByPath[file.path].map({ $0.job <= job }) ?? true
                {
                    contentByPath[file.path] = PathContent(sha256: sha256, job: job, state: file.state)
                }
            }
        }
    }

    /// The takes of this content as this file before, or as the file at its path (saved again by
    /// write-then-rename), with their jobs and what their entries say: `match = content`.
    public func takes(ofContent sha256: String, key: FolderFileKey, path: String) -> [(
        job: JobID, state: FolderFileState
    )] {
        var found: [(job: JobID, state: FolderFileState)] = []
        if let entry = files[key], entry.sha256 == sha256, let job = entry.job { found.append((job, entry.state)) }
        if let content = contentByPath[path], content.sha256 == sha256 { found.append((content.job, content.state)) }
        return found
    }

    mutating func noteJob(_ id: JobID, of key: FolderFileKey, unfinishedAt path: String?) {
        if jobs[key]?.contains(id) != true { jobs[key, default: []].append(id) }
        if let path, unfinishedByPath[path]?.contains(id) != true { unfinishedByPath[path, default: []].append(id) }
    }

    mutating func forgetJob(_ id: JobID, of key: FolderFileKey, path: String) {
        jobs[key]?.removeAll { $0 == id }
        if jobs[key]?.isEmpty == true { jobs[key] = nil }
        unfinishedByPath[path]?.removeAll { $0 == id }
        if unfinishedByPath[path]?.isEmpty == true { unfinishedByPath[path] = nil }
    }

    /// Whether this version of the file was taken: an entry of it, or a job of it in the queue
    /// (`job` looks a job up by ID).
    public func hasTaken(
        _ key: FolderFileKey, size: Int64, modifiedNanoseconds: Int64, job: (JobID) -> Job?
    ) -> Bool {
        if let entry = files[key], entry.isVersion(size: size, modifiedNanoseconds: modifiedNanoseconds) {
            return true
        }
        return jobs[key]?.contains { id in
            guard let snapshot = job(id)?.snapshot else { return false }
            return snapshot.size == size && snapshot.modificationTimeNanoseconds == modifiedNanoseconds
        } ?? false
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
