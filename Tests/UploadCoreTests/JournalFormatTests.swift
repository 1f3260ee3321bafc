import Foundation
import Testing

@testable import UploadCore

@Suite("JournalFormat framing and replay")
struct JournalFormatTests {
    @Test("every record kind survives encode and decode", arguments: Fixtures.everyRecordKind)
    func roundTrip(record: JournalRecord) throws {
        let contents = try JournalFormat.decode(Fixtures.file([record]))
        #expect(contents.records == [record])
        #expect(contents.damage == nil)
        #expect(contents.validLength == JournalFormat.headerSize + JournalFormat.encode([record]).count)
    }

    @Test func allKindsTogetherKeepTheirOrder() throws {
        let records = Fixtures.everyRecordKind + Fixtures.twentyRecords
        let contents = try JournalFormat.decode(Fixtures.file(records))
        #expect(contents.records == records)
        #expect(contents.damage == nil)
    }

    @Test func frameLayoutIsLengthCRCTypePayload() {
        let bytes = JournalFormat.encode([.nextID(7)])
        let length = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        #expect(Int(length) == bytes.count - JournalFormat.frameOverhead)
        #expect(bytes[8] == 4)
        #expect(Array(bytes[9...]) == [7])
        #expect(JournalFormat.header() == Array("UPLOADD\n".utf8) + [2, 0, 0, 0])
    }

    @Test func formatOneJournalsStillReplay() throws {
        let records = Fixtures.everyRecordKind + Fixtures.twentyRecords
        let file = try JournalFormat.formatOneFile(records)
        let contents = try JournalFormat.decode(file)
        #expect(contents.version == 1)
        #expect(contents.records == records)
        #expect(contents.damage == nil)
        #expect(contents.validLength == file.count)
        let torn = try JournalFormat.decode(Array(file.dropLast(3)))
        #expect(torn.records == Array(records.dropLast()))
        #expect(torn.damage != nil)
        let highest = records.compactMap { record -> UInt64? in
            switch record {
            case .job(let job): return job.id.rawValue
            case .progress(let progress): return progress.id.rawValue
            case .removed(let id): return id.rawValue
            case .nextID(let next): return next - 1
            }
        }.max()
        #expect(JournalFormat.highestJobID(scanning: file[JournalFormat.headerSize...], version: 1) == highest)
    }

    @Test func binaryPayloadsAreSmallerThanJSON() throws {
        let records = Fixtures.twentyRecords
        #expect(Fixtures.file(records).count * 2 < (try JournalFormat.formatOneFile(records)).count)
    }

    @Test func everyCutOfABinaryPayloadIsReportedNotTrapped() {
        for record in Fixtures.everyRecordKind {
            var writer = BinaryWriter()
            record.writePayload(to: &writer)
            let payload = writer.bytes
            for length in 0..<payload.count {
                let decoded = payload[..<length].withUnsafeBytes { bytes in
                    var reader = BinaryReader(bytes)
                    return try? JournalRecord.readPayload(type: record.typeCode, from: &reader)
                }
                // A cut payload either fails to decode or decodes to something else (never traps).
                #expect(decoded != record, "cut at \(length) of \(payload.count) decoded to the whole record")
            }
        }
    }

    @Test func emptyFileHasNoRecordsAndNoDamage() throws {
        let contents = try JournalFormat.decode([])
        #expect(contents.records.isEmpty)
        #expect(contents.damage == nil)
        #expect(contents.validLength == 0)
    }

    @Test func headerOnlyHasNoRecordsAndNoDamage() throws {
        let contents = try JournalFormat.decode(JournalFormat.header())
        #expect(contents.records.isEmpty)
        #expect(contents.damage == nil)
        #expect(contents.validLength == JournalFormat.headerSize)
    }

    @Test(arguments: 1..<12)
    func tornHeaderIsDamageNotAnError(length: Int) throws {
        let contents = try JournalFormat.decode(Array(JournalFormat.header().prefix(length)))
        #expect(contents.records.isEmpty)
        #expect(contents.damage?.offset == 0)
        #expect(contents.validLength == 0)
    }

    @Test func wrongMagicIsNotAJournal() {
        var bytes = Fixtures.file(Fixtures.twentyRecords)
        bytes[0] = UInt8(ascii: "X")
        #expect(throws: JournalFormatError.notAJournal) { try JournalFormat.decode(bytes) }
        #expect(throws: JournalFormatError.notAJournal) {
            try JournalFormat.decode(Array("hello, this is text\n".utf8))
        }
    }

    @Test func newerVersionIsRefusedWithItsNumber() {
        var bytes = Fixtures.file(Fixtures.twentyRecords)
        bytes[8] = 3
        #expect(throws: JournalFormatError.newerVersion(3)) { try JournalFormat.decode(bytes) }
        #expect(JournalFormatError.newerVersion(3).description.contains("version 3"))
    }

    @Test func versionZeroIsNotAJournal() {
        var bytes = Fixtures.file([])
        bytes[8] = 0
        #expect(throws: JournalFormatError.notAJournal) { try JournalFormat.decode(bytes) }
    }

    /// A crash can stop a write anywhere: every cut inside the last three records keeps exactly the
    /// records wholly before it, and only a cut on a record boundary is clean.
    @Test func truncationAtEveryByteOfTheLastThreeRecords() throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        #expect(frames.last?.upperBound == file.count)
        let boundaries = Set(frames.map(\.lowerBound) + [file.count])
        for cut in frames[records.count - 3].lowerBound...file.count {
            let contents = try JournalFormat.decode(Array(file[..<cut]))
            let whole = frames.filter { $0.upperBound <= cut }.count
            #expect(contents.records == Array(records.prefix(whole)), "cut at \(cut)")
            let validLength = whole == 0 ? JournalFormat.headerSize : frames[whole - 1].upperBound
            #expect(contents.validLength == validLength, "cut at \(cut)")
            if boundaries.contains(cut) {
                #expect(contents.damage == nil, "cut at boundary \(cut)")
            } else {
                #expect(contents.damage?.offset == validLength, "cut at \(cut)")
            }
        }
    }

    @Test func everySingleBitFlipInTheLastThreeRecordsKeepsTheRecordsBefore() throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        for index in (records.count - 3)..<records.count {
            for byte in frames[index] {
                for bit in 0..<8 {
                    var damaged = file
                    damaged[byte] ^= 1 << bit
                    let contents = try JournalFormat.decode(damaged)
                    #expect(contents.records == Array(records.prefix(index)), "bit \(bit) of byte \(byte)")
                    #expect(contents.damage?.offset == frames[index].lowerBound, "bit \(bit) of byte \(byte)")
                }
            }
        }
    }

    @Test func randomBitFlipsAnywhereInTheRecordsKeepTheRecordsBefore() throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        var random = SeededRandom(seed: 0x5EED)
        for _ in 0..<2000 {
            let byte = Int.random(in: JournalFormat.headerSize..<file.count, using: &random)
            let bit = Int.random(in: 0..<8, using: &random)
            var damaged = file
            damaged[byte] ^= 1 << bit
            let index = try #require(frames.firstIndex { $0.contains(byte) })
            let contents = try JournalFormat.decode(damaged)
            #expect(contents.records == Array(records.prefix(index)), "bit \(bit) of byte \(byte)")
            #expect(contents.damage?.offset == frames[index].lowerBound)
        }
    }

    @Test(arguments: [1, 5, 8, 9, 100, 5000])
    func garbageAppendedIsDamageAfterTheLastRecord(garbageLength: Int) throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        var random = SeededRandom(seed: UInt64(garbageLength))
        let garbage = (0..<garbageLength).map { _ in UInt8.random(in: 0...255, using: &random) }
        let contents = try JournalFormat.decode(file + garbage)
        #expect(contents.records == records)
        #expect(contents.validLength == file.count)
        #expect(contents.damage?.offset == file.count)
    }

    @Test func hugeLengthIsDamageNotAnAllocation() throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        let contents = try JournalFormat.decode(file + [0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0, 1])
        #expect(contents.records == records)
        #expect(contents.damage?.reason.contains("length") == true)
    }

    @Test func zeroedPageInTheMiddleKeepsTheRecordsBeforeIt() throws {
        var records = Fixtures.twentyRecords
        while Fixtures.file(records).count < 3 * 4096 { records += Fixtures.twentyRecords }
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        let page = 4096..<8192
        for offset in page { file[offset] = 0 }
        let firstDamaged = try #require(frames.firstIndex { $0.overlaps(page) })
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == Array(records.prefix(firstDamaged)))
        #expect(contents.damage?.offset == frames[firstDamaged].lowerBound)
        #expect(contents.validLength == frames[firstDamaged].lowerBound)
    }

    @Test func unknownTypeWithAValidChecksumIsDamage() throws {
        var frame = JournalFormat.encode([.nextID(3)])
        frame[8] = 99
        // Recompute the CRC so only the type is wrong: the CRC covers the type byte and payload.
        let crc = Self.crc32c(Array(frame[8...]))
        withUnsafeBytes(of: crc.littleEndian) { frame.replaceSubrange(4..<8, with: $0) }
        let contents = try JournalFormat.decode(Fixtures.file([.nextID(2)]) + frame)
        #expect(contents.records == [.nextID(2)])
        #expect(contents.damage?.reason.contains("unknown record type 99") == true)
    }

    @Test func undecodablePayloadWithAValidChecksumIsDamage() throws {
        let payload = Array("{\"not\":\"a job\"}".utf8)
        var frame: [UInt8] = []
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: Self.crc32c([1] + payload).littleEndian) { frame.append(contentsOf: $0) }
        frame += [1] + payload
        let contents = try JournalFormat.decode(Fixtures.file([.nextID(2)]) + frame)
        #expect(contents.records == [.nextID(2)])
        #expect(contents.damage?.reason.contains("does not decode") == true)
    }

    /// Bitwise CRC32C (Castagnoli, reflected 0x82F63B78), independent of the code under test.
    static func crc32c(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }

    @Test func crcIsCRC32CAsDocumented() {
        let frame = JournalFormat.encode([.removed(JobID(12))])
        let stored = UInt32(frame[4]) | UInt32(frame[5]) << 8 | UInt32(frame[6]) << 16 | UInt32(frame[7]) << 24
        #expect(stored == Self.crc32c(Array(frame[8...])))
        #expect(Self.crc32c(Array("123456789".utf8)) == 0xE306_9283)
    }
}
