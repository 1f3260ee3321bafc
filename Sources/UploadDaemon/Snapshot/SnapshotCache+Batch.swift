import UploadCore
import UploadPlatform
import UploadWire

/// The snapshots of the files of one `add`.
extension SnapshotCache {
    /// A file to snapshot: its job's spec and ID, and the file as the add's check found it.
    typealias SnapshotRequest = (spec: JobSpec, original: SourceSnapshot, id: JobID)

    /// A file's snapshot, and the copy still being made of it when it is copied alongside its upload.
    typealias TakenSnapshot = (snapshot: SourceSnapshot, growing: GrowingCopy?)

    /// Each file's snapshot, in order, or why it has none. Small files copied together go into
    /// packs (`SnapshotPack.swift`), several at once when there are many; a pack holds
    /// no file that a preparation step will read (steps read their input from its first byte).
    /// Big files are copied alongside their uploads (`Scheduler+CopyAlongside`), unless a
    /// preparation step reads them. The rest are copied one by one, several at once; without a
    /// copy to make, the file as checked is the snapshot. Copies made one by one still owe their
    /// fsync (`makeDurable`).
    func takeSnapshots(_ requests: [SnapshotRequest]) async
        -> [Result<TakenSnapshot, any Error>]
    {
        var results = [Result<TakenSnapshot, any Error>?](repeating: nil, count: requests.count)
        for (group, outcome) in await packSmallCopies(requests) {
            guard case .success(let packed?) = outcome else { continue }
            for (index, result) in zip(group, packed) {
                results[index] = result.map { ($0, nil) }.mapError { $0 }
            }
        }
        // Nothing to take for `none`: the original is the snapshot, without a task for each job.
        for index in requests.indices where requests[index].spec.snapshot == .none {
            results[index] = .success((requests[index].original, nil))
        }
        let single = requests.indices.filter { results[$0] == nil }
        let cache = self
        let copied = await Blocking.concurrently(single) { index -> TakenSnapshot in
            let request = requests[index]
            let alongside =
                request.original.size >= SnapshotCache.alongsideThreshold && request.spec.preparation.isEmpty
            return try await Blocking.run {
                try cache.snapshot(
                    source: request.spec.source, id: request.id, mode: request.spec.snapshot, syncNow: false,
                    alongside: alongside, expecting: request.original.identity)
            }
        }
        for (index, result) in zip(single, copied) { results[index] = result }
        return results.map { $0! }
    }

    /// Packs of the small files to copy, when there are at least two: each group (indices into
    /// `requests`) with what its pack made of it, nil when it could not be made.
    private func packSmallCopies(_ requests: [SnapshotRequest]) async
        -> [(group: [Int], outcome: Result<[Result<SourceSnapshot, TransferFailure>]?, any Error>)]
    {
        let small = requests.indices.filter {
            requests[$0].spec.snapshot != .none && requests[$0].spec.preparation.isEmpty
                && requests[$0].original.size <= SnapshotCache.packedFileLimit
        }
        guard small.count >= 2 else { return [] }
        var groups: [[Int]] = [[]]
        var bytes: Int64 = 0
        for index in small {
            let size = requests[index].original.size
            if !groups[groups.count - 1].isEmpty && bytes + size > SnapshotCache.packLimit {
                groups.append([])
                bytes = 0
            }
            groups[groups.count - 1].append(index)
            bytes += size
        }
        groups.removeAll { $0.count < 2 }
        let cache = self
        let packed = await Blocking.concurrently(groups) { group in
            try await Blocking.run {
                cache.pack(
                    group.map {
                        (
                            requests[$0].spec.source, requests[$0].original.size, requests[$0].id,
                            requests[$0].spec.snapshot, requests[$0].original.identity
                        )
                    })
            }
        }
        return Array(zip(groups, packed)).map { ($0, $1) }
    }
}

extension SourceSnapshot {
    /// The file the add's check found: what is copied must be that file, whatever the path names
    /// by the time the copy is made.
    fileprivate var identity: SourceIdentity { SourceIdentity(device: device, inode: inode) }
}
