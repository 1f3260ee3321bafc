import Foundation
import UploadWire

/// Progress of a job as the server has committed it.
public struct JobProgress: Decodable, Sendable, Equatable {
    public var id: JobID
    public var bytesAcked: Int64
    public var checkpoint: Checkpoint?

    public init(id: JobID, bytesAcked: Int64, checkpoint: Checkpoint?) {
        self.id = id
        self.bytesAcked = bytesAcked
        self.checkpoint = checkpoint
    }
}

/// One entry of the append-only journal. Replaying them in order rebuilds the queue.
public enum JournalRecord: Sendable, Equatable {
    /// A job's full state: written when it is added and at every state change (the last one wins).
    case job(Job)
    /// Bytes committed by the server, written as chunks are acknowledged.
    case progress(JobProgress)
    /// The job was removed and is forgotten.
    case removed(JobID)
    /// The next ID to hand out, so IDs are never reused even after their jobs are compacted away.
    case nextID(UInt64)
    /// Files a watched folder took, and what became of them (`FolderLedger`): no job's record, so
    /// a daemon from before watched folders keeps it as `.foreign` and writes it back.
    case folderFiles(FolderLedgerRecord)
    /// A well-formed record this daemon does not understand (written by a newer uploadd): kept
    /// byte for byte, and its job left alone.
    case foreign(ForeignRecord)

    static let jobType: UInt8 = 1

    var typeCode: UInt8 {
        switch self {
        case .job: return Self.jobType
        case .progress: return 2
        case .removed: return 3
        case .nextID: return 4
        case .folderFiles: return 5
        case .foreign(let record): return record.type
        }
    }
}

/// A record kept as it was read: its type, its payload, and the job it belongs to when known.
public struct ForeignRecord: Sendable, Equatable {
    public var type: UInt8
    public var payload: [UInt8]
    public var jobID: JobID?
}

extension JournalRecord {
    /// The job a record belongs to; nil for the next ID, a folder's ledger and a foreign record that
    /// names none.
    public var jobID: JobID? {
        switch self {
        case .job(let job): return job.id
        case .progress(let progress): return progress.id
        case .removed(let id): return id
        case .nextID, .folderFiles: return nil
        case .foreign(let foreign): return foreign.jobID
        }
    }
}
