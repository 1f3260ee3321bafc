import Foundation
import UploadWire

/// Rebuilds the queue from journal records: the single place that gives records their meaning.
public struct JournalState: Sendable {
    public private(set) var jobs = JobTable()
    public private(set) var nextID: UInt64 = 1
    /// How many jobs are in each state, kept as records are applied: a status line costs nothing
    /// with 100,000 jobs.
    public var stateCounts: [JobState: Int] {
        Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, countByState[Self.slot(of: $0)]) })
    }
    /// How many jobs are in `state`.
    public func count(of state: JobState) -> Int { countByState[Self.slot(of: state)] }
    /// `stateCounts` by `slot(of:)`: counted for every record replayed, so without hashing.
    private var countByState = [Int](repeating: 0, count: JobState.allCases.count)
    /// How many jobs of each batch have not ended, kept the same way: a batch's end is noticed
    /// without looking at its other jobs.
    public private(set) var unfinishedInBatch: [JobID: Int] = [:]
    /// Jobs a newer uploadd wrote in a way this one does not understand: their records, kept as
    /// they are (the last job record, then the progress after it) and written back by compaction.
    public private(set) var foreignJobs: [JobID: [ForeignRecord]] = [:]
    /// What each watched folder took, by the folder's name (`[folder NAME]`): its jobs, and the
    /// ledger's entries of jobs removed since. A folder that left the config keeps its ledger: the
    /// rule may come back.
    public private(set) var folderLedgers: [String: FolderLedger] = [:]
    /// Records of types this uploadd does not know, belonging to no job: kept for compaction.
    public private(set) var foreignRecords: [ForeignRecord] = []

    public init() {}

    /// Makes room for about `count` jobs' pages before a replay: a million jobs otherwise grow
    /// the page list a dozen times. `fitCapacity` gives back a guess too high.
    public mutating func reserveCapacity(jobs count: Int) { jobs.reserveCapacity(count) }

    public mutating func fitCapacity() { jobs.fitCapacity() }

    /// Applies one record. It is taken, not borrowed: a replayed job is then the only reference
    /// to its fields, and a change of its revision is made in place rather than on a copy.
    public mutating func apply(_ record: consuming JournalRecord) {
        switch consume record {
        case .job(var job):
            // A record carries the revision its job had before this change; a compacted one, the
            // revision it reached.
            if let old = jobs[job.id] {
                let revision = max(job.revision, old.revision + 1)
                if job.revision != revision { job.revision = revision }  // a change copies the job's fields
                count(old, -1)
            } else if job.revision == 0 {
                job.revision = 1
            }
            jobs.updateValue(job, forKey: job.id)
            count(job, +1)
            nextID = max(nextID, job.id.rawValue + 1)
            if !foreignJobs.isEmpty { foreignJobs[job.id] = nil }
        case .progress(let progress):
            let applied: Void? = jobs.modify(progress.id) { job in
                job.bytesAcked = progress.bytesAcked
                job.checkpoint = progress.checkpoint
                job.revision += 1
            }
            // Progress of a job we cannot read stays with it, in order.
            if applied == nil, foreignJobs[progress.id] != nil {
                foreignJobs[progress.id]!.append(progress.asForeignRecord)
            }
        case .removed(let id):
            if let old = jobs.removeValue(forKey: id) { count(old, -1) }
            foreignJobs[id] = nil
            nextID = max(nextID, id.rawValue + 1)
            foreignJobs.shrinkIfSparse()
        case .nextID(let next):
            nextID = max(nextID, next)
        case .folderFiles(let record):
            folderLedgers[record.folder, default: FolderLedger()].apply(record)
        case .foreign(let foreign):
            guard let id = foreign.jobID else {
                foreignRecords.append(foreign)
                return
            }
            nextID = max(nextID, id.rawValue + 1)
            if foreign.type == JournalRecord.jobType {
                // The newest state of that job is one we cannot read: the older, readable one
                // must not run in its place.
                if let old = jobs.removeValue(forKey: id) { count(old, -1) }
                foreignJobs[id] = [foreign]
            } else if jobs[id] == nil {
                foreignJobs[id, default: []].append(foreign)
            }
        }
    }

    private static func slot(of state: JobState) -> Int {
        switch state {
        case .queued: return 0
        case .running: return 1
        case .paused: return 2
        case .completed: return 3
        case .failed: return 4
        case .canceled: return 5
        }
    }

    private mutating func count(_ job: Job, _ change: Int) {
        countByState[Self.slot(of: job.state)] += change
        if let folder = job.spec.folder, let snapshot = job.snapshot {
            let key = FolderFileKey(device: snapshot.device, inode: snapshot.inode)
            if change > 0 {
                folderLedgers[folder, default: FolderLedger()].noteJob(
                    job.id, of: key, unfinishedAt: job.state.isTerminal ? nil : job.spec.source)
            } else {
                folderLedgers[folder]?.forgetJob(job.id, of: key, path: job.spec.source)
            }
        }
        guard let batch = job.spec.batch, !job.state.isTerminal else { return }
        let left = unfinishedInBatch[batch, default: 0] + change
        unfinishedInBatch[batch] = left > 0 ? left : nil
    }

    /// The records that rebuild this state from nothing: what compaction writes.
    public func compactedRecords() -> [JournalRecord] {
        var records: [JournalRecord] = [.nextID(nextID)]
        records.reserveCapacity(jobs.count + foreignJobs.count + foreignRecords.count + 1)
        records += jobs.values.map { .job($0) }  // by ID
        for id in foreignJobs.keys.sorted() { records += foreignJobs[id]!.map { .foreign($0) } }
        for folder in folderLedgers.keys.sorted() {
            records += folderLedgers[folder]!.compactedRecords(folder: folder).map { .folderFiles($0) }
        }
        records += foreignRecords.map { .foreign($0) }
        return records
    }
}

extension JobProgress {
    /// This record as bytes, to keep with a foreign job's records.
    var asForeignRecord: ForeignRecord {
        var writer = BinaryWriter()
        JournalRecord.progress(self).writePayload(to: &writer)
        return ForeignRecord(type: JournalRecord.progress(self).typeCode, payload: writer.bytes, jobID: id)
    }
}
