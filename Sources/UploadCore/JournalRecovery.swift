import Foundation
import UploadWire

/// What replay found damaged in a journal, and what it did about it.
public struct JournalRecovery: Sendable {
    /// The damaged regions, in the order of the file.
    public var regions: [JournalDamage] = []
    /// Records replayed after the first damaged region.
    public var recordsAfterDamage = 0
    /// Jobs that would have run, paused because a damaged region may have held a change to them.
    public var paused: [JobID] = []
    /// Jobs named by a damaged record of which replay found no other: that record was their only one.
    public var lost: [JobID] = []
    /// Whether IDs found in the damaged bytes raised the next ID: they stay used.
    public var raisedNextID = false
}

extension JournalState {
    /// Replays a whole journal file into this state: every intact record, past any damaged region.
    /// A record lost in a region can have been a job's last change (its completion, its removal),
    /// and the job must not upload again because of it: every job a region may have touched, and
    /// that would now run, is paused for the user to check.
    public mutating func replay(_ bytes: [UInt8], at now: Date) throws(JournalFormatError)
        -> (JournalContents, JournalRecovery)
    {
        var recovery = JournalRecovery()
        // Jobs with records after damage: how many regions came before their last record. (Any
        // other job's last record came before the first region.)
        var regionsBeforeLast: [JobID: Int] = [:]
        let contents = try JournalFormat.decode(
            bytes,
            each: { record in
                if !recovery.regions.isEmpty {
                    recovery.recordsAfterDamage += 1
                    if let id = record.jobID { regionsBeforeLast[id] = recovery.regions.count }
                }
                apply(record)
            }, onDamage: { recovery.regions.append($0) })
        for (index, region) in recovery.regions.enumerated() {
            keepIDsUsed(in: bytes[region.range], of: region, version: contents.version, &recovery)
            let touched = jobsTouched(
                by: region, fileSize: bytes.count, &recovery,
                continuesAfter: { (regionsBeforeLast[$0] ?? 0) > index })
            for id in touched where pauseAfterDamage(id, near: region.offset, at: now) {
                recovery.paused.append(id)
            }
        }
        return (contents, recovery)
    }

    /// The jobs `region` may have held a record of, and whose records do not continue after it
    /// (a later record of a job says all it is: the whole job, or its progress). A job named by a
    /// damaged record and not in the queue is noted as lost.
    private func jobsTouched(
        by region: JournalDamage, fileSize: Int, _ recovery: inout JournalRecovery,
        continuesAfter: (JobID) -> Bool
    ) -> [JobID] {
        // A crash cut the last write short: it was never synced, so nothing acted on it.
        guard !region.isTornTail else { return [] }
        switch region.record {
        case .noJob:
            return []
        case .job(let id, let certain) where certain || jobs[id] != nil:
            guard !continuesAfter(id) else { return [] }
            guard jobs[id] != nil else {
                if foreignJobs[id] == nil && !recovery.lost.contains(id) { recovery.lost.append(id) }
                return []
            }
            return [id]
        case .job, .unknown:
            // (A guessed ID naming no job may be damaged itself.) Bytes that end the file where
            // no record can be told are what a crash leaves too: appends never synced.
            guard region.range.upperBound < fileSize else { return [] }
            return jobs.keys.filter { !continuesAfter($0) }.sorted()
        }
    }

    /// IDs in the damaged bytes stay used (IDs are never reused): the ID of a record
    /// known by its checksum, and any in whole records among the damaged bytes.
    private mutating func keepIDsUsed(
        in damaged: ArraySlice<UInt8>, of region: JournalDamage, version: UInt32, _ recovery: inout JournalRecovery
    ) {
        var highest = JournalFormat.highestJobID(scanning: damaged, version: version)
        if case .job(let id, certain: true) = region.record { highest = max(highest ?? 0, id.rawValue) }
        guard let highest, highest >= nextID else { return }
        apply(.nextID(min(highest, .max - 1) + 1))
        recovery.raisedNextID = true
    }

    /// Pauses the job if it would run; true if it did.
    private mutating func pauseAfterDamage(_ id: JobID, near offset: Int, at now: Date) -> Bool {
        guard var job = jobs[id], job.pauseAfterJournalDamage(near: offset, at: now) else { return false }
        apply(.job(job))
        return true
    }
}
