import CShims
import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Protects a job's bytes from changes between `add` and upload: a reflink into the cache when the
/// file system can, else a copy when there is room, else the original with an identity guard.
struct SnapshotCache: Sendable {
    let directory: String
    /// Where preparation puts what it makes of a job's source (`Preparer`).
    let preparedDirectory: String
    /// Where each run of a preparation helper gets its private temporary folder
    /// (`HelperProcess.temporaryRoot`): in the cache, with the room big images need, not in /tmp.
    let helperTemporaryDirectory: String
    /// Which jobs still need each pack of copies (`SnapshotPack.swift`).
    let packs = PackHolders()
    /// A copy never takes the last 64 MiB of its file system: room for everything else.
    static let copyReserve: Int64 = 64 << 20
    /// What the copies being made will take; every copy claims its room here first.
    let claims: SpaceClaims

    init(cacheDirectory: String) {
        let directory = cacheDirectory + "/snapshots"
        self.directory = directory
        preparedDirectory = cacheDirectory + "/prepared"
        helperTemporaryDirectory = cacheDirectory + "/helper-tmp"
        claims = SpaceClaims { FileOps.availableBytes(at: directory) }
    }

    func prepare() throws {
        try FileOps.preparePrivateDirectory(directory, what: "the snapshot folder", option: "--cache-dir")
        try FileOps.preparePrivateDirectory(preparedDirectory, what: "the prepared-files folder", option: "--cache-dir")
        try FileOps.preparePrivateDirectory(
            helperTemporaryDirectory, what: "the helpers' temporary folder", option: "--cache-dir")
        removeHelperLeftovers()
    }

    /// Removes the temporary folders of helpers that ran when the daemon last stopped without
    /// removing them (a crash, a power cut): no helper runs yet, and only this daemon uses the
    /// cache (its lock). Only the `run-XXXXXX` folders `HelperProcess` makes are touched.
    func removeHelperLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: helperTemporaryDirectory) else { return }
        for name in names {
            let path = helperTemporaryDirectory + "/" + name
            var info = stat()
            guard name.hasPrefix("run-"), lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
                info.st_uid == getuid()
            else {
                Log.warning("\(path) is not a helper's temporary folder; left alone")
                continue
            }
            if FileOps.removeTree(path) {
                Log.debug("removed the temporary folder a helper left: \(name)")
            } else {
                Log.warning("cannot remove \(path), which a helper left: \(String(cString: strerror(errno)))")
            }
        }
    }

    func path(for id: JobID) -> String { "\(directory)/\(id)" }
    /// A new name for what one preparation of job `id` makes: never the name of an earlier run's
    /// file, which a cancelled run may still be removing.
    func newPreparedPath(for id: JobID) -> String {
        "\(preparedDirectory)/\(id)-\(UInt64.random(in: 0...UInt64.max).hexadecimal)"
    }

    /// A new, empty file for a preparation step to write (a leftover of a crash is replaced, never
    /// written through).
    func createPreparedFile(_ path: String) throws(TransferFailure) -> Int32 {
        do {
            return try FileOps.createFresh(path)
        } catch {
            let noSpace = error.errno == ENOSPC
            throw .io("preparation: \(error)", noSpace: noSpace, retryable: noSpace)
        }
    }

    func syncPreparedFolder() throws {
        try FileOps.syncDirectory(preparedDirectory)
    }

    /// Deletes a job's prepared file when preparation made one (never the snapshot it may name).
    func discard(_ prepared: PreparedFile?) {
        guard let prepared, prepared.path.hasPrefix(preparedDirectory + "/") else { return }
        Self.remove(prepared.path)
    }

    /// Deletes cached files on a queue of their own. A file system takes a while to delete a big
    /// file (176 ms for a 1 GiB copy on ext4 here, 3.6 ms for a 16 MiB pack), and the thread that
    /// ends an upload runs every other transfer: it would stall them all. Every name deleted here
    /// is never made again (names carry new job IDs and runs); one a crash leaves behind is an
    /// orphan the next start removes.
    private static let remover = DispatchQueue(label: "uploadd.cache-remover")

    private static func remove(_ path: String) {
        remover.async { unlink(path) }
    }

    /// Returns once every deletion asked for so far is done.
    func waitForRemovals() {
        Self.remover.sync {}
    }

    /// Checks the source and takes its snapshot. Blocking: call it off the cooperative pool.
    /// The file itself, as it is now (what `--snapshot none` uploads): checked to be a regular
    /// file and readable, and to be the file the client checked (`expected`), when it says.
    func original(of source: String, expecting expected: SourceIdentity? = nil) throws(TransferFailure)
        -> SourceSnapshot
    {
        Self.original(source, try SourceCheck.statReadableRegularFile(source, expecting: expected))
    }

    /// The snapshot of an original file by its `fstat`.
    static func original(_ source: String, _ info: stat) -> SourceSnapshot {
        SourceSnapshot(
            kind: .original, path: source, size: Int64(info.st_size), device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// `syncNow` false: a copy's pages are only on their way to the disk when this returns, and
    /// `makeDurable` must fsync it before the job is journaled. Adds of many files copy them all
    /// first and then fsync them, so the file system commits them together rather than one by one.
    func snapshot(
        source: String, id: JobID, mode: SnapshotMode, syncNow: Bool = true, expecting expected: SourceIdentity? = nil
    ) throws(TransferFailure) -> SourceSnapshot {
        try snapshot(source: source, id: id, mode: mode, syncNow: syncNow, alongside: false, expecting: expected)
            .snapshot
    }

    /// Files this big are copied alongside their upload (`GrowingCopy`) rather than before it.
    static let alongsideThreshold: Int64 = 32 << 20

    /// `alongside`: a copy (not a reflink) is only started, and goes on in the background: the
    /// snapshot is returned at once with the `GrowingCopy` that makes it, and its `cachedCopy`
    /// identity is known once the copy is saved. `expected`: the file the add's check found there
    /// (nothing else is copied or uploaded).
    func snapshot(
        source: String, id: JobID, mode: SnapshotMode, syncNow: Bool = true, alongside: Bool,
        expecting expected: SourceIdentity? = nil
    ) throws(TransferFailure) -> (snapshot: SourceSnapshot, growing: GrowingCopy?) {
        let (sourceFD, sourceInfo) = try SourceCheck.openRegularFile(source, expecting: expected)
        defer { close(sourceFD) }
        let original = Self.original(source, sourceInfo)
        if mode == .none { return (original, nil) }

        let target = path(for: id)
        let targetFD: Int32
        do {
            targetFD = try FileOps.createFresh(target, operation: "create snapshot")
        } catch {
            if mode == .auto {
                Log.warning("\(error); uploading job \(id) from the original file")
                return (original, nil)
            }
            throw .io(error.description)
        }
        var done = false
        defer {
            close(targetFD)
            if !done { unlink(target) }
        }
        if CShims_reflink(targetFD, sourceFD) == 0 {
            // The clone is the file as it was at the clone, which need not be as it was checked.
            var cloned = stat()
            let clonedSize = fstat(targetFD, &cloned) == 0 ? Int64(cloned.st_size) : -1
            try SourceCheck.confirmCopied(sourceFD, copied: clonedSize, of: original, path: source)
            if Self.sync(targetFD, now: syncNow) {
                done = true
                var snapshot = SourceSnapshot(
                    kind: .reflink, path: target, size: original.size, device: original.device,
                    inode: original.inode, modificationTimeNanoseconds: original.modificationTimeNanoseconds)
                snapshot.cachedCopy = Self.identity(of: targetFD)
                return (snapshot, nil)
            }
            // Not synced: copied again below (the clone's extents are replaced by the copy's).
            _ = ftruncate(targetFD, 0)
        }
        // The copy's room is taken at once (fallocate): the next file's check sees it gone, and
        // the copy cannot fill the disk halfway.
        let claim: SpaceClaims.Outcome
        do {
            claim = try claims.claim(original.size, keeping: Self.copyReserve) { () throws(SystemError) in
                try FileOps.reserve(targetFD, size: original.size, path: target)
            }
        } catch {
            if error.isNoSpace && mode == .auto { return (original, nil) }
            throw Self.copyFailure(error, copying: source)
        }
        if case .noRoom(let free) = claim {
            if mode == .auto { return (original, nil) }
            throw TransferFailure(
                JobError(
                    code: "no_space",
                    message: "no room for a copy of \(source) (\(ByteSize.format(original.size))) in \(directory):"
                        + " \(ByteSize.format(free)) free; free some space or add it with --snapshot none"),
                retryable: false)
        }
        // Not taken ahead (a file system that cannot): claimed until the copy is written here, or
        // only until it starts when it is made alongside the upload.
        defer { if claim == .claimed { claims.release(original.size) } }
        var snapshot = SourceSnapshot(
            kind: .copy, path: target, size: original.size, device: original.device, inode: original.inode,
            modificationTimeNanoseconds: original.modificationTimeNanoseconds)
        if alongside {
            // Full size already (the room taken above): the file is never shorter than the job,
            // and only what the copier has written is ever read (`GrowingCopy.copiedBytes`).
            let copySource = fcntl(sourceFD, F_DUPFD_CLOEXEC, 0)
            let copyTarget = fcntl(targetFD, F_DUPFD_CLOEXEC, 0)
            guard copySource >= 0, copyTarget >= 0 else {
                let error = SystemError("duplicate descriptor for", path: target)
                if copySource >= 0 { close(copySource) }
                if copyTarget >= 0 { close(copyTarget) }
                throw TransferFailure(
                    JobError(code: "io", message: "snapshot of \(source): \(error)"), retryable: false)
            }
            done = true
            let growing = GrowingCopy.start(
                from: copySource, to: copyTarget, path: target, size: original.size, folder: directory,
                displayPath: source)
            return (snapshot, growing)
        }
        let copied: Int64
        do {
            copied = try Self.copyContents(from: sourceFD, to: targetFD, length: original.size, target: target)
            // fsync, not fdatasync: the copy's mtime is part of its identity (`FileIdentity`) and
            // must survive a power cut as its bytes do.
            if !Self.sync(targetFD, now: syncNow) { throw SystemError("fsync", path: target) }
        } catch {
            if (error as? SystemError)?.isNoSpace == true && mode == .auto { return (original, nil) }
            throw Self.copyFailure(error, copying: source)
        }
        // The room was taken ahead (fallocate): a copy cut short would read as zeros past its end.
        try SourceCheck.confirmCopied(sourceFD, copied: copied, of: original, path: source)
        done = true
        snapshot.cachedCopy = Self.identity(of: targetFD)
        return (snapshot, nil)
    }

    /// Why a copy could not be made, and what to do about it: one wording for copies made before
    /// the add is answered and for those made alongside the upload.
    static func copyFailure(_ error: any Error, copying source: String) -> TransferFailure {
        guard (error as? SystemError)?.isNoSpace == true else {
            return TransferFailure(JobError(code: "io", message: "snapshot of \(source): \(error)"), retryable: false)
        }
        return TransferFailure(
            JobError(
                code: "no_space",
                message: "no room for a copy of \(source): \(error); free some space or add it with --snapshot none"),
            retryable: false)
    }

    /// fsync now, or start the writeback that a later fsync (`makeDurable`) waits for.
    private static func sync(_ fd: Int32, now: Bool) -> Bool {
        if now { return fsync(fd) == 0 }
        // The whole file; only a head start: where it fails, the fsync does it all.
        _ = CShims_start_writeback(fd, 0, 0)
        return true
    }

    /// The fsync a copy made with `syncNow: false` still owes, by its name in the cache (a folder
    /// only uploadd writes to; the name is not followed if it is a link). Nothing to do for the
    /// original file, nor for a pack (`pack` synced it).
    func makeDurable(_ snapshot: SourceSnapshot) throws {
        guard snapshot.isCached, !snapshot.isPacked else { return }
        let fd = open(snapshot.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path: snapshot.path) }
        defer { close(fd) }
        try syscall("fsync", path: snapshot.path) { fsync(fd) }
    }

    /// The cached copy's own inode and mtime, journaled so that a file put in its place is noticed.
    static func identity(of fd: Int32) -> FileIdentity? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FileIdentity(
            inode: UInt64(info.st_ino),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// fsync of the snapshot folder: the names of the copies made so far survive a power cut.
    /// Called once for a batch of adds, before they are journaled and acknowledged.
    func syncFolder() throws {
        try FileOps.syncDirectory(directory)
    }

    /// Deletes what the cache holds for a job: its snapshot copy and its prepared file.
    func discardFiles(of job: Job) {
        if job.snapshotIsCached { discard(job.snapshot, of: job.id) }
        discard(job.prepared)
    }

    /// Deletes job `id`'s cached file, if it has one; a pack, once no other job needs it.
    func discard(_ snapshot: SourceSnapshot?, of id: JobID) {
        guard let snapshot, snapshot.isCached, snapshot.path.hasPrefix(directory + "/") else { return }
        if snapshot.isPacked && !packs.release(snapshot.path, by: id) { return }
        Self.remove(snapshot.path)
    }

    /// Deletes cached files no job refers to (left by a crash between snapshot and journal, or
    /// in the middle of a preparation). Returns the packs left for `unreadableJobs`.
    ///
    /// Only what the cache itself makes is touched: regular files of ours named by a job ID (and,
    /// in the snapshot folder, packs `pack-ID`; in the prepared folder, `ID-RUN` and
    /// `ID-RUN.N.partial`). Anything else is left alone and reported.
    ///
    /// `unreadableJobs`: jobs the journal holds but this daemon cannot read (written by a newer
    /// uploadd, `JournalState.foreignJobs`), so their files are not among `paths`. Nothing such a
    /// job might own is deleted: a job's copy is `snapshots/ID` and its prepared files are
    /// `prepared/ID-...`, so those of their IDs are kept by name; which pack a job points into is
    /// only in its record, so while any of them is in the journal no pack is deleted (and the
    /// caller keeps the packs returned from being deleted when their readable jobs are done). A
    /// file named by no job of the journal is still swept. Kept too much costs disk space until
    /// the newer uploadd runs again; deleted too much loses what may be the only copy of a file.
    @discardableResult
    func removeOrphans(keeping paths: Set<String>, unreadableJobs: Set<JobID> = []) -> [String] {
        var packsOfUnreadableJobs: [String] = []
        for (folderPath, isPrepared) in [(directory, false), (preparedDirectory, true)] {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folderPath) else { continue }
            let folder = open(folderPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard folder >= 0 else { continue }
            defer { close(folder) }
            for name in names {
                if !unreadableJobs.isEmpty {
                    // Every pack, those readable jobs hold too: an unreadable job may be in any.
                    if !isPrepared && Self.isPackName(name) {
                        packsOfUnreadableJobs.append(folderPath + "/" + name)
                        continue
                    }
                    let owner = isPrepared ? Self.owner(ofPreparedName: name) : JobID(name)
                    if let owner, unreadableJobs.contains(owner) { continue }
                }
                if paths.contains(folderPath + "/" + name) { continue }
                var info = stat()
                guard
                    JobID(name) != nil || (isPrepared ? Self.isPreparedName(name) : Self.isPackName(name)),
                    fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                    info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid()
                else {
                    Log.warning("\(folderPath)/\(name) is not a file of uploadd's cache; left alone")
                    continue
                }
                unlinkat(folder, name, 0)
                Log.debug("removed orphaned \(isPrepared ? "prepared file" : "snapshot") \(name)")
            }
        }
        return packsOfUnreadableJobs
    }

    /// `7-RUN` (job 7's prepared file) or `7-RUN.0.partial` (what its step 0 was writing).
    private static func isPreparedName(_ name: String) -> Bool {
        owner(ofPreparedName: name) != nil
    }

    /// The job a prepared file's name says it is for: 7 for `7-RUN` and `7-RUN.0.partial`.
    private static func owner(ofPreparedName name: String) -> JobID? {
        let parts = name.split(separator: "-", maxSplits: 1)
        return parts.count == 2 ? JobID(String(parts[0])) : nil
    }

    /// FileCopy in a loop (copy_file_range where the kernel can). The caller syncs the copy before
    /// the job that relies on it is journaled.
    /// Returns the bytes copied: fewer than `length` when the source ended early.
    @discardableResult
    static func copyContents(from source: Int32, to target: Int32, length: Int64, target path: String)
        throws(SystemError) -> Int64
    {
        var copied: Int64 = 0
        while copied < length {
            let chunk = Int(min(length - copied, 1 << 30))
            let count = FileCopy.copyRange(from: source, offset: &copied, to: target, length: chunk)
            if count < 0 { throw SystemError("copy into", path: path) }
            if count == 0 { break }
        }
        return copied
    }
}

/// Checks that a path is a regular, readable file, with messages that say what to do.
enum SourceCheck {
    /// Opens `path` for reading and returns the descriptor and its `fstat`, once that says it is a
    /// regular file, and the file `expected` when that is given: whatever is swapped in between a
    /// check and the open (a FIFO, a device, a folder, a symlink to another file) is what gets
    /// checked, and refused.
    static func openRegularFile(_ path: String, expecting expected: SourceIdentity? = nil) throws(TransferFailure)
        -> (fd: Int32, info: stat)
    {
        // A stat first, only to refuse devices without opening them (opening one can have effects).
        var info = try statRegularFile(path, expecting: expected)
        // O_NONBLOCK: a FIFO swapped in after the stat must not hang the open (regular files ignore it).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw unreadable(path) }
        do throws(TransferFailure) {
            guard fstat(fd, &info) == 0 else { throw .source(SystemError("stat", path: path).description) }
            try requireRegularFile(info, path)
            if let expected, !expected.matches(info) { throw replaced(path) }
        } catch {
            close(fd)
            throw error
        }
        return (fd, info)
    }

    /// The `stat` of `path` once it is a regular file the daemon may read, without opening it:
    /// what an add checks of every file (nothing is read then, so there is nothing a file swapped
    /// in afterwards could do; an attempt opens it and checks it is still this file). An `lstat`
    /// (and a `stat` for a symlink), a `statfs` and a `faccessat`, where an open, `fstat` and close
    /// cost more, per file of an add.
    static func statReadableRegularFile(_ path: String, expecting expected: SourceIdentity? = nil)
        throws(TransferFailure) -> stat
    {
        // lstat, not stat: a symlink is looked at before it is followed. First of all, a path
        // that names one of the reader's open files (/dev/fd/5) names the daemon's, not the
        // client's: that is what to say, whatever the daemon's descriptor is or is not.
        var info = stat()
        let found = lstat(path, &info) == 0
        let lookupError = errno  // before the calls below change it
        if !found || info.st_mode & S_IFMT == S_IFLNK, let link = descriptorLink(path) {
            throw namesADescriptor(path, link)
        }
        // Then a /proc/self file is another process's for the client, and not the file checked.
        try refusePseudoFile(path)
        guard found else { throw unreadable(path, errno: lookupError) }
        if info.st_mode & S_IFMT == S_IFLNK {
            info = try statRegularFile(path, expecting: expected)
        } else {
            try requireRegularFile(info, path, expecting: expected)
        }
        // AT_EACCESS: as an open would be allowed, by the effective IDs and capabilities (plain
        // access(2) asks for the real ones, and for root restores capabilities the daemon dropped).
        guard faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0 else { throw unreadable(path) }
        return info
    }

    /// File systems whose files the kernel makes as they are read: their `stat` size is 0 or a
    /// page (4,096) whatever they hold, so an upload of that many bytes would send nothing, or
    /// the text and then zeros. By `statfs`'s `f_type` (linux/magic.h).
    private static let pseudoFileSystems: [Int: String] = [
        procfs: "proc", 0x6265_6572: "sysfs", 0x6462_6720: "debugfs", 0x7472_6163: "tracefs",
        0x7363_6673: "securityfs", 0x0027_e0eb: "cgroup", 0x6367_7270: "cgroup2", 0x6265_6570: "configfs",
        0xde5e_81e4: "efivarfs", 0x6165_676c: "pstore", 0xcafe_4a11: "bpf", 0xf97c_ff8c: "selinuxfs",
        0x6573_5543: "fusectl", 0x4249_4e4d: "binfmt_misc",
    ]

    /// /dev/fd/N, /dev/stdin, /proc/self/fd/N and links to them name a file of whichever
    /// process opens the path: here the daemon's own (`uploadctl add /dev/fd/5` uploaded its
    /// lock file), never the client's.
    private static func namesADescriptor(_ path: String, _ link: String) -> TransferFailure {
        let through = link == path ? "" : " (through \(link))"
        return .source(
            "\(path) names a file of whichever process reads it\(through), so uploadd would read one of its own, not yours; write it to a file first (for example: command > FILE) and add that file"
        )
    }

    /// Refuses a file of a pseudo file system (/proc, /sys), with what to do instead.
    private static func refusePseudoFile(_ path: String) throws(TransferFailure) {
        let type = CShims_filesystem_type(path)
        guard type >= 0, let name = pseudoFileSystems[type] else { return }
        throw .source(
            "\(path) is on \(name), whose files the kernel makes as they are read: their size is not known ahead, so it cannot be uploaded as it is; copy it first (cat \(path) > FILE) and add the copy"
        )
    }

    /// Whether a copy of the file open at `fd`, found as `checked` when its add looked, holds it
    /// whole: `copied` bytes (the copy's length) must be its size, the file must end there, and
    /// its size and mtime must not have changed while it was copied. A snapshot is never padded
    /// with zeros (a copy's room is taken ahead), cut short or made of two versions.
    static func confirmCopied(_ fd: Int32, copied: Int64, of checked: SourceSnapshot, path: String)
        throws(TransferFailure)
    {
        let size = checked.size
        if copied < size {
            throw .source(
                "\(path) ended after \(copied) of its \(size) bytes while it was copied (it was cut short, or its file system reports a size it does not hold); nothing was uploaded: add it again once it is written"
            )
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .source(SystemError("stat", path: path).description) }
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        if Int64(info.st_size) != size || modified != checked.modificationTimeNanoseconds {
            throw changedWhileCopied(path)
        }
        var byte: UInt8 = 0
        if pread(fd, &byte, 1, off_t(size)) > 0 {
            throw .source(
                "\(path) holds more than the \(size) bytes its size says (a file made as it is read?); nothing was uploaded: copy it to a regular file first (cat \(path) > FILE) and add the copy"
            )
        }
    }

    static func changedWhileCopied(_ path: String) -> TransferFailure {
        .source("\(path) changed while it was copied; nothing was uploaded: add it again once it is written")
    }

    /// The `stat` of `path` (following symlinks) once it says a regular file, the file `expected`
    /// when that is given.
    private static func statRegularFile(_ path: String, expecting expected: SourceIdentity?) throws(TransferFailure)
        -> stat
    {
        var info = stat()
        guard stat(path, &info) == 0 else { throw unreadable(path) }
        try requireRegularFile(info, path, expecting: expected)
        return info
    }

    /// `info` is of the file `expected` (when given), and a regular file: a `stat`'s checks.
    private static func requireRegularFile(_ info: stat, _ path: String, expecting expected: SourceIdentity?)
        throws(TransferFailure)
    {
        if let expected, !expected.matches(info) { throw replaced(path) }
        try requireRegularFile(info, path)
    }

    /// `path` names another file than the one the client checked: a file or a symlink was put in
    /// its place since (by someone who can write to its folder, or by the user's own programs).
    static func replaced(_ path: String) -> TransferFailure {
        .source(
            "\(path) is not the file that was checked: another file or a symlink took its place since (can others write to its folder?); nothing of it was uploaded"
        )
    }

    /// What a failed `stat`, `open` or `faccessat` of a source means, from errno.
    private static func unreadable(_ path: String, errno: Int32 = Glibc.errno) -> TransferFailure {
        let error = SystemError("read", path: path, errno: errno)
        if error.errno == ENOENT { return .source("\(path) does not exist") }
        return .source(error.description)
    }

    private static func requireRegularFile(_ info: stat, _ path: String) throws(TransferFailure) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR:
            throw .source(
                "\(path) is a directory; add the files in it (for example: uploadctl add \"\(path)\"/* --to ...)")
        case S_IFIFO: throw .source("\(path) is a FIFO; only regular files can be uploaded (their size must be known)")
        case S_IFCHR, S_IFBLK: throw .source("\(path) is a device; only regular files can be uploaded")
        case S_IFSOCK: throw .source("\(path) is a socket; only regular files can be uploaded")
        default: throw .source("\(path) is not a regular file")
        }
    }
}
