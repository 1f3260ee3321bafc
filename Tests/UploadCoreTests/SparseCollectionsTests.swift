import Testing
import UploadWire

@testable import UploadCore

@Suite("Tables give their room back once most of it is empty")
struct SparseCollectionsTests {
    @Test func aDictionaryShrinksOnlyWhenLessThanAQuarterFull() {
        var table: [Int: String] = [:]
        for key in 0..<10_000 { table[key] = "\(key)" }
        let full = table.capacity
        for key in 0..<6_000 { table[key] = nil }
        table.shrinkIfSparse()
        #expect(table.capacity == full, "a third full: kept")
        for key in 6_000..<9_990 { table[key] = nil }
        table.shrinkIfSparse()
        #expect(table.capacity < 64)
        #expect(table.count == 10 && table[9_995] == "9995")
    }

    @Test func aSetShrinksToFit() {
        var set = Set(0..<10_000)
        set.subtract(0..<9_999)
        set.shrinkIfSparse()
        #expect(set.capacity < 8 && set == [9_999])
    }

    /// After 100,000 jobs are cleared, the job table must not keep room for them.
    @Test func clearedJobsLeaveNoRoomBehindInTheJournalState() {
        var state = JournalState()
        for id in 1...20_000 as ClosedRange<UInt64> { state.apply(.job(Fixtures.job(id))) }
        for id in 1...20_000 as ClosedRange<UInt64> { state.apply(.removed(JobID(id))) }
        #expect(state.jobs.isEmpty && state.jobs.pageCount == 0)
        #expect(state.nextID == 20_001)
    }
}
