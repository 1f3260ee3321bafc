import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// One `job.add` of one or more files, as it goes through the phases of `Scheduler.add(_:turn:)`.
struct AddRun {
    /// A watched folder that hands files over: its jobs carry its name and join its batch.
    struct FolderOrigin {
        var name: String
        /// The folder's open batch; nil: the add's first job starts one.
        var batch: JobID?
        /// Its rule's `after` (`delete`, `move:DIR`), kept with each job; nil for `keep`.
        var after: String? = nil
    }

    let batch: [AddParams]
    /// Set for files a watched folder hands over; nil for a client's add.
    var folder: FolderOrigin?
    /// Whether the requests that say `new_batch` share the batch the first of them starts.
    var startsOneBatch = false
    /// That batch, once started.
    var startedBatch: JobID?
    /// Each request's answer, once it has one.
    var results: [Result<JobInfo, RPCError>?]
    /// Requests whose checks passed, for their source's check.
    var pending: [(index: Int, spec: JobSpec)] = []
    /// Adds answered by a job added before (by client token), which may still wait for its copy.
    var answeredBy: [(index: Int, id: JobID)] = []
    /// Adds that repeat an earlier one of this batch (the same client token).
    var sameTokenAs: [(index: Int, first: Int)] = []
    /// Requests whose source is what the client checked, with their IDs.
    var accepted: [(index: Int, spec: JobSpec, original: SourceSnapshot, id: JobID)] = []
    /// The jobs made, in the order given.
    var jobs: [(index: Int, job: Job)] = []
    /// Copies still being made alongside the upload (`--snapshot` of a growing file).
    var growingCopies: [JobID: GrowingCopy] = [:]

    init(_ batch: [AddParams], folder: FolderOrigin? = nil) {
        self.batch = batch
        self.folder = folder
        results = Array(repeating: nil, count: batch.count)
    }

    /// Whether the job's copy is saved by this add (not alongside, and not the original itself).
    func isSyncedHere(_ job: Job) -> Bool { job.snapshotIsCached && growingCopies[job.id] == nil }

    /// A job made that cannot be kept: its files go, and its client hears why.
    mutating func refuse(_ index: Int, _ job: Job, _ message: String, _ error: any Error, _ snapshots: SnapshotCache) {
        growingCopies[job.id]?.cancel()
        snapshots.discardFiles(of: job)
        let noSpace = (error as? SystemError)?.isNoSpace ?? false
        results[index] = .failure(
            RPCError(code: noSpace ? RPCError.noSpaceCode : RPCError.sourceErrorCode, message: "\(message): \(error)"))
    }

    // MARK: - The phases that need nothing of the queue (the Scheduler runs the others)

    /// Phase 2: each source is the file the client checked (`source_identity`), and readable.
    func checkSources(_ snapshots: SnapshotCache) async -> [Result<SourceSnapshot, any Error>] {
        let batch = self.batch
        return await Blocking.inChunks(pending) { item in
            try snapshots.original(of: item.spec.source, expecting: batch[item.index].sourceIdentity)
        }
    }

    /// Phase 4: the copies (`--snapshot`), and the jobs. Copies made one by one are synced in
    /// phase 5, all of them after the last is made.
    mutating func makeCopies(_ snapshots: SnapshotCache, now clock: () -> Date) async {
        let copied = await snapshots.takeSnapshots(accepted.map { ($0.spec, $0.original, $0.id) })
        let now = clock()  // the jobs are made now, once their copies are
        for (item, outcome) in zip(accepted, copied) {
            switch outcome {
            case .success(let (snapshot, growing)):
                growingCopies[item.id] = growing
                var job = Job(id: item.id, spec: item.spec, createdAt: now)
                job.snapshot = snapshot
                job.bytesTotal = snapshot.size
                job.record("added (\(snapshot.kind.rawValue) of \(ByteSize.format(snapshot.size)))", at: now)
                jobs.append((item.index, job))
            case .failure(let failure as TransferFailure):
                let code = failure.error.code == "no_space" ? RPCError.noSpaceCode : RPCError.sourceErrorCode
                results[item.index] = .failure(RPCError(code: code, message: failure.error.message))
            case .failure(let error):
                results[item.index] = .failure(RPCError(code: RPCError.sourceErrorCode, message: "\(error)"))
            }
        }
    }

    /// Phase 5: every copy's bytes, then their names, are on disk before any add is acknowledged.
    /// Synced after the last copy was written, so that the file system commits them together: one
    /// journal commit for the batch on ext4, where a sync per copy as it was made cost one each.
    /// An add whose job was made but cannot be kept: its files go, and its client hears why.
    /// Copies made alongside are saved later, each on its own (`Scheduler+CopyAlongside`).
    mutating func saveCopies(_ snapshots: SnapshotCache) async {
        let cached = jobs.filter { isSyncedHere($0.job) }
        let synced = await Blocking.concurrently(cached) { item in
            try await Blocking.run { try snapshots.makeDurable(item.job.snapshot!) }
        }
        var notSynced = Set<Int>()
        for (item, outcome) in zip(cached, synced) {
            guard case .failure(let error) = outcome else { continue }
            refuse(item.index, item.job, "cannot save the copy of \(item.job.spec.source)", error, snapshots)
            notSynced.insert(item.index)
        }
        jobs.removeAll { notSynced.contains($0.index) }
        guard jobs.contains(where: { isSyncedHere($0.job) }) else { return }
        do {
            try await Blocking.run { try snapshots.syncFolder() }
        } catch {
            for (index, job) in jobs { refuse(index, job, "cannot save the copy", error, snapshots) }
            jobs = []
        }
    }
}
