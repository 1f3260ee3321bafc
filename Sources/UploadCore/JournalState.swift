import Foundation
import UploadWire

/// Rebuilds the queue from journal records: the single place that gives records their meaning.
public struct JournalState: Sendable {
    public private(set) var jobs: [JobID: Job] = [:]
    public private(set) var nextID: UInt64 = 1
    /// How many jobs are in each state, kept as records are applied: a status line costs nothing
    /// with 100,000 jobs.
    public private(set) var stateCounts: [JobState: Int] = [:]
    /// How many jobs of each batch have not ended, kept the same way: a batch's end is noticed
    /// without looking at its other jobs.
    public private(set) var unfinishedInBatch: [JobID: Int] = [:]
    /// Jobs a newer uploadd wrote in a way this one does not understand: their records, kept as
    /// they are (the last job record, then the progress after it) and written back by compaction.
    public private(set) var foreignJobs: [JobID: [ForeignRecord]] = [:]
    /// Records of types this uploadd does not know, belonging to no job: kept for compaction.
    public private(set) var foreignRecords: [ForeignRecord] = []

    public init() {}

    public mutating func apply(_ record: JournalRecord) {
        switch record {
        case .job(var job):
            // A record carries the revision its job had before this change; a compacted one, the
            // revision it reached.
            let revision = max(job.revision, (jobs[job.id]?.revision ?? 0) + 1)
            if job.revision != revision { job.revision = revision }  // a change copies the job's fields
            shareStrings(of: &job)
            if let old = jobs.updateValue(job, forKey: job.id) { count(old, -1) }
            count(job, +1)
            nextID = max(nextID, job.id.rawValue + 1)
            foreignJobs[job.id] = nil
        case .progress(let progress):
            if jobs[progress.id] == nil {
                // Progress of a job we cannot read stays with it, in order.
                if foreignJobs[progress.id] != nil { foreignJobs[progress.id]!.append(progress.asForeignRecord) }
                return
            }
            jobs[progress.id]!.bytesAcked = progress.bytesAcked
            jobs[progress.id]!.checkpoint = progress.checkpoint
            jobs[progress.id]!.revision += 1
        case .removed(let id):
            if let old = jobs.removeValue(forKey: id) { count(old, -1) }
            foreignJobs[id] = nil
            nextID = max(nextID, id.rawValue + 1)
            jobs.shrinkIfSparse()
            foreignJobs.shrinkIfSparse()
        case .nextID(let next):
            nextID = max(nextID, next)
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

    /// The last job's strings that the next job is likely to repeat: the jobs of one add share
    /// their destination, and their history begins with the same line.
    private var recentStrings = RecentStrings()

    /// Lets a job share its destination, its snapshot's path (the source itself, for an original)
    /// and its first history line with those of the last job recorded, when they are equal: in a
    /// queue of 100,000 jobs from a few adds, each is otherwise a string of its own.
    private mutating func shareStrings(of job: inout Job) {
        if let shared = recentStrings.share(job.spec.destination, \.destination) { job.spec.destination = shared }
        let source = job.spec.source
        if let path = job.snapshot?.path, path == source, !path.sharesStorage(with: source) {
            job.snapshot?.path = source
        }
        if let first = job.history.first?.message, let shared = recentStrings.share(first, \.firstEvent) {
            job.history[0].message = shared
        }
    }

    private mutating func count(_ job: Job, _ change: Int) {
        stateCounts[job.state, default: 0] += change
        guard let batch = job.spec.batch, !job.state.isTerminal else { return }
        let left = unfinishedInBatch[batch, default: 0] + change
        unfinishedInBatch[batch] = left > 0 ? left : nil
    }

    /// The records that rebuild this state from nothing: what compaction writes.
    public func compactedRecords() -> [JournalRecord] {
        var records: [JournalRecord] = [.nextID(nextID)]
        records.reserveCapacity(jobs.count + foreignJobs.count + foreignRecords.count + 1)
        records += jobs.keys.sorted().map { .job(jobs[$0]!) }
        for id in foreignJobs.keys.sorted() { records += foreignJobs[id]!.map { .foreign($0) } }
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

/// The strings `JournalState.shareStrings` compares the next job's with.
private struct RecentStrings: Sendable {
    var destination = ""
    var firstEvent = ""

    /// The kept string when `text` equals it but is stored apart (assigning it shares the storage);
    /// nil when `text` is the one to keep (a different string, now kept) or already shared.
    mutating func share(_ text: String, _ kept: WritableKeyPath<RecentStrings, String>) -> String? {
        if self[keyPath: kept] == text {
            return text.sharesStorage(with: self[keyPath: kept]) ? nil : self[keyPath: kept]
        }
        self[keyPath: kept] = text
        return nil
    }
}

extension String {
    /// Whether two equal strings are one buffer (or both small enough to live inline, where there
    /// is nothing to share).
    fileprivate func sharesStorage(with other: String) -> Bool {
        var mine = self
        var theirs = other
        return mine.withUTF8 { a in theirs.withUTF8 { b in a.baseAddress == b.baseAddress || a.count <= 15 } }
    }
}
