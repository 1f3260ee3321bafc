import Dispatch
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// A snapshot copy still being made: its job may upload the part already copied while the rest is
/// copied (`Scheduler+CopyAlongside.swift`). Once every byte is copied, `save` puts the copy on
/// disk, when the scheduler finds it is still needed.
///
/// The copy's file has its full size from the start (a sparse tail), so only `copiedBytes` says
/// which bytes are the snapshot's. A request body reads the bytes past them from the original
/// file instead (`readOriginal`), as `--snapshot none` would, and checks before its last bytes go
/// that the original is still what the add saw (`verifyOriginalUnchanged`): then those bytes are
/// the ones the copy gets. An upload need not wait for a copy that goes at the speed the machine
/// gives it new pages, and one that ends first makes the rest of the copy needless. Once the
/// original has changed, or where there is no original to read (tests), a request that would
/// read past the copied bytes is paused until the copier gets there (`wake(whenPast:_:)`).
final class GrowingCopy: Sendable {
    enum Outcome: Sendable {
        /// Every byte is copied (into the page cache: `save` puts it on disk).
        case copied
        case failed(TransferFailure)
        /// Stopped by `cancel()`: the job ended first, or its add was undone.
        case canceled
    }

    let path: String
    let size: Int64
    /// The folder the copy is in, synced by `save`; the file the user named, for messages.
    private let folder: String
    private let displayPath: String
    /// The copy, open for `save` until the copy is dropped.
    private let target: Mutex<Int32>
    private let copied = Atomic<Int64>(0)
    private let stopRequested = Atomic<Bool>(false)
    /// The original file, open since the add (-1: none), and what it was then.
    private let original: Int32
    private let originalState: OriginalState?
    /// Cleared once the original is found changed: from then on only copied bytes are read.
    private let readsOriginal: Atomic<Bool>

    private struct State {
        var outcome: Outcome?
        var outcomeWaiters: [CheckedContinuation<Outcome, Never>] = []
        /// Called once when more bytes are copied or the copy ends (paused requests' wake-ups).
        var wakers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    /// `start` makes one that copies into `target` (taken: closed with this object); tests make
    /// one bare (`target` -1) and move it on themselves. `original`: a descriptor of the file being
    /// copied (taken: closed with this object), read for the bytes not copied yet; -1: none.
    init(
        path: String, size: Int64, target: Int32 = -1, folder: String = "", displayPath: String = "",
        original: Int32 = -1
    ) {
        self.path = path
        self.size = size
        self.target = Mutex(target)
        self.folder = folder
        self.displayPath = displayPath
        self.original = original
        originalState = original >= 0 ? OriginalState(of: original) : nil
        readsOriginal = Atomic(originalState != nil)
    }

    deinit {
        target.withLock { if $0 >= 0 { close($0) } }
        if original >= 0 { close(original) }
    }

    /// Puts the copied bytes, then the copy's name, on disk, and returns the copy's identity
    /// (`SnapshotCache.identity`) as the journal keeps it. Blocking: call it off the cooperative pool.
    func save() throws(TransferFailure) -> FileIdentity? {
        let result: Result<FileIdentity?, SystemError> = target.withLock { fd in
            // fsync, not fdatasync: the copy's mtime is part of its identity, as for any copy.
            guard fd >= 0, fsync(fd) == 0 else { return .failure(SystemError("fsync", path: path)) }
            return .success(SnapshotCache.identity(of: fd))
        }
        switch result {
        case .failure(let error): throw SnapshotCache.copyFailure(error, copying: displayPath)
        case .success(let identity):
            do {
                try FileOps.syncDirectory(folder)
            } catch {
                throw SnapshotCache.copyFailure(
                    error as? SystemError ?? SystemError("fsync", path: folder), copying: displayPath)
            }
            return identity
        }
    }

    /// Bytes from the file's start that are copied and may be read.
    var copiedBytes: Int64 { copied.load(ordering: .acquiring) }

    /// Whether every byte is copied (it may not be on disk yet).
    var isCopied: Bool { copiedBytes >= size }

    /// How many of `count` bytes from `offset` can be read now.
    func readable(at offset: Int64, count: Int) -> Int {
        Int(max(0, min(Int64(count), copiedBytes - offset)))
    }

    /// Whether bytes not copied yet may be read from the original file.
    var readsAhead: Bool { readsOriginal.load(ordering: .relaxed) }

    /// Reads up to `count` bytes at `offset` from the original file, as `pread`; -1 with EAGAIN
    /// when the original may not be read (see `readsAhead`).
    func readOriginal(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
        guard readsAhead else {
            errno = EAGAIN
            return -1
        }
        return FileOps.readAt(original, into: buffer, count: count, at: offset)
    }

    /// Fails, retryably, when the original file is not what the add saw any more: bytes read from
    /// it may then differ from the copy's. Reads wait for the copier from then on, so the attempt
    /// after sends the copy's bytes only.
    func verifyOriginalUnchanged() throws(TransferFailure) {
        guard let originalState, OriginalState(of: original) != originalState else { return }
        readsOriginal.store(false, ordering: .relaxed)
        throw TransferFailure(
            JobError(
                code: "source",
                message:
                    "\(displayPath) changed while it was sent ahead of its copy; sending it again from the copy taken at add time"
            ),
            retryable: true)
    }

    /// Calls `waker` once the copy gets past `offset` or ends: at once when it already has, else
    /// from the copier's thread.
    func wake(whenPast offset: Int64, _ waker: @escaping @Sendable () -> Void) {
        let already = state.withLock { state in
            if state.outcome != nil || copiedBytes > offset { return true }
            state.wakers.append(waker)
            return false
        }
        if already { waker() }
    }

    /// Waits until every byte is copied, or the copy failed or stopped.
    func outcome() async -> Outcome {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Outcome? in
                if let outcome = state.outcome { return outcome }
                state.outcomeWaiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Stops the copier at its next step; what it wrote stays for the caller to delete.
    func cancel() { stopRequested.store(true, ordering: .relaxed) }

    /// The first `bytes` bytes are copied: they may be read, and paused readers wake.
    func advance(to bytes: Int64) {
        copied.store(bytes, ordering: .releasing)
        let wakers = state.withLock { state in
            defer { state.wakers.removeAll() }
            return state.wakers
        }
        for waker in wakers { waker() }
    }

    func finish(_ outcome: Outcome) {
        let (waiters, wakers) = state.withLock { state in
            state.outcome = outcome
            defer {
                state.outcomeWaiters.removeAll()
                state.wakers.removeAll()
            }
            return (state.outcomeWaiters, state.wakers)
        }
        for waker in wakers { waker() }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

extension GrowingCopy {
    /// One copy at a time, in the order of the adds: a copy runs at the speed of the disk, and the
    /// first file queued is the first to upload.
    private static let copier = DispatchQueue(label: "uploadd.copy-alongside")
    /// Runs `work` on the copier, ahead of the copies started after it (tests hold copies back).
    static func onCopier(_ work: @escaping @Sendable () -> Void) { copier.async(execute: work) }

    /// The steps in which bytes become readable.
    static let step = 8 << 20

    /// Starts copying `size` bytes of `source` into `target` (the copy at `path`, already `size`
    /// bytes long, in the folder `folder`). Takes both descriptors: `source` is closed once the
    /// copy is made, `target` with the returned object. `displayPath`: the file the user named.
    static func start(
        from source: Int32, to target: Int32, path: String, size: Int64, folder: String, displayPath: String
    ) -> GrowingCopy {
        let copy = GrowingCopy(
            path: path, size: size, target: target, folder: folder, displayPath: displayPath,
            original: fcntl(source, F_DUPFD_CLOEXEC, 0))
        copier.async {
            defer { close(source) }
            copy.finish(copy.run(from: source, to: target))
        }
        return copy
    }

    private func run(from source: Int32, to target: Int32) -> Outcome {
        var offset: Int64 = 0
        while offset < size {
            if stopRequested.load(ordering: .relaxed) { return .canceled }
            let count = FileCopy.copyRange(
                from: source, offset: &offset, to: target, length: Int(min(Int64(Self.step), size - offset)))
            if count < 0 {
                return .failed(SnapshotCache.copyFailure(SystemError("copy into", path: path), copying: displayPath))
            }
            if count == 0 {
                return .failed(
                    .source("\(displayPath) got shorter while uploadd copied it; add it again once it is written"))
            }
            advance(to: offset)
        }
        if stopRequested.load(ordering: .relaxed) { return .canceled }
        // Whole and as checked, or the add fails (the upload sent so far is then not completed).
        if let checked = OriginalState(of: source), let originalState, checked != originalState {
            return .failed(SourceCheck.changedWhileCopied(displayPath))
        }
        var byte: UInt8 = 0
        if pread(source, &byte, 1, off_t(size)) > 0 {
            return .failed(
                .source(
                    "\(displayPath) holds more than the \(size) bytes its size said; nothing was uploaded: add it again once it is written"
                ))
        }
        return .copied
    }

}

/// What a file was, for telling that it has been written to since: any write changes its ctime,
/// which no one but root can set back.
private struct OriginalState: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changed: timespec

    init?(of fd: Int32) {
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (left: Self, right: Self) -> Bool {
        left.device == right.device && left.inode == right.inode && left.size == right.size
            && left.modified.tv_sec == right.modified.tv_sec && left.modified.tv_nsec == right.modified.tv_nsec
            && left.changed.tv_sec == right.changed.tv_sec && left.changed.tv_nsec == right.changed.tv_nsec
    }
}

extension GrowingCopy {
    /// How long a copied file waits before it is saved, for an upload with `bytesLeft` to send at
    /// `speed`: its time left, when that is shorter than the disk would take to write the copy
    /// (at 256 MiB/s, a cautious disk); nil: save it now (its speed is not known yet, or it has
    /// far to go).
    func deferral(bytesLeft: Int64, speed: Double) -> Duration? {
        guard speed > 0 else { return nil }
        let timeLeft = Double(max(bytesLeft, 0)) / speed
        let diskTime = Double(size) / Double(256 << 20)
        guard timeLeft < diskTime else { return nil }
        return .milliseconds(Int(timeLeft * 1000) + 250)
    }
}
