import Foundation
import Testing
import UploadWire

@testable import UploadCore

/// Replay decodes a window of records on every core and hands them out in order. These journals
/// are big enough for several windows and several workers; what they must show is exactly what
/// reading one record after another would.
@Suite("Replay across cores: order, damage, windows")
struct ParallelReplayTests {
    /// `count` records of every kind, and where each begins in the file.
    static func journal(_ count: Int) -> (bytes: [UInt8], records: [JournalRecord], offsets: [Int]) {
        var bytes = JournalFormat.header()
        var records: [JournalRecord] = []
        var offsets: [Int] = []
        let kinds = Fixtures.everyRecordKind
        for index in 0..<count {
            var record = kinds[index % kinds.count]
            if case .job(var job) = record {
                job.spec.source += "-\(index)"  // every job record differs from the others
                record = .job(job)
            }
            offsets.append(bytes.count)
            JournalFormat.append(record, to: &bytes)
            records.append(record)
        }
        return (bytes, records, offsets)
    }

    static func replay(_ bytes: [UInt8]) throws -> (JournalContents, [JournalRecord]) {
        var handed: [JournalRecord] = []
        let contents = try JournalFormat.decode(bytes) { handed.append($0) }
        return (contents, handed)
    }

    @Test func aJournalOfManyWindowsIsHandedOutInOrder() throws {
        let (bytes, records, _) = Self.journal(3 * JournalFormat.decodingWindow + 123)
        let (contents, handed) = try Self.replay(bytes)
        #expect(contents.damage == nil)
        #expect(contents.recordCount == records.count)
        #expect(contents.validLength == bytes.count)
        #expect(handed == records)
    }

    /// A bad checksum in the middle of a window, at the first record of a window, and in the
    /// last record: replay sets that record aside and hands out every other, in order.
    @Test(arguments: [300, JournalFormat.decodingWindow, JournalFormat.decodingWindow + 2_000, 9_999])
    func aBadChecksumCostsOnlyThatRecord(index: Int) throws {
        var (bytes, records, offsets) = Self.journal(10_000)
        bytes[offsets[index] + JournalFormat.frameOverhead] ^= 0xff  // the first byte of its payload
        let (contents, handed) = try Self.replay(bytes)
        var expected = records
        expected.remove(at: index)
        #expect(handed == expected)
        #expect(contents.recordCount == records.count - 1)
        let end = index + 1 < offsets.count ? offsets[index + 1] : bytes.count
        #expect(contents.damaged.map(\.range) == [offsets[index]..<end])
        #expect(contents.damage?.reason == "a record's checksum does not match")
        #expect(contents.validLength == (index + 1 < offsets.count ? bytes.count : offsets[index]))
    }

    /// A record whose checksum is right but whose payload does not decode (a string that is not
    /// UTF-8), decoded by the second worker of its window: set aside, and the records after it
    /// handed out.
    @Test func aRecordThatDoesNotDecodeCostsOnlyThatRecord() throws {
        let (good, records, _) = Self.journal(5_000)
        var job = Fixtures.job(42)
        job.spec.destination = "https://example.com/\u{e9}/"
        var writer = BinaryWriter()
        job.write(to: &writer)
        var payload = writer.bytes
        let accent = try #require(payload.firstIndex(of: 0xc3))
        payload[accent] = 0xff  // not UTF-8 anywhere
        var bad: [UInt8] = []
        JournalFormat.appendFrame(type: JournalRecord.jobType, payload: payload, to: &bad)
        let after = Self.journal(10)
        let (contents, handed) = try Self.replay(good + bad + after.bytes.dropFirst(JournalFormat.headerSize))
        #expect(handed == records + after.records)
        #expect(contents.validLength == good.count + bad.count + after.bytes.count - JournalFormat.headerSize)
        #expect(contents.damage?.range == good.count..<(good.count + bad.count))
        #expect(contents.damage?.reason.hasPrefix("a record does not decode") == true)
        #expect(contents.damage?.record == .job(JobID(42), certain: false))
    }

    @Test func aTornLastRecordAfterManyWindowsKeepsTheRest() throws {
        let (bytes, records, offsets) = Self.journal(2 * JournalFormat.decodingWindow + 7)
        let torn = Array(bytes.dropLast(2))
        let (contents, handed) = try Self.replay(torn)
        #expect(handed == Array(records.dropLast()))
        #expect(contents.damage?.offset == offsets.last!)
        #expect(contents.damage?.reason.contains("torn") == true)
    }

    @Test func splitGivesEveryIndexToOnePart() {
        #expect(Parallel.split(0..<10, into: 3) == [0..<3, 3..<6, 6..<10])
        #expect(Parallel.split(0..<1, into: 2) == [0..<0, 0..<1])
        #expect(Parallel.split(0..<0, into: 2) == [0..<0, 0..<0])
        #expect(Parallel.split(0..<5, into: 1) == [0..<5])
        let doubled = Parallel.map(parts: 4) { $0 * 2 }
        #expect(doubled == [0, 2, 4, 6])
    }
}
