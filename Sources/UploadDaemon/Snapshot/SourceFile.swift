import CShims
import Glibc
import Synchronization
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// A job's bytes, open for reading with pread from any thread.
///
/// Opened from the job's snapshot when an attempt starts. For `.original` snapshots the file's
/// identity (device, inode, size, mtime) must still match what `add` saw, before and after upload.
/// A packed copy's bytes are `size` bytes from `start` in its pack: offsets given to `read` count
/// from `start`, and nothing past the job's own bytes is ever read.
final class SourceFile: Sendable {
    let fd: Int32
    let size: Int64
    /// Where the job's bytes begin in the file (0 unless the copy is in a pack).
    let start: Int64
    let snapshot: SourceSnapshot
    /// The path the user named, for messages.
    let displayPath: String
    /// The copy being made of the file while it uploads, if it is not finished: its copied bytes
    /// are read from it, the others from the original file while that may be read.
    let growing: GrowingCopy?
    /// Whether this attempt read bytes of the original, ahead of the copy (checked by `verifyUnchanged`).
    private let readAhead = Atomic<Bool>(false)
    /// Reads begun so far, and how many had begun when a `verifyUnchanged` last passed (-1: none
    /// yet): equal when that check came after the last read (`confirmUnchanged`).
    private let readsBegun = Atomic<Int>(0)
    private let readsVerified = Atomic<Int>(-1)

    init(snapshot: SourceSnapshot, displayPath: String, growing: GrowingCopy? = nil) throws(TransferFailure) {
        self.snapshot = snapshot
        self.displayPath = displayPath
        self.growing = growing
        // O_NONBLOCK: a FIFO put in the file's place must not hang the open (regular files ignore it).
        // A cached copy lives in our private folder: never through a symlink, and only our own file.
        let noFollow = snapshot.isCached ? O_NOFOLLOW : 0
        let fd = open(snapshot.path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | noFollow)
        guard fd >= 0 else {
            let error = SystemError("read", path: snapshot.path)
            if snapshot.kind == .original && error.errno == ENOENT {
                throw .source(
                    "\(displayPath) was deleted after it was added (added with --snapshot none or no room for a copy); add it again"
                )
            }
            throw .source(error.description)
        }
        self.fd = fd
        self.size = snapshot.size
        self.start = snapshot.start
        // From here on every stored property is set, so a throw runs `deinit`, which closes `fd`:
        // closing it here as well would close whatever another thread opened under its number in
        // between (a socket, the journal).
        guard snapshot.start >= 0, snapshot.size >= 0, snapshot.start <= Int64.max - snapshot.size else {
            throw .source("the snapshot of \(displayPath) names an impossible range; add the file again")
        }
        if snapshot.isCached {
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid() else {
                throw .source(
                    "the cached copy of \(displayPath) (\(snapshot.path)) is not uploadd's own file any more; add the file again"
                )
            }
        }
        try verifyUnchanged()
    }

    deinit { close(fd) }

    /// A file of uploadd's own cache (a prepared file), by its path: as a cached snapshot would be
    /// checked, never through a symlink and only a regular file of ours.
    convenience init(cachedFile path: String, displayPath: String) throws(TransferFailure) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw .source(
                "the prepared copy of \(displayPath) (\(path)) is gone from the cache; add the file again")
        }
        let snapshot = SourceSnapshot(
            kind: .copy, path: path, size: Int64(info.st_size), device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
        try self.init(snapshot: snapshot, displayPath: displayPath)
    }

    /// Fails when the file no longer is what `add` saw, or when bytes read ahead of the copy being
    /// made may differ from the copy's.
    func verifyUnchanged() throws(TransferFailure) {
        let reads = readsBegun.load(ordering: .acquiring)
        if let growing, readAhead.load(ordering: .relaxed) { try growing.verifyOriginalUnchanged() }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .source(SystemError("stat", path: snapshot.path).description) }
        let size = Int64(info.st_size)
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        // A pack holds other jobs' bytes after this one's, so it is only too short if it ends early.
        let sizeChanged = snapshot.isPacked ? size < start + snapshot.size : size != snapshot.size
        let changed =
            sizeChanged
            || (snapshot.kind == .original
                && (UInt64(info.st_ino) != snapshot.inode || UInt64(info.st_dev) != snapshot.device
                    || mtime != snapshot.modificationTimeNanoseconds))
        // The mtime, not the inode: inode numbers do not survive a remount on every file system
        // (FUSE, some network ones), and the copy's mtime is made durable with it.
        if let copy = snapshot.cachedCopy, snapshot.isCached, mtime != copy.modificationTimeNanoseconds {
            throw .source(
                "the cached copy of \(displayPath) (\(snapshot.path)) was replaced or changed since it was made; add the file again"
            )
        }
        if changed {
            throw .source(
                "\(displayPath) changed since it was added (size \(snapshot.size) → \(size)); add it again to upload the new content, or use --snapshot copy to upload a copy taken at add time"
            )
        }
        readsVerified.store(reads, ordering: .releasing)
    }

    /// `verifyUnchanged` at the end of an upload, unless a check passed after the last read: a body
    /// whose last read was checked (`BodyReader`, `CurlRequest.readWhole`) was sent as `add` saw
    /// it, and a second `fstat` per file tells nothing more. Always with a copy being made
    /// alongside: the original it reads ahead from is checked up to the answer, as before.
    func confirmUnchanged() throws(TransferFailure) {
        if growing == nil, readsVerified.load(ordering: .acquiring) == readsBegun.load(ordering: .acquiring) {
            return
        }
        try verifyUnchanged()
    }

    /// Reads up to `count` bytes at `offset` (from the job's first byte) into `buffer`; returns the
    /// bytes read, 0 at the job's end, or -1 with errno (EAGAIN: not copied yet, see `isReady`).
    /// Bytes the copy being made has not got to come from the original file, while it may be read.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
        readsBegun.wrappingAdd(1, ordering: .releasing)
        var count = Int(max(min(Int64(count), size - offset), 0))
        guard count > 0 else { return 0 }
        if let growing, !growing.isCopied {
            let copied = growing.readable(at: start + offset, count: count)
            if copied == 0 {
                if growing.readsAhead { readAhead.store(true, ordering: .relaxed) }
                return growing.readOriginal(into: buffer, count: count, at: start + offset)
            }
            count = copied
        }
        return FileOps.readAt(fd, into: buffer, count: count, at: start + offset)
    }
}

extension SourceFile: BodyFile {
    var isBeingCopied: Bool { growing != nil }

    /// Calls `waker` once the copy being made has got past `offset` (never, for a file without one:
    /// its bytes are always ready).
    func wake(whenReadyAt offset: Int64, _ waker: @escaping @Sendable () -> Void) {
        growing?.wake(whenPast: start + offset, waker)
    }

    /// Whether the byte at `offset` can be read now: false only while the copy being made of the
    /// file has not got there yet (`growing`) and the original may not be read instead.
    func isReady(at offset: Int64) -> Bool {
        guard let growing, offset < size else { return true }
        return growing.readable(at: start + offset, count: 1) > 0 || growing.readsAhead
    }

    /// Reads `length` bytes from `offset` in pieces and hands each to `body`: for checksums of a
    /// chunk before it is sent, without holding the chunk in memory.
    func forEachPiece(offset: Int64, length: Int64, _ body: (UnsafeRawBufferPointer) -> Void) throws(TransferFailure) {
        let pieceSize = 256 << 10
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: pieceSize, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(pieceSize), length - done))
            let count = read(into: buffer, count: want, at: offset + done)
            if count < 0 { throw .source(SystemError("read", path: displayPath).description) }
            if count == 0 { throw .source("\(displayPath) is shorter than when it was added") }
            body(UnsafeRawBufferPointer(start: buffer, count: count))
            done += Int64(count)
        }
    }

    /// CRC-32 (zlib's) of a region, as the chunked block protocol sends it.
    func crc32(offset: Int64, length: Int64) throws(TransferFailure) -> UInt32 {
        var crc: UInt32 = 0
        try forEachPiece(offset: offset, length: length) { crc = CShims_crc32(crc, $0.baseAddress, $0.count) }
        return crc
    }

    /// CRC-32C of a region, as S3's x-amz-checksum-crc32c carries it.
    func crc32c(offset: Int64, length: Int64) throws(TransferFailure) -> UInt32 {
        var crc: UInt32 = 0
        try forEachPiece(offset: offset, length: length) { crc = CShims_crc32c(crc, $0.baseAddress, $0.count) }
        return crc
    }
}

extension SourceFile {
    /// SHA-256 of the whole file, lowercase hex: what a prepared file is journaled with and
    /// checked against before it is sent.
    func sha256Hex() throws(TransferFailure) -> String {
        let digest = MessageDigest.sha256()
        try forEachPiece(offset: 0, length: size) { digest.update($0) }
        return Hex.encode(digest.finish())
    }
}
