import Foundation
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon

/// The store's three verbs keep the promises their names make: what reaches the file, when, and
/// what a crash (a reopen without close) finds.
@Suite("JobStore: saveSoon, saveStart, saveDurably and held adds")
struct JobStoreTests {
    static func open(_ directory: TemporaryDirectory) throws -> JobStore {
        let (journal, replay) = try Journal.open(directory: directory.path)
        return JobStore(replayed: replay.state, journal: journal, compactAfter: 10_000)
    }

    static func replayed(_ directory: TemporaryDirectory) throws -> JournalState {
        try JournalTests.reopen(directory).state
    }

    @Test func aDurableSaveIsOnDiskOnceItsTicketIs() async throws {
        let directory = try TemporaryDirectory()
        var store = try Self.open(directory)
        let ticket = store.saveDurably(JournalTests.job(1))
        #expect(store.jobs[JobID(1)] != nil, "applied to memory at once")
        try await store.journal.waitUntilDurable(ticket)
        #expect(try Self.replayed(directory).jobs[JobID(1)]?.state == .queued)
        store.journal.close()
    }

    @Test func aSoonSaveIsWrittenWithoutAnyoneWaiting() async throws {
        let directory = try TemporaryDirectory()
        var store = try Self.open(directory)
        store.saveSoon(JournalTests.job(1, .paused))
        // Flushed by the durable save after it: the file keeps the order memory took them in.
        try await store.journal.waitUntilDurable(store.saveDurably(JournalTests.job(2)))
        let state = try Self.replayed(directory)
        #expect(state.jobs[JobID(1)]?.state == .paused)
        #expect(state.jobs[JobID(2)] != nil)
        store.journal.close()
    }

    /// A start saved withdrawably and settled by the job's end before the write never reaches
    /// the file: the end's record replaces it.
    @Test func anEndReplacesItsStartThatWasNotWrittenYet() async throws {
        let directory = try TemporaryDirectory()
        var store = try Self.open(directory)
        try await store.journal.waitUntilDurable(store.saveDurably(JournalTests.job(1)))
        let before = try Self.recordCount(directory)
        store.saveStart(JournalTests.job(1, .running), writeWithin: .seconds(30))
        try await store.journal.waitUntilDurable(store.saveDurably(JournalTests.job(1, .completed)))
        #expect(try Self.recordCount(directory) == before + 1, "the end only, not the start")
        #expect(try Self.replayed(directory).jobs[JobID(1)]?.state == .completed)
        store.journal.close()
    }

    /// A held add's records stay out of the journal (and out of a compaction) until it is
    /// released; a removal undoes the add and answers its waiter with why.
    @Test func aHeldAddIsNotJournaledAndItsRemovalUndoesIt() async throws {
        let directory = try TemporaryDirectory()
        let source = try directory.write("source", bytes: [UInt8](repeating: 7, count: 10))
        var store = try Self.open(directory)
        store.hold(JobID(1), copy: GrowingCopy(path: source, size: 10))
        try await store.journal.waitUntilDurable(store.saveDurably(JournalTests.job(1)))
        store.saveSoon(JournalTests.job(1, .running))
        try await store.journal.waitUntilDurable(store.saveDurably(JournalTests.job(2)))
        #expect(try Self.replayed(directory).jobs[JobID(1)] == nil, "held back while its copy is not saved")
        let answer: RPCError? = await withCheckedContinuation { waiter in
            store.heldAdds[JobID(1)]?.waiters.append(waiter)
            store.apply(.removed(JobID(1)))
            _ = store.saveDurably([.removed(JobID(1))])
        }
        #expect(answer?.message.contains("removed before its copy was made") == true)
        #expect(store.heldAdds.isEmpty)
        store.journal.close()
    }

    /// A held job that completes is saved by its end: its waiters hear nil once that is on disk.
    @Test func aHeldAddThatCompletesIsSavedByItsEnd() async throws {
        let directory = try TemporaryDirectory()
        let source = try directory.write("source", bytes: [UInt8](repeating: 7, count: 10))
        var store = try Self.open(directory)
        store.hold(JobID(1), copy: GrowingCopy(path: source, size: 10))
        store.apply(.job(JournalTests.job(1)))
        let answer: RPCError? = await withCheckedContinuation { waiter in
            store.heldAdds[JobID(1)]?.waiters.append(waiter)
            store.saveSoon(JournalTests.job(1, .completed))
        }
        #expect(answer == nil)
        #expect(try Self.replayed(directory).jobs[JobID(1)]?.state == .completed)
        store.journal.close()
    }

    static func recordCount(_ directory: TemporaryDirectory) throws -> Int {
        try JournalTests.reopen(directory).recordCount
    }
}
