import Dispatch
import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// The append-only journal file: replay at start, ordered appends, group-committed fdatasync, and
/// compaction into a fresh file.
///
/// Appends are queued in the caller's order and written by one writer thread. A durable append
/// returns only after fdatasync covered it; every durable append waiting at the same moment shares
/// one fdatasync (group commit). A durable append may say how long its sync can wait (`within`):
/// the ends of many small uploads running side by side then share one fdatasync, not one each.
/// Plain appends (progress) are synced within a second.
final class Journal: Sendable {
    /// What replay found.
    struct Replay {
        var state: JournalState
        var recordCount: Int
        var fileBytes: Int
        /// Damage found and set aside, described for people.
        var damage: String?
    }

    struct WriteError: Error, CustomStringConvertible {
        var underlying: SystemError
        var description: String {
            underlying.isNoSpace
                ? "no space left to write the journal in \(((underlying.path ?? "") as NSString).deletingLastPathComponent); free some space and try again"
                : underlying.description
        }
    }

    /// Appends and compactions, in order. Both are encoded by the writer, not by the caller: the
    /// scheduler, on the HTTP thread, ends small uploads by the thousand (and a million jobs'
    /// compaction takes a second).
    private enum Pending {
        case records([JournalRecord], sequence: UInt64)
        /// The live state.
        case compaction([JournalRecord], sequence: UInt64)

        var sequence: UInt64 {
            switch self {
            case .records(_, let sequence), .compaction(_, let sequence): return sequence
            }
        }

        var isRecords: Bool {
            if case .records = self { return true }
            return false
        }
    }

    /// What the writer does with a batch: each run of record appends encoded into one write,
    /// which carries the sequence of its last.
    private enum Write {
        case bytes([UInt8], sequence: UInt64)
        case compaction([JournalRecord], sequence: UInt64)

        var sequence: UInt64 {
            switch self {
            case .bytes(_, let sequence), .compaction(_, let sequence): return sequence
            }
        }
    }

    private static func writes(of batch: [Pending]) -> [Write] {
        var writes: [Write] = []
        writes.reserveCapacity(batch.count)
        for item in batch {
            switch item {
            case .records(let records, let sequence):
                if case .bytes(var run, _)? = writes.last {
                    writes.removeLast()
                    for record in records { JournalFormat.append(record, to: &run) }
                    writes.append(.bytes(run, sequence: sequence))
                } else {
                    writes.append(.bytes(JournalFormat.encode(records), sequence: sequence))
                }
            case .compaction(let records, let sequence):
                writes.append(.compaction(records, sequence: sequence))
            }
        }
        return writes
    }

    private struct State {
        var queue: [Pending] = []
        var nextSequence: UInt64 = 1
        /// When the queue's appends must be written by (nil: the queue is empty): the writer
        /// sleeps no later. Only a plain append may wait (`writeWithin`); others are written as
        /// soon as the writer is awake.
        var writeDue: DispatchTime?
        /// Durable appends not synced yet, each with the time its sync is due by.
        var durableQueued: [UInt64: DispatchTime] = [:]
        /// Who waits for which durable append.
        var durableWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        /// Durable appends written (nil) or failed before anyone waited for them.
        var durableOutcomes: [UInt64: (any Error)?] = [:]
        var closing = false
        var recordsSinceCompaction = 0
        var fileBytes: Int64 = 0
        /// Records failed to reach the file (a full disk): memory is ahead of it until a
        /// compaction writes the live state.
        var isBehind = false
        var syncCount = 0
        /// While the writer sleeps: when it wakes by itself (`.distantFuture`: only when signalled).
        /// Nil while it works; it looks at the queue again before it sleeps, so an append then
        /// needs no signal, and neither does one that may wait until the writer wakes anyway.
        var writerSleepsUntil: DispatchTime?

        /// Records a later change may make moot before their write (`appendWithdrawable`), by job:
        /// the writer takes them all with its next batch, after the batch's appends.
        var withdrawable: [JobID: JournalRecord] = [:]

        /// Whether an append due by `due` must wake the writer; if so, the caller signals, once.
        mutating func claimWake(by due: DispatchTime) -> Bool {
            guard let sleepsUntil = writerSleepsUntil, due < sleepsUntil else { return false }
            writerSleepsUntil = nil
            return true
        }
    }

    let path: String
    private let directory: String
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Owned by the writer thread once started.
    private let descriptor: Mutex<Int32>

    /// How long a plain append may wait for its sync (a second; tests make it longer).
    private let plainSyncDelay: DispatchTimeInterval
    /// Puts a compaction's rename on disk (`FileOps.syncDirectory`; tests make it fail).
    private let syncDirectory: @Sendable (String) throws -> Void

    private init(
        directory: String, fd: Int32, fileBytes: Int, records: Int, plainSyncDelay: Duration,
        syncDirectory: @escaping @Sendable (String) throws -> Void
    ) {
        self.directory = directory
        self.plainSyncDelay = Self.interval(plainSyncDelay)
        self.syncDirectory = syncDirectory
        self.path = directory + "/journal"
        self.descriptor = Mutex(fd)
        self.state = Mutex(State(recordsSinceCompaction: records, fileBytes: Int64(fileBytes)))
    }

    /// Opens (or creates) the journal in `directory` and replays it, past any damage. Damaged bytes
    /// are copied to `journal.damaged-TIMESTAMP` and reported, and the journal is rewritten
    /// without them (or cut, when they are only at its end); a journal we cannot read at all throws.
    static func open(
        directory: String, plainSyncDelay: Duration = .seconds(1),
        syncDirectory: @escaping @Sendable (String) throws -> Void = FileOps.syncDirectory
    ) throws -> (Journal, Replay) {
        let path = directory + "/journal"
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            throw JournalOpenError(message: "\(path) is not a regular file; move it away and start again")
        }
        var fd: Int32
        let isNew = access(path, F_OK) != 0
        do {
            fd = try syscall("open", path: path) { Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        } catch {
            let denied = error.errno == EACCES || error.errno == EPERM
            guard denied else { throw error }
            throw JournalOpenError(
                message:
                    "\(error); make it readable and writable by you (chmod 600 \(path)), or move it away to start with an empty queue"
            )
        }
        do {
            // A new journal's name must survive a power cut as surely as its first records.
            if isNew { try syncDirectory(directory) }
            let bytes = try FileOps.readFile(path, followSymlinks: false)
            var replayed = JournalState()
            // A job's record takes a little over 200 bytes (a compacted journal is one per job).
            replayed.reserveCapacity(jobs: bytes.count / 256)
            let contents: JournalContents
            let recovery: JournalRecovery
            do {
                (contents, recovery) = try replayed.replay(bytes, at: Date())
            } catch {
                throw JournalOpenError(message: "\(path): \(error)")
            }
            replayed.fitCapacity()
            var damage: String?
            if !contents.damaged.isEmpty {
                let copy = try setAside(contents.damaged, of: bytes, journal: path)
                damage = describe(recovery, recordCount: contents.recordCount, fileSize: bytes.count, copy: copy)
            }
            let upgrading = contents.version < JournalFormat.version
            var validLength: Int
            if upgrading || !isOnlyATail(recovery, fileSize: bytes.count) {
                // The replayed state, in a fresh file: no damaged bytes left between records, for
                // this daemon or any other.
                let rewritten = try rewriteInCurrentFormat(
                    replayed, path: path, replacing: fd,
                    what: upgrading ? "in the current journal format" : "without its damaged bytes")
                fd = rewritten.fd
                validLength = rewritten.length
                if upgrading {
                    Log.notice(
                        "journal: rewrote \(path) from format \(contents.version) to format \(JournalFormat.version)")
                }
            } else {
                validLength = try cutOff(
                    fd, path: path, at: contents.validLength, of: bytes.count,
                    nextID: recovery.raisedNextID ? replayed.nextID : nil)
            }
            let journal = Journal(
                directory: directory, fd: fd, fileBytes: validLength, records: contents.recordCount,
                plainSyncDelay: plainSyncDelay, syncDirectory: syncDirectory)
            journal.startWriter()
            return (
                journal,
                Replay(state: replayed, recordCount: contents.recordCount, fileBytes: validLength, damage: damage)
            )
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Whether the only damage is at the end of the file and changed nothing before it (no job
    /// paused): what a crash leaves. Cut off there, the file keeps every other byte as it was.
    private static func isOnlyATail(_ recovery: JournalRecovery, fileSize: Int) -> Bool {
        guard let region = recovery.regions.first else { return true }
        return recovery.regions.count == 1 && region.range.upperBound == fileSize && recovery.paused.isEmpty
    }

    /// Cuts the journal of `fileSize` bytes at `length` (the end of its last whole record), or
    /// starts it afresh when not even its header is whole, and records `nextID` when IDs seen in
    /// the cut bytes must stay used. Returns the file's length.
    private static func cutOff(_ fd: Int32, path: String, at length: Int, of fileSize: Int, nextID: UInt64?) throws
        -> Int
    {
        var validLength = length < JournalFormat.headerSize ? 0 : length
        if validLength != fileSize { try syscall("truncate", path: path) { ftruncate(fd, off_t(validLength)) } }
        var appended = validLength == 0 ? JournalFormat.header() : []
        if let nextID { JournalFormat.append(.nextID(nextID), to: &appended) }
        if !appended.isEmpty {
            try appended.withUnsafeBytes { buffer in
                _ = try syscall("write", path: path) {
                    pwrite(fd, buffer.baseAddress, buffer.count, off_t(validLength))
                }
            }
            validLength += appended.count
        }
        try syscall("fsync", path: path) { fsync(fd) }
        try syscall("seek", path: path) { lseek(fd, off_t(validLength), SEEK_SET) }
        return validLength
    }

    /// Replaces the journal with the replayed state in the current format (temp file, fsync,
    /// rename, directory fsync): a journal of an older format, or one with damaged bytes (set
    /// aside before). On failure the old file stays as it was.
    private static func rewriteInCurrentFormat(
        _ state: JournalState, path: String, replacing old: Int32, what: String
    ) throws -> (fd: Int32, length: Int) {
        let bytes = JournalFormat.header() + JournalFormat.encode(state.compactedRecords())
        do {
            try FileOps.writeAtomically(bytes, to: path)
            CrashPoint.journalRewritten.reached()
        } catch {
            throw JournalOpenError(message: "cannot rewrite \(path) \(what): \(error); free some space and start again")
        }
        let fd = try syscall("open", path: path) { Glibc.open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
        guard lseek(fd, off_t(bytes.count), SEEK_SET) >= 0 else {
            let error = SystemError("seek", path: path)
            Glibc.close(fd)
            throw error
        }
        Glibc.close(old)
        return (fd, bytes.count)
    }

    /// Queues records; they reach the disk within a second. For progress, which may be lost in a crash.
    /// They are written at once, or with the writer's next write if that comes within `delay`
    /// (the start of an attempt: small files start hundreds of times a second, and each would
    /// wake the writer for a write of its own).
    func append(_ records: [JournalRecord], writeWithin delay: Duration = .zero) {
        let due = DispatchTime.now() + Self.interval(delay)
        let mustWake = state.withLock { state in
            state.queue.append(.records(records, sequence: state.nextSequence))
            state.nextSequence += 1
            state.recordsSinceCompaction += records.count
            state.writeDue = min(state.writeDue ?? due, due)
            return state.claimWake(by: due)
        }
        if mustWake { wake.signal() }
    }

    /// Queues a record that the job's next record may make moot: the start of an attempt, which
    /// the end of a small file's upload follows within a millisecond. It is written with the
    /// writer's next write if that comes within `delay`, encoded there, unless the caller took it
    /// back first (`withdraw`). The caller withdraws it before it appends any other record of the
    /// job, so the file keeps the order of the job's changes: a later record of the whole job
    /// replaces it; progress goes after it.
    func appendWithdrawable(_ record: JournalRecord, of id: JobID, writeWithin delay: Duration) {
        let due = DispatchTime.now() + Self.interval(delay)
        let mustWake = state.withLock { state in
            state.withdrawable[id] = record
            state.recordsSinceCompaction += 1
            state.writeDue = min(state.writeDue ?? due, due)
            return state.claimWake(by: due)
        }
        if mustWake { wake.signal() }
    }

    /// The job's withdrawable record, taken back; nil if the writer took it (it is written, or
    /// being written, before anything appended from now on).
    func withdraw(_ id: JobID) -> JournalRecord? {
        state.withLock { $0.withdrawable.removeValue(forKey: id) }
    }

    /// Where a durable append stands in the journal's order.
    struct DurableTicket: Sendable {
        fileprivate let sequence: UInt64
    }

    /// A durable append, step one: queues the records now, on the caller's thread, so that the
    /// records an actor queues keep the order of its changes. (An async method of this class runs
    /// on the global executor: the actor could queue a later change first, and a cleared job could
    /// come back after a restart.) Step two is `waitUntilDurable`. The sync may wait up to
    /// `delay` for other appends to share it; it never waits for longer than the earliest due.
    func queueDurably(_ records: [JournalRecord], within delay: Duration = .zero) -> DurableTicket {
        let due = DispatchTime.now() + Self.interval(delay)
        let (sequence, mustWake) = state.withLock { state in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.queue.append(.records(records, sequence: sequence))
            state.recordsSinceCompaction += records.count
            state.durableQueued[sequence] = due
            // Written as soon as the writer is awake; only its sync waits for others'.
            state.writeDue = .now()
            // Written when the writer wakes for an earlier due (the sync of another end, say).
            return (sequence, state.claimWake(by: due))
        }
        if mustWake { wake.signal() }
        return DurableTicket(sequence: sequence)
    }

    /// A Duration as Dispatch counts time, for the writer's timed waits.
    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        .nanoseconds(Int(duration / .nanoseconds(1)))
    }

    /// What became of the records of `ticket`, if the writer is done with them (and then
    /// forgotten: ask once); nil while they wait for their write or sync.
    func takeOutcome(of ticket: DurableTicket) -> Result<Void, any Error>? {
        let outcome: (any Error)?? = state.withLock { $0.durableOutcomes.removeValue(forKey: ticket.sequence) }
        switch outcome {
        case .none: return nil
        case .some(.none): return .success(())
        case .some(.some(let failure)): return .failure(Self.reported(failure))
        }
    }

    /// Returns once the records of `ticket` are on disk; throws what kept them off it.
    func waitUntilDurable(_ ticket: DurableTicket) async throws {
        // Synced already (appends that shared a sync): no suspension, no hop off the caller's actor.
        if let known = takeOutcome(of: ticket) { return try known.get() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome: (any Error)?? = state.withLock { state in
                if let outcome = state.durableOutcomes.removeValue(forKey: ticket.sequence) { return .some(outcome) }
                state.durableWaiters[ticket.sequence] = continuation
                return .none
            }
            if case .some(let failure) = outcome { Self.resume(continuation, failure) }
        }
    }

    /// Both steps at once, for callers with no order of their own to keep (tests, tools).
    func appendDurably(_ records: [JournalRecord]) async throws {
        try await waitUntilDurable(queueDurably(records))
    }

    /// Replaces the file with `records` (the live state), in order with the appends around it.
    func compact(_ records: [JournalRecord]) {
        let mustWake = state.withLock { state in
            state.queue.append(.compaction(records, sequence: state.nextSequence))
            state.nextSequence += 1
            state.recordsSinceCompaction = records.count
            state.writeDue = .now()
            return state.claimWake(by: .now())
        }
        if mustWake { wake.signal() }
    }

    /// Records written since the last compaction (or replay), to decide when to compact.
    var recordsSinceCompaction: Int { state.withLock { $0.recordsSinceCompaction } }
    var fileBytes: Int64 { state.withLock { $0.fileBytes } }
    /// Whether records failed to reach the file since the last successful compaction.
    var isBehind: Bool { state.withLock { $0.isBehind } }
    /// fdatasyncs made so far (tests: how appends shared them).
    var syncCount: Int { state.withLock { $0.syncCount } }

    /// Writes and syncs everything queued, then stops the writer. Blocks until done.
    func close() {
        let mustWake = state.withLock { state in
            state.closing = true
            return state.claimWake(by: .now())
        }
        if mustWake { wake.signal() }
        finished.wait()
        descriptor.withLock { fd in
            Glibc.close(fd)
            fd = -1
        }
    }

    // MARK: - The writer thread

    private func startWriter() {
        NamedThread.start("uploadd-journal") { [self] in writerLoop() }
    }

    private func writerLoop() {
        var unsyncedSince: DispatchTime?
        /// The last append written; durable ones up to it are resumed once a sync covers them.
        var lastWritten: UInt64 = 0
        var syncDue: DispatchTime?
        while true {
            let wakeUp = [unsyncedSince.map { $0 + plainSyncDelay }, syncDue].compactMap({ $0 }).min()
            // The queue's appends may wait for a later write (`writeDue`): they do not keep the
            // writer awake, and those that share a write share its sync.
            let sleepsUntil: DispatchTime? = state.withLock { state in
                guard !state.closing else { return nil }
                let until = [wakeUp, state.writeDue].compactMap({ $0 }).min() ?? .distantFuture
                guard until > .now() else { return nil }
                state.writerSleepsUntil = until
                return until
            }
            if let sleepsUntil {
                // A signal comes at most once a sleep (`claimWake`); one that raced a timeout
                // only makes the next sleep return at once.
                if sleepsUntil == .distantFuture { wake.wait() } else { _ = wake.wait(timeout: sleepsUntil) }
                state.withLock { $0.writerSleepsUntil = nil }
                continue  // woken by an append that may still wait, or by time: look again
            }
            let (batch, closing) = state.withLock { state in
                var batch = state.queue
                state.queue.removeAll(keepingCapacity: true)
                state.writeDue = nil
                // Taken with the queue, in one step: a withdraw that finds its record gone knows
                // the record is written before what it appends next.
                if !state.withdrawable.isEmpty {
                    batch.append(.records(Array(state.withdrawable.values), sequence: state.nextSequence))
                    state.nextSequence += 1
                    state.withdrawable.removeAll(keepingCapacity: true)
                }
                // Every durable append queued is in this batch: the earliest of them says when to sync.
                syncDue = state.durableQueued.values.min()
                return (batch, state.closing)
            }
            // Each item's own failure: a compaction or a record that did not fit fails only the
            // appends it concerns, not the others written in the same batch.
            var failures: [UInt64: any Error] = [:]
            var syncFailure: (any Error)?
            for item in Self.writes(of: batch) {
                let writtenBefore = lastWritten
                lastWritten = item.sequence
                do {
                    switch item {
                    case .bytes(let bytes, _): try write(bytes)
                    case .compaction(let records, _): try replaceFile(with: Self.fileContents(records))
                    }
                    if unsyncedSince == nil { unsyncedSince = .now() }
                } catch {
                    // The write of several appends was cut off whole: each again on its own, so
                    // that only those that do not fit fail.
                    let parts = batch.filter { $0.sequence > writtenBefore && $0.sequence <= item.sequence }
                    for part in parts {
                        do {
                            guard parts.count > 1, case .records(let records, _) = part else { throw error }
                            try write(JournalFormat.encode(records))
                            if unsyncedSince == nil { unsyncedSince = .now() }
                        } catch {
                            failures[part.sequence] = error
                            // A failed compaction leaves the old file whole; lost records leave it behind memory.
                            if part.isRecords { state.withLock { $0.isBehind = true } }
                            Log.error("journal: \(error)")
                        }
                    }
                }
            }
            let now = DispatchTime.now()
            let due = unsyncedSince.map { now >= $0 + plainSyncDelay } ?? false
            let durableDue = syncDue.map { now >= $0 } ?? false
            if unsyncedSince != nil && (durableDue || closing || due || !failures.isEmpty) {
                do {
                    try descriptor.withLock { fd in _ = try syscall("fdatasync", path: path) { fdatasync(fd) } }
                    state.withLock { $0.syncCount += 1 }
                } catch {
                    syncFailure = error
                    state.withLock { $0.isBehind = true }
                    Log.error("journal: \(error)")
                }
                unsyncedSince = nil
            }
            // Written and synced, or failed: the durable appends up to here have their outcome.
            if unsyncedSince == nil && lastWritten > 0 {
                resumeWaiters(upTo: lastWritten, failures: failures, syncFailure: syncFailure)
                syncDue = nil
            }
            if closing && state.withLock({ $0.queue.isEmpty && $0.withdrawable.isEmpty }) {
                finished.signal()
                return
            }
        }
    }

    private func resumeWaiters(upTo sequence: UInt64, failures: [UInt64: any Error], syncFailure: (any Error)?) {
        let ready = state.withLock { state in
            var ready: [(CheckedContinuation<Void, any Error>, (any Error)?)] = []
            for written in state.durableQueued.keys where written <= sequence {
                state.durableQueued[written] = nil
                let failure = failures[written] ?? syncFailure
                if let waiter = state.durableWaiters.removeValue(forKey: written) {
                    ready.append((waiter, failure))
                } else {
                    state.durableOutcomes[written] = .some(failure)
                }
            }
            return ready
        }
        for (waiter, failure) in ready { Self.resume(waiter, failure) }
    }

    private static func resume(_ waiter: CheckedContinuation<Void, any Error>, _ failure: (any Error)?) {
        if let failure {
            waiter.resume(throwing: reported(failure))
        } else {
            waiter.resume()
        }
    }

    /// A failure as the appender hears of it: a system error says what to do about the journal.
    private static func reported(_ failure: any Error) -> any Error {
        (failure as? SystemError).map { WriteError(underlying: $0) } ?? failure
    }

    /// Appends bytes; on failure cuts the file back to its last whole record so replay stays clean.
    private func write(_ bytes: [UInt8]) throws {
        let goodLength = state.withLock { $0.fileBytes }
        try descriptor.withLock { fd in
            do {
                try bytes.withUnsafeBytes { (buffer) in try FileOps.writeAll(fd, buffer, path: path) }
            } catch {
                _ = ftruncate(fd, off_t(goodLength))
                _ = lseek(fd, off_t(goodLength), SEEK_SET)
                throw error
            }
        }
        state.withLock { $0.fileBytes += Int64(bytes.count) }
    }

    /// A journal file holding `records`: the header, then the records encoded in parts, across
    /// the cores when there are many.
    static func fileContents(_ records: [JournalRecord]) -> [[UInt8]] {
        let parts = records.count >= 10_000 ? Parallel.cores : 1
        let ranges = Parallel.split(records, into: parts)
        return [JournalFormat.header()]
            + Parallel.map(parts: parts) { JournalFormat.encode(Array(records[ranges[$0]])) }
    }

    /// Compaction: write the live state (`parts`, one after the other) to a temp file, fsync,
    /// rename over the journal, fsync the directory, then continue appending to the new file.
    private func replaceFile(with parts: [[UInt8]]) throws {
        let temp = directory + "/journal.compacting"
        unlink(temp)  // a leftover of a crash; never written through (O_EXCL | O_NOFOLLOW)
        let fd = try syscall("create", path: temp) {
            Glibc.open(temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        do {
            for bytes in parts {
                try bytes.withUnsafeBytes { (buffer) in try FileOps.writeAll(fd, buffer, path: temp) }
            }
            try syscall("fsync", path: temp) { fsync(fd) }
            try syscall("rename", path: temp) { rename(temp, path) }
        } catch {
            Glibc.close(fd)
            unlink(temp)
            throw error
        }
        // Renamed: the new file is the journal by its name from here on, so every append goes to
        // it, even if the rename cannot be synced (appends to the old file, unlinked now, would be
        // gone at the next start).
        descriptor.withLock { old in
            Glibc.close(old)
            old = fd
        }
        let size = parts.reduce(0) { $0 + $1.count }
        do {
            try syncDirectory(directory)
        } catch {
            // A power cut could bring the old file back under the name, without what is appended
            // to the new one: behind, as after a failed write, until a compaction goes through.
            state.withLock { state in
                state.fileBytes = Int64(size)
                state.isBehind = true
            }
            throw error
        }
        CrashPoint.journalCompacted.reached()
        let caughtUp = state.withLock { state in
            let wasBehind = state.isBehind
            state.fileBytes = Int64(size)
            state.isBehind = false
            return wasBehind
        }
        if caughtUp {
            Log.notice("journal: caught up: wrote the live state (\(size) bytes) after writes that failed")
        } else {
            Log.info("journal: compacted to \(size) bytes")
        }
    }
}

struct JournalOpenError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
