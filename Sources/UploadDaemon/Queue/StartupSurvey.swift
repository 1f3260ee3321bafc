import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// What the scheduler needs to know of the replayed jobs before it serves anyone, gathered in one
/// pass over them, split across the cores: with a million jobs, each look at every job costs a
/// fraction of a second before READY.
struct StartupSurvey: Sendable {
    /// Jobs the journal says are running: the daemon stopped under them.
    var interrupted: [Job] = []
    /// Queued jobs that may start now, and queued jobs waiting for their retry time.
    var ready: [(id: JobID, place: QueuePlace)] = []
    var delayed: [JobID: Date] = [:]
    var clientTokens: [String: JobID] = [:]
    /// The batches jobs belong to: those a `batch` in an add may name.
    var batches = Set<JobID>()
    /// Copies in the cache that jobs still need.
    var cachedFiles = Set<String>()
    /// The jobs that need each pack of copies.
    var packHolders: [String: Set<JobID>] = [:]
    /// Jobs whose hook is owed, and canceled jobs whose partial upload the server may still hold.
    var owedHooks: [JobID] = []
    var owedDiscards: [JobID] = []

    init() {}

    init(surveying jobs: JobTable, now: Date) {
        let values = Array(jobs.values)
        let parts = values.count >= 10_000 ? Parallel.cores : 1
        let ranges = Parallel.split(values, into: parts)
        let found = Parallel.map(parts: parts) { part in
            var survey = StartupSurvey()
            survey.ready.reserveCapacity(values.count / parts)
            for job in values[ranges[part]] {
                if job.state == .running { survey.interrupted.append(job) } else { survey.take(job, now: now) }
            }
            return survey
        }
        self = found[0]
        for other in found.dropFirst() { merge(other) }
    }

    /// Jobs the crash marker says were running whose "running" record the journal did not get
    /// (it says queued): they were interrupted all the same.
    mutating func takeAsInterrupted(_ ids: [JobID], from jobs: JobTable) {
        for id in ids where !interrupted.contains(where: { $0.id == id }) {
            guard var job = jobs[id], job.state == .queued else { continue }
            job.state = .running
            interrupted.append(job)
            ready.removeAll { $0.id == id }
            delayed[id] = nil
        }
    }

    /// Notes what `job` (not running) needs.
    mutating func take(_ job: Job, now: Date) {
        if let token = job.spec.clientToken { clientTokens[token] = job.id }
        if let batch = job.spec.batch { batches.insert(batch) }
        if job.hookPending { owedHooks.append(job.id) }
        if job.state == .canceled && job.checkpoint != nil { owedDiscards.append(job.id) }
        // Completed and canceled jobs are done with their copies; a kill between their final
        // record and the copy's deletion leaves one behind.
        if job.state != .completed && job.state != .canceled {
            if job.snapshotIsCached, let snapshot = job.snapshot {
                cachedFiles.insert(snapshot.path)
                if snapshot.isPacked { packHolders[snapshot.path, default: []].insert(job.id) }
            }
            if let path = job.prepared?.path { cachedFiles.insert(path) }
        }
        guard job.state == .queued else { return }
        if let next = job.nextAttemptAt, next > now {
            delayed[job.id] = next
        } else {
            ready.append((job.id, job.place))
        }
    }

    /// The jobs the last run left running, recovered into `state` and surveyed again: after a
    /// crash each counts it (and fails after too many, owing its hook if `owesHook` says so);
    /// after a kill or power cut each is simply queued again. Returned for the journal.
    mutating func recoverInterrupted(
        into state: inout JournalState, crashed: Bool, now: Date, owesHook: (Job) -> Bool
    ) -> [Job] {
        var recoveredJobs: [Job] = []
        for job in interrupted {
            var recovered = job
            if crashed {
                recovered.recoverAfterCrash(at: now)
                if recovered.state == .failed { recovered.hookPending = owesHook(recovered) }
            } else {
                recovered.requeueAfterRestart(at: now, "uploadd was interrupted (killed, or a power cut); resuming")
            }
            if recovered.state == .failed {
                Log.job(.error, JobLogContext(recovered), recovered.error?.message ?? "failed after crashes")
            }
            state.apply(.job(recovered))
            recoveredJobs.append(recovered)
            take(state.jobs[recovered.id]!, now: now)
        }
        return recoveredJobs
    }

    private mutating func merge(_ other: StartupSurvey) {
        interrupted += other.interrupted
        ready += other.ready
        delayed.merge(other.delayed) { mine, _ in mine }
        clientTokens.merge(other.clientTokens) { mine, _ in mine }
        batches.formUnion(other.batches)
        cachedFiles.formUnion(other.cachedFiles)
        packHolders.merge(other.packHolders) { $0.union($1) }
        owedHooks += other.owedHooks
        owedDiscards += other.owedDiscards
    }
}
