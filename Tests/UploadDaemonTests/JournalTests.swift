import Foundation
import Glibc
import Synchronization
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon
@testable import UploadPlatform

@Suite("Journal file: replay, appends, group commit, compaction")
struct JournalTests {
    static func job(_ id: UInt64, _ state: JobState = .queued) -> Job {
        var job = Job(
            id: JobID(id), spec: JobSpec(source: "/data/\(id).bin", destination: "file:///out/"),
            createdAt: Date(timeIntervalSince1970: 1_700_000_000))
        job.state = state
        job.bytesTotal = 1000
        return job
    }

    static func reopen(_ directory: TemporaryDirectory) throws -> Journal.Replay {
        let (journal, replay) = try Journal.open(directory: directory.path)
        journal.close()
        return replay
    }

    @Test func newJournalIsJustAHeader() throws {
        let directory = try TemporaryDirectory()
        let (journal, replay) = try Journal.open(directory: directory.path)
        journal.close()
        #expect(replay.recordCount == 0)
        #expect(replay.damage == nil)
        #expect(replay.state.nextID == 1)
        #expect(try directory.read("journal") == JournalFormat.header())
    }

    /// A durable append is queued at once, on the caller's thread, in the caller's order; waiting
    /// for it after it was already written returns at once.
    @Test func durableAppendsKeepTheOrderTheyWereQueuedIn() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        let first = journal.queueDurably([.job(Self.job(4))])
        journal.append([.removed(JobID(4))])
        let second = journal.queueDurably([.job(Self.job(5))])
        try await Task.sleep(for: .milliseconds(200))  // written and synced before anyone waits
        try await journal.waitUntilDurable(second)
        try await journal.waitUntilDurable(first)
        journal.close()
        let replay = try Self.reopen(directory)
        #expect(replay.recordCount == 3)
        #expect(replay.state.jobs.keys.sorted() == [JobID(5)], "the job removed after it was queued stays removed")
    }

    @Test func appendsSurviveCloseAndReopen() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        try await journal.appendDurably([.job(Self.job(1)), .job(Self.job(2))])
        journal.append([.progress(JobProgress(id: JobID(1), bytesAcked: 500, checkpoint: nil))])
        try await journal.appendDurably([.job(Self.job(2, .paused))])
        journal.append([.removed(JobID(1)), .job(Self.job(3, .running))])
        journal.close()

        let replay = try Self.reopen(directory)
        #expect(replay.recordCount == 6)
        #expect(replay.damage == nil)
        #expect(replay.state.jobs.keys.sorted() == [JobID(2), JobID(3)])
        #expect(replay.state.jobs[JobID(2)]?.state == .paused)
        #expect(replay.state.jobs[JobID(3)]?.state == .running)
        #expect(replay.state.nextID == 4)
        let bytes = try directory.read("journal")
        #expect(replay.fileBytes == bytes.count)
        #expect(try JournalFormat.decode(bytes).records.count == 6)
    }

    /// The frozen journals of every released format open with the same queue, in the current
    /// format (the older ones rewritten), and take appends afterwards.
    @Test(arguments: [
        "format1", "format2", "format3", "format4", "format5", "format1/compacted", "format2/compacted",
        "format3/compacted", "format4/compacted", "format5/compacted",
    ])
    func aJournalOfAnEarlierReleaseIsRewrittenInTheCurrentFormat(folder: String) async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/journals/\(folder)/journal")
        let original = [UInt8](try Data(contentsOf: fixtures))
        var expected = JournalState()
        for record in try JournalFormat.decode(original).records { expected.apply(record) }
        let directory = try TemporaryDirectory()
        _ = try directory.write("journal", bytes: original)
        let (journal, replay) = try Journal.open(directory: directory.path)
        #expect(replay.damage == nil)
        #expect(replay.state.jobs == expected.jobs)
        #expect(replay.state.nextID == expected.nextID)
        let next = expected.nextID
        try await journal.appendDurably([.job(Self.job(next))])
        journal.close()

        let bytes = try directory.read("journal")
        #expect(Array(bytes[0..<JournalFormat.headerSize]) == JournalFormat.header())
        let again = try Self.reopen(directory)
        #expect(again.state.jobs.count == expected.jobs.count + 1)
        #expect(Array(again.state.jobs.filter { $0.key.rawValue != next }.map(\.value)) == Array(expected.jobs.values))
        #expect(again.state.nextID == next + 1)
    }

    @Test func durableAppendIsOnDiskWhenItReturns() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        defer { journal.close() }
        try await journal.appendDurably([.job(Self.job(1))])
        // Read the file behind the journal's back while it is still open.
        let contents = try JournalFormat.decode(try directory.read("journal"))
        #expect(contents.records == [.job(Self.job(1))])
        #expect(journal.fileBytes == Int64(try directory.read("journal").count))
    }

    /// A durable append that may wait (the end of one of many small uploads) is synced with the
    /// next one that may not, or when its delay is up; never reported durable before its sync.
    @Test func anAppendThatMayWaitSharesTheNextSyncOrIsSyncedWhenItsDelayIsUp() async throws {
        let directory = try TemporaryDirectory()
        // Plain appends' one-second sync out of the way: only the delays below decide.
        let (journal, _) = try Journal.open(directory: directory.path, plainSyncDelay: .seconds(3600))
        defer { journal.close() }
        let syncsBefore = journal.syncCount
        let patient = journal.queueDurably([.job(Self.job(1, .completed))], within: .seconds(30))
        let resumed = Mutex(false)
        let waiter = Task {
            try await journal.waitUntilDurable(patient)
            resumed.withLock { $0 = true }
        }
        // Written meanwhile, not synced: not durable yet.
        try await Task.sleep(for: .milliseconds(100))
        #expect(!resumed.withLock { $0 }, "written, but not synced yet: not durable")
        #expect(journal.syncCount == syncsBefore)
        // One that may not wait: both are synced by its fdatasync.
        try await journal.appendDurably([.job(Self.job(2))])
        try await waiter.value
        #expect(resumed.withLock { $0 })
        #expect(journal.syncCount == syncsBefore + 1, "one fdatasync for both")
        #expect(try JournalFormat.decode(try directory.read("journal")).records.count == 2)
        // Alone, it is synced once its delay is up.
        let started = ContinuousClock.now
        try await journal.waitUntilDurable(journal.queueDurably([.job(Self.job(3))], within: .milliseconds(50)))
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    /// An append the writer's next wake-up would take anyway does not wake it (small files' ends
    /// and starts come by the thousand); one due earlier does, and all are written in one go.
    /// A ticket synced along with another's is answered without waiting, once.
    @Test func anAppendWakesTheWriterOnlyWhenItIsDueBeforeTheWriterWakes() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path, plainSyncDelay: .seconds(3600))
        defer { journal.close() }
        let header = journal.fileBytes
        // The writer slept with nothing due: this wakes it, and it is written (sync due in 30 s).
        let first = journal.queueDurably([.job(Self.job(1, .completed))], within: .seconds(30))
        #expect(await eventually { journal.fileBytes > header })
        let written = journal.fileBytes
        // Due after the writer's wake-up for the first one's sync: left for then.
        let second = journal.queueDurably([.job(Self.job(2, .completed))], within: .seconds(60))
        try await Task.sleep(for: .milliseconds(100))
        #expect(journal.fileBytes == written, "not woken for an append due later than its own wake-up")
        #expect(journal.takeOutcome(of: first) == nil, "not synced yet")
        // Due now: woken; both waiting appends are written and synced with it.
        try await journal.appendDurably([.job(Self.job(3))])
        #expect(try JournalFormat.decode(try directory.read("journal")).records.count == 3)
        #expect((try? journal.takeOutcome(of: first)?.get()) != nil, "synced along")
        #expect((try? journal.takeOutcome(of: second)?.get()) != nil)
        #expect(journal.takeOutcome(of: second) == nil, "an outcome is taken once")
    }

    /// A plain append that may wait (an attempt's start) does not wake a sleeping writer: it goes
    /// out with the next write, or by itself when its delay is up.
    @Test func aPlainAppendThatMayWaitGoesWithTheNextWrite() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path, plainSyncDelay: .seconds(3600))
        defer { journal.close() }
        let header = journal.fileBytes
        journal.append([.job(Self.job(1, .running))], writeWithin: .seconds(60))
        try await Task.sleep(for: .milliseconds(100))
        #expect(journal.fileBytes == header, "the writer slept on")
        // An append due now takes it along, in order.
        journal.append([.job(Self.job(2, .running))])
        #expect(await eventually { journal.fileBytes > header })
        let records = try JournalFormat.decode(try directory.read("journal")).records
        let ids = records.map { (record) -> UInt64 in
            guard case .job(let job) = record else { return 0 }
            return job.id.rawValue
        }
        #expect(ids == [1, 2])
        // By itself, when its delay is up.
        let written = journal.fileBytes
        journal.append([.job(Self.job(3, .running))], writeWithin: .milliseconds(200))
        #expect(journal.fileBytes == written)
        #expect(await eventually { journal.fileBytes > written })
    }

    /// A withdrawable record (an attempt's start) waits for the writer's next write: taken back
    /// before it, it is never written; not taken back, it goes out with that write, or by itself
    /// when its delay is up; once the writer took it, it cannot be taken back.
    @Test func aWithdrawableRecordIsWrittenWithTheNextWriteUnlessTakenBackFirst() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path, plainSyncDelay: .seconds(3600))
        defer { journal.close() }
        let header = journal.fileBytes
        journal.appendWithdrawable(.job(Self.job(1, .running)), of: JobID(1), writeWithin: .seconds(60))
        journal.appendWithdrawable(.job(Self.job(2, .running)), of: JobID(2), writeWithin: .seconds(60))
        try await Task.sleep(for: .milliseconds(100))
        #expect(journal.fileBytes == header, "the writer slept on")
        #expect(journal.withdraw(JobID(1)) == .job(Self.job(1, .running)))
        #expect(journal.withdraw(JobID(1)) == nil, "taken back once")
        // Job 1's end replaces its start; job 2's start goes out with the write.
        try await journal.appendDurably([.job(Self.job(1, .completed))])
        #expect(journal.withdraw(JobID(2)) == nil, "the writer took it")
        journal.appendWithdrawable(.job(Self.job(3, .running)), of: JobID(3), writeWithin: .milliseconds(200))
        let written = journal.fileBytes
        #expect(await eventually { journal.fileBytes > written }, "written by itself when its delay is up")
        #expect(journal.withdraw(JobID(3)) == nil)
        let records = try JournalFormat.decode(try directory.read("journal")).records
        #expect(records == [.job(Self.job(1, .completed)), .job(Self.job(2, .running)), .job(Self.job(3, .running))])
    }

    /// Closing writes the withdrawable records still waiting.
    @Test func closingWritesTheWithdrawableRecordsLeft() throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path, plainSyncDelay: .seconds(3600))
        journal.appendWithdrawable(.job(Self.job(7, .running)), of: JobID(7), writeWithin: .seconds(60))
        journal.close()
        let replay = try Self.reopen(directory)
        #expect(replay.state.jobs[JobID(7)]?.state == .running)
    }

    @Test func tornTailIsCutAndKeptAside() throws {
        let directory = try TemporaryDirectory()
        let records: [JournalRecord] = (1...5).map { .job(Self.job($0)) }
        let whole = JournalFormat.header() + JournalFormat.encode(records)
        let torn = Array(JournalFormat.encode([.job(Self.job(6))]).dropLast(7))
        try directory.write("journal", bytes: whole + torn)

        let (journal, replay) = try Journal.open(directory: directory.path)
        journal.close()
        #expect(replay.recordCount == 5)
        #expect(replay.state.jobs.count == 5)
        #expect(replay.fileBytes == whole.count)
        let damage = try #require(replay.damage)
        #expect(
            damage.contains("journal damaged at byte \(whole.count) (\(torn.count) bytes: the last record is torn)"))
        #expect(damage.contains("in a file of \(whole.count + torn.count) bytes"))
        #expect(damage.contains("kept 5 records before it"))
        let copies = directory.contents().filter { $0.hasPrefix("journal.damaged-") }
        #expect(copies.count == 1)
        #expect(damage.contains(copies.first ?? "?"))
        let line =
            "uploadd journal: \(torn.count) damaged bytes from byte \(whole.count) of \(directory.path)/journal: the last record is torn\n"
        #expect(try directory.read(copies[0]) == Array(line.utf8) + torn)
        #expect(try directory.read("journal") == whole)

        // The cut journal is clean from now on.
        let again = try Self.reopen(directory)
        #expect(again.damage == nil)
        #expect(again.recordCount == 5)
    }

    /// A damaged record in the middle: the records after it are replayed, its bytes alone are set
    /// aside, the journal is rewritten without them, and its job, which would have run, is paused.
    @Test func aDamagedRecordInTheMiddleIsSetAsideAndTheJournalRewritten() async throws {
        let directory = try TemporaryDirectory()
        let records: [JournalRecord] = [
            .job(Self.job(1)), .job(Self.job(2)), .job(Self.job(1, .completed)), .job(Self.job(3)),
        ]
        var bytes = JournalFormat.header()
        var frames: [Range<Int>] = []
        for record in records {
            let start = bytes.count
            JournalFormat.append(record, to: &bytes)
            frames.append(start..<bytes.count)
        }
        bytes[frames[2].lowerBound + 20] ^= 0x80
        try directory.write("journal", bytes: bytes)

        let (journal, replay) = try Journal.open(directory: directory.path)
        #expect(replay.recordCount == 3)
        #expect(replay.state.jobs[JobID(1)]?.state == .paused, "its completion was lost: it must not upload again")
        #expect(replay.state.jobs[JobID(2)]?.state == .queued)
        #expect(replay.state.jobs[JobID(3)]?.state == .queued)
        let damage = try #require(replay.damage)
        #expect(damage.contains("journal damaged at byte \(frames[2].lowerBound) (\(frames[2].count) bytes"))
        #expect(damage.contains("job 1's record"))
        #expect(damage.contains("kept 3 records, 1 of them after the damage"))
        #expect(damage.contains("paused job 1,"))
        #expect(damage.contains("uploadctl show 1"))
        let copies = directory.contents().filter { $0.hasPrefix("journal.damaged-") }
        #expect(copies.count == 1)
        let copy = try directory.read(copies[0])
        #expect(copy.suffix(frames[2].count) == bytes[frames[2]], "the damaged record alone is set aside")
        #expect(String(decoding: copy.dropLast(frames[2].count), as: UTF8.self).hasPrefix("uploadd journal: "))

        // Rewritten whole, and appended to from there.
        try await journal.appendDurably([.job(Self.job(4))])
        journal.close()
        let contents = try JournalFormat.decode(try directory.read("journal"))
        #expect(contents.damage == nil)
        let again = try Self.reopen(directory)
        #expect(again.damage == nil)
        #expect(again.state.jobs.keys.sorted() == [1, 2, 3, 4].map { JobID($0) })
        #expect(again.state.jobs[JobID(1)]?.state == .paused)
    }

    /// The damaged bytes are never dropped before their copy is on disk: when it cannot be
    /// written, the journal is refused, untouched, with what to do.
    @Test func aDamagedJournalWhoseBytesCannotBeSetAsideIsLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let bytes = JournalFormat.header() + JournalFormat.encode([.job(Self.job(1))]) + [0xDE, 0xAD, 0xBE, 0xEF, 9]
        try directory.write("journal", bytes: bytes)
        // The copy's temporary file cannot be made: a directory has its name, for the next seconds.
        let now = Int(Date().timeIntervalSince1970)
        for second in now...(now + 30) {
            try FileManager.default.createDirectory(
                atPath: directory.path + "/journal.damaged-\(second).tmp", withIntermediateDirectories: false)
        }
        let error = #expect(throws: JournalOpenError.self) { try Journal.open(directory: directory.path) }
        #expect(error?.message.contains("cannot be set aside") == true, "\(String(describing: error))")
        #expect(error?.message.contains("free some space") == true)
        #expect(try directory.read("journal") == bytes)
    }

    @Test func appendsAfterACutTailFollowTheLastGoodRecord() async throws {
        let directory = try TemporaryDirectory()
        let whole = JournalFormat.header() + JournalFormat.encode([.job(Self.job(1))])
        try directory.write("journal", bytes: whole + [0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0, 1, 2, 3])
        let (journal, replay) = try Journal.open(directory: directory.path)
        #expect(replay.damage != nil)
        try await journal.appendDurably([.job(Self.job(2))])
        journal.close()
        let again = try Self.reopen(directory)
        #expect(again.damage == nil)
        #expect(again.state.jobs.keys.sorted() == [JobID(1), JobID(2)])
    }

    @Test func tornHeaderStartsAFreshJournal() throws {
        let directory = try TemporaryDirectory()
        try directory.write("journal", bytes: Array("UPLO".utf8))
        let replay = try Self.reopen(directory)
        #expect(replay.damage != nil)
        #expect(replay.recordCount == 0)
        #expect(try directory.read("journal") == JournalFormat.header())
    }

    @Test func aFileThatIsNotAJournalIsRefusedAndLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let text = Array("some other program's file\n".utf8)
        try directory.write("journal", bytes: text)
        let error = #expect(throws: JournalOpenError.self) { try Journal.open(directory: directory.path) }
        #expect(error?.message.contains(directory.path + "/journal") == true)
        #expect(error?.message.contains("not an uploadd journal") == true)
        #expect(try directory.read("journal") == text)
    }

    @Test func aDirectoryInPlaceOfTheJournalFailsClearly() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/journal", withIntermediateDirectories: false)
        let error = #expect(throws: JournalOpenError.self) { try Journal.open(directory: directory.path) }
        #expect(error?.message.contains("\(directory.path)/journal is not a regular file") == true)
    }

    @Test func aMissingStateDirectoryFailsWithThePath() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.path + "/nope"
        let error = #expect(throws: SystemError.self) { try Journal.open(directory: missing) }
        #expect(error?.description.contains(missing) == true)
        #expect(error?.errno == ENOENT)
    }

    @Test func compactionThenAppendsThenReopen() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        var state = JournalState()
        func record(_ records: [JournalRecord]) async throws {
            for record in records { state.apply(record) }
            try await journal.appendDurably(records)
        }
        for id in UInt64(1)...20 { try await record([.job(Self.job(id)), .job(Self.job(id, .running))]) }
        for id in UInt64(10)...20 { try await record([.removed(JobID(id))]) }
        let sizeBefore = journal.fileBytes
        #expect(journal.recordsSinceCompaction == 51)

        journal.compact(state.compactedRecords())
        #expect(journal.recordsSinceCompaction == 10)
        try await record([.job(Self.job(21)), .progress(JobProgress(id: JobID(3), bytesAcked: 77, checkpoint: nil))])
        #expect(journal.fileBytes < sizeBefore)
        journal.close()

        #expect(!directory.contents().contains("journal.compacting"))
        let replay = try Self.reopen(directory)
        #expect(replay.damage == nil)
        #expect(replay.recordCount == 1 + 9 + 2)
        #expect(replay.state.jobs == state.jobs)
        #expect(replay.state.nextID == 22)
        #expect(replay.state.jobs[JobID(3)]?.bytesAcked == 77)
    }

    /// The directory's fsync after a compaction's rename fails (an I/O error): the compacted file
    /// is the journal by its name, so the appends after it go there, not to the old file (unlinked
    /// by the rename), and the journal says it is behind, so that the scheduler compacts again.
    @Test func appendsAfterACompactionWhoseRenameCannotBeSyncedAreKept() async throws {
        let directory = try TemporaryDirectory()
        let failing = Atomic<Bool>(false)
        let (journal, _) = try Journal.open(directory: directory.path) { path in
            if failing.load(ordering: .relaxed) { throw SystemError("fsync", path: path, errno: EIO) }
            try FileOps.syncDirectory(path)
        }
        var state = JournalState()
        for id in UInt64(1)...3 {
            let record = JournalRecord.job(Self.job(id))
            state.apply(record)
            try await journal.appendDurably([record])
        }
        failing.store(true, ordering: .relaxed)
        journal.compact(state.compactedRecords())
        try await journal.appendDurably([.job(Self.job(4))])
        #expect(journal.isBehind, "the rename may not survive a power cut")
        journal.close()

        let replay = try Self.reopen(directory)
        #expect(replay.damage == nil)
        #expect(replay.state.jobs.keys.sorted() == (UInt64(1)...4).map { JobID($0) })
    }

    /// A big queue's compaction is encoded in parts across the cores, by the writer: the parts
    /// make one file that replays as the queue, in order, and reports its whole size.
    @Test func aCompactionOfManyJobsIsWrittenInPartsThatReplayAsOne() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        var state = JournalState()
        for id in UInt64(1)...25_003 { state.apply(.job(Self.job(id, id % 3 == 0 ? .paused : .queued))) }
        let records = state.compactedRecords()
        #expect(Journal.fileContents(records).count == 1 + Parallel.cores)
        journal.compact(records)
        try await journal.appendDurably([.removed(JobID(7))])
        state.apply(.removed(JobID(7)))
        let size = journal.fileBytes
        journal.close()

        let bytes = try directory.read("journal")
        #expect(Int64(bytes.count) == size)
        let contents = try JournalFormat.decode(bytes)
        #expect(contents.damage == nil)
        #expect(Array(contents.records.dropLast()) == records)
        let replay = try Self.reopen(directory)
        #expect(replay.state.jobs == state.jobs)
    }

    /// A full disk fails the temp file; here a directory holds its name. The journal stays as it
    /// was, and appends queued with the compaction still succeed.
    @Test func aCompactionThatCannotBeWrittenLeavesTheJournalAndOtherAppendsAlone() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        try await journal.appendDurably([.job(Self.job(1))])
        let before = try directory.read("journal")
        try FileManager.default.createDirectory(
            atPath: directory.path + "/journal.compacting", withIntermediateDirectories: false)
        journal.compact([.job(Self.job(1))])
        try await journal.appendDurably([.job(Self.job(2))])
        #expect(!journal.isBehind, "no record was lost")
        journal.close()
        let after = try directory.read("journal")
        #expect(Array(after.prefix(before.count)) == before, "the old journal was kept")
        #expect(try JournalFormat.decode(after).records == [.job(Self.job(1)), .job(Self.job(2))])
    }

    @Test func noSpaceNamesTheStateDirectory() {
        let error = Journal.WriteError(underlying: SystemError("write", path: "/state/uploadd/journal", errno: ENOSPC))
        #expect(
            error.description == "no space left to write the journal in /state/uploadd; free some space and try again")
    }

    @Test func compactionKeepsIDsOfRemovedJobs() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        try await journal.appendDurably([.job(Self.job(1)), .job(Self.job(2)), .removed(JobID(2))])
        var state = JournalState()
        for record in [JournalRecord.job(Self.job(1)), .job(Self.job(2)), .removed(JobID(2))] { state.apply(record) }
        journal.compact(state.compactedRecords())
        journal.close()
        let replay = try Self.reopen(directory)
        #expect(replay.state.nextID == 3)
    }

    @Test func manyConcurrentDurableAppendsAllLand() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in UInt64(1)...500 {
                group.addTask { try await journal.appendDurably([.job(Self.job(id))]) }
            }
            try await group.waitForAll()
        }
        // Every waiter was answered, so every record is already on disk before close.
        let onDisk = try JournalFormat.decode(try directory.read("journal"))
        #expect(onDisk.records.count == 500)
        journal.close()
        let replay = try Self.reopen(directory)
        #expect(replay.recordCount == 500)
        #expect(replay.state.jobs.count == 500)
        #expect(replay.state.nextID == 501)
    }

    @Test func appendsFromOneTaskKeepTheirOrder() async throws {
        let directory = try TemporaryDirectory()
        let (journal, _) = try Journal.open(directory: directory.path)
        let states: [JobState] = [.queued, .running, .queued, .running, .paused, .queued, .running, .completed]
        for (index, state) in states.enumerated() {
            if index % 2 == 0 {
                journal.append([.job(Self.job(1, state))])
            } else {
                try await journal.appendDurably([.job(Self.job(1, state))])
            }
        }
        journal.close()
        let records = try JournalFormat.decode(try directory.read("journal")).records
        #expect(records == states.map { .job(Self.job(1, $0)) })
    }
}
