import CShims
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// Copies of many small files in one file of the cache.
///
/// One `add` of a folder of photos made one copy, one inode and one fsync per file, and deleted
/// them one by one as the uploads ended. Creating and deleting thousands of small files is what
/// a file system does worst: on the ext4 of the bench machine it was half the daemon's time for
/// 2,000 files of 64 KiB, most of it in the kernel's search for a free inode past the ones just
/// deleted. A pack is one new file for up to `packLimit` bytes of small copies: one inode, one
/// fsync, one unlink once the last of its jobs is done. Each job's snapshot names the pack and
/// where its bytes start (`SourceSnapshot.packOffset`, journal format 5).
extension SnapshotCache {
    /// A file with at most this many bytes goes into a pack when it is copied with others.
    static let packedFileLimit: Int64 = 1 << 20
    /// The bytes of one pack; a batch with more gets several, made at the same time.
    static let packLimit: Int64 = 16 << 20
    /// The bytes copied into a pack between two starts of their writeback.
    static let writebackStep: Int64 = 2 << 20

    func packPath(named first: JobID) -> String { "\(directory)/pack-\(first)" }

    /// Whether `name`, in the snapshot folder, is a pack's.
    static func isPackName(_ name: String) -> Bool {
        name.hasPrefix("pack-") && JobID(String(name.dropFirst(5))) != nil
    }

    /// Copies `files` (their size when they were checked, and the job they are for) one after
    /// another into a new pack named after the first job, and syncs it. One result per file: its
    /// snapshot, or why that file could not be copied (the others go on). Nil when the pack itself
    /// cannot be made or has no room: the caller copies the files one by one, with the rules of
    /// their snapshot mode. The jobs packed hold the pack (`packs`). Blocking: call it off the
    /// cooperative pool.
    func pack(_ files: [(source: String, size: Int64, id: JobID, mode: SnapshotMode, identity: SourceIdentity?)])
        -> [Result<SourceSnapshot, TransferFailure>]?
    {
        guard let first = files.first else { return [] }
        let path = packPath(named: first.id)
        // The room a copy of each would need, and the same 64 MiB left for everything else.
        let total = files.reduce(0) { $0 + $1.size }
        guard let pack = try? FileOps.createFresh(path, operation: "create snapshot pack") else { return nil }
        defer { close(pack) }
        // Its room taken at once, as a single copy's (`SpaceClaims`); cut to what was copied below.
        let claim = try? claims.claim(total, keeping: Self.copyReserve) { () throws(SystemError) in
            try FileOps.reserve(pack, size: total, path: path)
        }
        guard let claim, claim == .taken || claim == .claimed else {
            unlink(path)
            return nil
        }
        defer { if claim == .claimed { claims.release(total) } }
        var results: [Result<SourceSnapshot, TransferFailure>] = []
        var end: Int64 = 0
        var writtenBack: Int64 = 0
        for file in files {
            results.append(
                Self.append(file.source, expecting: file.identity, mode: file.mode, to: pack, at: &end, path: path))
            // The disk starts on what is copied while the rest is: the fsync below waits for the
            // last few MiB, not for all 16 (an add's answer came ~13% sooner, 15 alternated pairs).
            // Only a head start: where it fails, the fsync does it all.
            if end - writtenBack >= Self.writebackStep {
                _ = CShims_start_writeback(pack, writtenBack, end - writtenBack)
                writtenBack = end
            }
        }
        let packed = results.contains { (try? $0.get())?.isPacked == true }
        guard packed else {
            unlink(path)
            return results
        }
        // The room taken for files that were not copied after all goes back. Then one fsync for
        // every copy in the pack, before any of their adds is journaled. fsync, not fdatasync: the
        // pack's mtime is part of its identity, as a copy's is.
        guard ftruncate(pack, off_t(end)) == 0, fsync(pack) == 0, let identity = Self.identity(of: pack) else {
            let error = SystemError("sync", path: path)
            unlink(path)
            let failure = TransferFailure.io("snapshot pack: \(error)", noSpace: error.isNoSpace, retryable: false)
            return results.map { (try? $0.get())?.isPacked == true ? .failure(failure) : $0 }
        }
        // Its jobs hold it from here: it goes when the last of them lets go.
        packs.hold(path, for: zip(files, results).filter { (try? $1.get())?.isPacked == true }.map { $0.0.id })
        return results.map { result in
            result.map { snapshot in
                var snapshot = snapshot
                if snapshot.isPacked { snapshot.cachedCopy = identity }
                return snapshot
            }
        }
    }

    /// Appends one file's bytes at `end` of the pack; on failure the pack is cut back to `end`.
    /// A file `--snapshot auto` could not copy is uploaded from the original, as a single copy
    /// would have been.
    private static func append(
        _ source: String, expecting expected: SourceIdentity?, mode: SnapshotMode, to pack: Int32, at end: inout Int64,
        path: String
    ) -> Result<SourceSnapshot, TransferFailure> {
        let sourceFD: Int32
        let original: SourceSnapshot
        do {
            let (fd, info) = try SourceCheck.openRegularFile(source, expecting: expected)
            sourceFD = fd
            original = SnapshotCache.original(source, info)
        } catch {
            return .failure(error)
        }
        defer { close(sourceFD) }
        var copied: Int64 = 0
        var failure: SystemError?
        do {
            copied = try copyContents(from: sourceFD, to: pack, length: original.size, target: path)
        } catch {
            failure = error
        }
        var incomplete: TransferFailure?
        if failure == nil {
            do {
                try SourceCheck.confirmCopied(sourceFD, copied: copied, of: original, path: source)
            } catch {
                incomplete = error
            }
        }
        guard failure == nil, incomplete == nil else {
            // What was written of this file goes, so the next one starts where this one began.
            ftruncate(pack, off_t(end))
            lseek(pack, off_t(end), SEEK_SET)
            if let incomplete { return .failure(incomplete) }
            let noSpace = failure?.isNoSpace ?? false
            if noSpace && mode == .auto { return .success(original) }
            return .failure(.io("snapshot of \(source): \(failure!)", noSpace: noSpace, retryable: false))
        }
        var snapshot = SourceSnapshot(
            kind: .copy, path: path, size: original.size, device: original.device, inode: original.inode,
            modificationTimeNanoseconds: original.modificationTimeNanoseconds)
        snapshot.packOffset = end
        end += original.size
        return .success(snapshot)
    }
}

/// Which jobs still need each pack. A pack is deleted when the last of them lets go of it: when
/// the job completes, is canceled, removed or cleared, or its add is refused.
final class PackHolders: Sendable {
    private let holders = Mutex<[String: Set<JobID>]>([:])

    /// `ids` need the pack at `path`.
    func hold(_ path: String, for ids: some Sequence<JobID>) {
        holders.withLock { $0[path, default: []].formUnion(ids) }
    }

    /// Job `id` is done with the pack at `path`: true when no job needs it any more. Letting go
    /// twice is harmless, so a job's files may be discarded more than once.
    func release(_ path: String, by id: JobID) -> Bool {
        holders.withLock { holders in
            guard var ids = holders[path] else { return true }
            ids.remove(id)
            if !ids.isEmpty {
                holders[path] = ids
                return false
            }
            holders[path] = nil
            return true
        }
    }

    /// The jobs that hold the pack at `path` (for tests and the start-up survey).
    func holding(_ path: String) -> Set<JobID> {
        holders.withLock { $0[path] ?? [] }
    }
}
