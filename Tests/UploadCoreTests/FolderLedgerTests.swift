import Foundation
import Testing
import UploadWire

@testable import UploadCore

@Suite struct FolderLedgerTests {
    static func file(_ inode: UInt64, _ path: String, _ state: FolderFileState, size: Int64 = 10, job: UInt64? = nil)
        -> FolderFile
    {
        FolderFile(
            key: FolderFileKey(device: 1, inode: inode), path: path, size: size, modifiedNanoseconds: 5, state: state,
            job: job.map { JobID($0) })
    }

    static func record(_ files: [FolderFile], folder: String = "photos") -> JournalRecord {
        .folderFiles(FolderLedgerRecord(folder: folder, files: files))
    }

    @Test func theLastEntryOfAFileWinsAndAFileThatIsGoneIsForgotten() {
        var state = JournalState()
        state.apply(Self.record([Self.file(1, "a.jpg", .taken, job: 40), Self.file(2, "b.jpg", .taken, job: 50)]))
        state.apply(Self.record([Self.file(1, "renamed.jpg", .uploaded, job: 40)]))
        state.apply(Self.record([Self.file(2, "b.jpg", .gone)]))
        state.apply(Self.record([Self.file(3, "c.jpg", .taken, job: 60)], folder: "other"))
        state.apply(.removed(JobID(4)))  // clearing its job leaves what the folder took
        let photos = state.folderLedgers["photos"]
        #expect(photos?.files.count == 1)
        #expect(photos?.files[FolderFileKey(device: 1, inode: 1)] == Self.file(1, "renamed.jpg", .uploaded, job: 40))
        #expect(photos?.count(of: .uploaded) == 1 && photos?.count(of: .taken) == 0)
        #expect(state.folderLedgers["other"]?.files.count == 1)
        #expect(state.jobs.isEmpty && state.nextID == 5, "a ledger's job IDs do not move the next ID")
    }

    /// A folder's job is its record of the version it took, for as long as it is in the queue.
    @Test func aFoldersJobsAreKnownByTheFileTheyTook() {
        var job = Fixtures.job(4)
        job.spec.folder = "photos"
        job.snapshot = SourceSnapshot(
            kind: .original, path: "/p/a.jpg", size: 10, device: 1, inode: 77, modificationTimeNanoseconds: 5)
        var state = JournalState()
        state.apply(.job(job))
        state.apply(.job(Fixtures.job(5)))
        #expect(state.folderLedgers["photos"]?.jobs == [FolderFileKey(device: 1, inode: 77): [JobID(4)]])
        job.state = .completed
        state.apply(.job(job))
        #expect(state.folderLedgers["photos"]?.jobs.count == 1)
        #expect(FolderFile(leftBy: job)?.state == .done && FolderFile(leftBy: Fixtures.job(5)) == nil)
        state.apply(.removed(JobID(4)))
        #expect(state.folderLedgers["photos"]?.isEmpty == true)
    }

    @Test func compactionWritesOneEntryPerFileInRecordsOfBoundedSize() throws {
        var state = JournalState()
        let count = FolderLedger.entriesPerRecord + 3
        for inode in 0..<UInt64(count) {
            state.apply(Self.record([Self.file(inode, "f\(inode)", .taken, job: inode + 1)]))
            state.apply(Self.record([Self.file(inode, "f\(inode)", .done, job: inode + 1)]))
        }
        state.apply(Self.record([Self.file(7, "f7", .gone)]))
        let compacted = state.compactedRecords()
        let ledgers = compacted.compactMap { record -> FolderLedgerRecord? in
            if case .folderFiles(let ledger) = record { return ledger }
            return nil
        }
        #expect(ledgers.map(\.files.count) == [FolderLedger.entriesPerRecord, 2])
        #expect(ledgers.flatMap(\.files).allSatisfy { $0.state == .done })
        var replayed = JournalState()
        for record in try JournalFormat.decode(Fixtures.file(compacted)).records { replayed.apply(record) }
        #expect(replayed.folderLedgers == state.folderLedgers)
    }

    /// A daemon from before watched folders reads the record as foreign, with no job, and writes
    /// it back when it compacts: the ledger comes back whole when a newer daemon starts again.
    @Test func aDaemonThatDoesNotKnowTheLedgerKeepsIt() throws {
        let ledger = Self.record([Self.file(1, "a.jpg", .taken, job: 2)])
        var writer = BinaryWriter()
        ledger.writePayload(to: &writer)
        var older = JournalState()
        older.apply(.job(Fixtures.job(2)))
        older.apply(.foreign(ForeignRecord(type: ledger.typeCode, payload: writer.bytes, jobID: nil)))
        let kept = try JournalFormat.decode(Fixtures.file(older.compactedRecords())).records
        #expect(kept.contains(ledger))
        var newer = JournalState()
        for record in kept { newer.apply(record) }
        #expect(newer.folderLedgers["photos"]?.files.count == 1)
    }

    /// A state named by a newer daemon keeps the whole record as it is, with no job, never damage.
    @Test func aStateOfANewerDaemonKeepsTheRecordAsItIs() throws {
        var writer = BinaryWriter()
        Self.record([Self.file(1, "a.jpg", .taken, job: 2)]).writePayload(to: &writer)
        let payload = JournalFormatTests.replacing(Array("taken".utf8), with: Array("later".utf8), in: writer.bytes)
        let contents = try JournalFormat.decode(
            Fixtures.file([.nextID(2)]) + JournalFormatTests.frame(type: 5, payload: payload))
        #expect(contents.damage == nil)
        #expect(contents.records.last == .foreign(ForeignRecord(type: 5, payload: payload, jobID: nil)))
    }

    /// A file changed in place: one key, a job per version. Every version's job counts, whichever
    /// changed last, and of the entries the newest job's wins, whatever order they were removed in.
    /// `match = content`: an entry's SHA-256 is a field added at its end, written only when set,
    /// so that other entries are what they were; the content a path last took is its newest job's,
    /// whatever order compaction writes the entries in.
    @Test func contentIsKeptWithAVersionAndByPath() throws {
        var plain = Self.file(1, "/w/a.txt", .done, job: 1)
        let plainBytes = JournalFormat.encode([Self.record([plain])])
        plain.sha256 = String(repeating: "a", count: 64)
        let withContent = JournalFormat.encode([Self.record([plain])])
        #expect(withContent.count > plainBytes.count)
        #expect(try JournalFormat.decode(Fixtures.file([Self.record([plain])])).records == [Self.record([plain])])
        plain.sha256 = nil
        #expect(try JournalFormat.decode(Fixtures.file([Self.record([plain])])).records == [Self.record([plain])])

        var saved = Self.file(9, "/w/a.txt", .done, job: 2)  // saved again by rename: a new inode, later
        saved.sha256 = String(repeating: "b", count: 64)
        var older = Self.file(1, "/w/a.txt", .done, job: 1)
        older.sha256 = String(repeating: "a", count: 64)
        var ledger = FolderLedger()
        ledger.apply(FolderLedgerRecord(folder: "w", files: [saved, older]))  // by key, as compaction orders them
        func takes(_ content: Character, inode: UInt64, _ path: String) -> [UInt64] {
            ledger.takes(
                ofContent: String(repeating: content, count: 64), key: FolderFileKey(device: 1, inode: inode),
                path: path
            ).map(\.job.rawValue)
        }
        #expect(takes("b", inode: 20, "/w/a.txt") == [2], "the content the path last took")
        #expect(takes("a", inode: 20, "/w/a.txt").isEmpty, "the older content, saved back, is a change")
        #expect(takes("a", inode: 1, "/w/b.txt") == [1], "the content this file had")
    }

    @Test func everyVersionOfAFileChangedInPlaceCounts() {
        func job(_ id: UInt64, size: Int64, _ state: JobState) -> Job {
            var job = Fixtures.job(id)
            job.spec.folder = "photos"
            job.state = state
            job.snapshot = SourceSnapshot(
                kind: .copy, path: "/c/\(id)", size: size, device: 1, inode: 77, modificationTimeNanoseconds: size)
            return job
        }
        let key = FolderFileKey(device: 1, inode: 77)
        var state = JournalState()
        state.apply(.job(job(10, size: 1, .queued)))
        state.apply(.job(job(11, size: 2, .completed)))
        state.apply(.job(job(10, size: 1, .running)))  // the older version's retry changed last
        let ledger = state.folderLedgers["photos"]!
        #expect(ledger.hasTaken(key, size: 2, modifiedNanoseconds: 2) { state.jobs[$0] })
        #expect(ledger.hasTaken(key, size: 1, modifiedNanoseconds: 1) { state.jobs[$0] })
        #expect(!ledger.hasTaken(key, size: 3, modifiedNanoseconds: 3) { state.jobs[$0] })
        var removed = JournalState()
        removed.apply(Self.record([FolderFile(leftBy: job(11, size: 2, .completed))!]))
        removed.apply(Self.record([FolderFile(leftBy: job(10, size: 1, .failed))!]))
        #expect(removed.folderLedgers["photos"]!.hasTaken(key, size: 2, modifiedNanoseconds: 2) { _ in nil })
    }
}
