import Foundation
import TestSupport
import Testing
import UploadWire

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
        #expect(JournalFormat.header() == Array("UPLOADD\n".utf8) + [5, 0, 0, 0])
    }

    @Test func theCurrentFormatIsSmallerThanTheJSONOfFormatOne() throws {
        let url = GoldenJournalTests.fixtures.appendingPathComponent("format1/journal")
        let formatOne = [UInt8](try Data(contentsOf: url))
        var state = JournalState()
        for record in try JournalFormat.decode(formatOne).records { state.apply(record) }
        // The compacted state of the same jobs, in both formats: the JSON one is over twice as big.
        let compactedOne = [UInt8](
            try Data(contentsOf: GoldenJournalTests.fixtures.appendingPathComponent("format1/compacted/journal")))
        #expect(Fixtures.file(state.compactedRecords()).count * 2 < compactedOne.count)
    }

    @Test func idsPastDamageAreFoundInEveryFormat() throws {
        for (folder, version) in GoldenJournalTests.files {
            let (bytes, expected) = try GoldenJournalTests.load(folder)
            let highest = try #require(expected["next_id"] as? Int) - 1
            let found = JournalFormat.highestJobID(scanning: bytes[JournalFormat.headerSize...], version: version)
            #expect(found == UInt64(highest), "\(folder)")
        }
    }

    @Test func everyCutOfABinaryPayloadIsReportedNotTrapped() {
        for record in Fixtures.everyRecordKind {
            var writer = BinaryWriter()
            record.writePayload(to: &writer)
            let payload = writer.bytes
            // Fields added after format 3's first release may be missing (an older writer): a cut
            // that removes only them reads as the record with their defaults, by design.
            var laterFields = 0
            // (failingSince, then format 4's prepared file and rank, nil in these records, and
            // hookPending and revision, whose absence reads as false and 0).
            if case .job(let job) = record {
                laterFields =
                    (job.failingSince == nil ? 1 : 9) + 2 + (job.revision == 0 ? (job.hookPending ? 1 : 2) : 0)
            }
            for length in 0..<(payload.count - laterFields) {
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
        bytes[8] = 6
        #expect(throws: JournalFormatError.newerVersion(6)) { try JournalFormat.decode(bytes) }
        #expect(JournalFormatError.newerVersion(6).description.contains("version 6"))
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

    // MARK: - Damage costs only the damaged records

    /// What a journal of `records` with the records at `damaged` hit must decode to: every other
    /// record, in order.
    static func records(_ records: [JournalRecord], without damaged: Set<Int>) -> [JournalRecord] {
        records.indices.filter { !damaged.contains($0) }.map { records[$0] }
    }

    /// Whose record the frame of `record` is, as a region holding it alone reports it.
    static func owner(of record: JournalRecord) -> DamagedRecord {
        record.jobID.map { .job($0, certain: true) } ?? .noJob
    }

    /// One flipped bit in any byte of a record's header (length, checksum, type) and in the first,
    /// middle and last bytes of its payload, in every record: every other record is delivered, and
    /// the one damaged region is exactly that record, known by its checksum. A length made longer
    /// in the last record runs past the end of the file: a torn tail, as a crash leaves it.
    @Test func aFlippedBitAnywhereInARecordCostsOnlyThatRecord() throws {
        let records = Fixtures.twentyRecords
        let file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        var cases = 0
        for (index, frame) in frames.enumerated() {
            let payload = frame.lowerBound + JournalFormat.frameOverhead
            for byte in Array(frame.lowerBound..<payload) + [
                payload, (payload + frame.upperBound) / 2, frame.upperBound - 1,
            ] {
                for bit in 0..<8 {
                    var damaged = file
                    damaged[byte] ^= 1 << bit
                    let what = "bit \(bit) of byte \(byte - frame.lowerBound) of record \(index)"
                    let contents = try JournalFormat.decode(damaged)
                    #expect(contents.records == Self.records(records, without: [index]), "\(what)")
                    #expect(contents.damaged.count == 1, "\(what): \(contents.damaged)")
                    let region = try #require(contents.damage, "\(what)")
                    #expect(region.range == frame, "\(what): \(region)")
                    if region.isTornTail {
                        #expect(index == frames.count - 1 && byte < frame.lowerBound + 4, "\(what): \(region)")
                    } else {
                        #expect(region.record == Self.owner(of: records[index]), "\(what): \(region)")
                    }
                    cases += 1
                }
            }
        }
        #expect(cases > 1000)
    }

    @Test func randomBitFlipsAnywhereInTheRecordsCostOnlyTheirRecord() throws {
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
            #expect(contents.records == Self.records(records, without: [index]), "bit \(bit) of byte \(byte)")
            #expect(contents.damage?.range == frames[index], "bit \(bit) of byte \(byte)")
        }
    }

    /// Two records damaged far apart: two regions, each known, and everything else delivered.
    @Test func twoDamagedRegionsAreEachSetAside() throws {
        let records = Fixtures.twentyRecords
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        file[frames[4].lowerBound + 20] ^= 0x40  // a job's record
        file[frames[12].lowerBound + 2] ^= 0x01  // the length of a removal
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == Self.records(records, without: [4, 12]))
        #expect(contents.damaged.map(\.range) == [frames[4], frames[12]])
        #expect(contents.damaged.map(\.record) == [Self.owner(of: records[4]), Self.owner(of: records[12])])
        #expect(contents.validLength == file.count)
    }

    /// Damage in one record and a torn last record: two regions, the second a torn tail.
    @Test func damageInTheMiddleAndATornTail() throws {
        let records = Fixtures.twentyRecords
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        file[frames[6].lowerBound + 30] ^= 0x02
        file.removeLast(3)
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == Self.records(records, without: [6, records.count - 1]))
        #expect(contents.damaged.count == 2)
        #expect(contents.damaged.last?.isTornTail == true)
        #expect(contents.damaged.last?.reason == "the last record is torn")
        #expect(contents.validLength == frames[records.count - 1].lowerBound)
    }

    /// Damaged bytes that look like frames do not end the damage: a length that leads nowhere,
    /// and even a whole record with a right checksum, when the bytes after it are no record.
    @Test func garbageThatLooksLikeAFrameIsNotTakenForOne() throws {
        let records = Fixtures.twentyRecords
        let frames = Fixtures.frames(of: records)
        let lone = JournalFormat.encode([.nextID(77)])
        let garbage = [5, 0, 0, 0, 0xAA, 0xAA, 0xAA, 0xAA, 1, 0xEE, 0xEE] + lone + [UInt8](repeating: 0xEE, count: 20)
        let file =
            Array(Fixtures.file(records)[..<frames[8].lowerBound]) + garbage
            + Array(Fixtures.file(records)[frames[8].lowerBound...])
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == records)
        #expect(contents.damaged.count == 1)
        #expect(contents.damage?.range == frames[8].lowerBound..<(frames[8].lowerBound + garbage.count))
        #expect(contents.damage?.record == .unknown)
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

    /// A lost sector: 4 KiB of zeros cost the records in it, not those after it.
    @Test func aZeroedPageCostsOnlyTheRecordsInIt() throws {
        var records = Fixtures.twentyRecords
        while Fixtures.file(records).count < 3 * 4096 { records += Fixtures.twentyRecords }
        var file = Fixtures.file(records)
        let frames = Fixtures.frames(of: records)
        let page = 4096..<8192
        for offset in page { file[offset] = 0 }
        let hit = Set(frames.indices.filter { frames[$0].overlaps(page) })
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == Self.records(records, without: hit))
        #expect(contents.damaged.count == 1)
        #expect(contents.damage?.range == frames[hit.min()!].lowerBound..<frames[hit.max()!].upperBound)
        #expect(contents.damage?.record == .unknown)
        #expect(contents.validLength == file.count)
    }

    @Test func anUnknownRecordTypeOfANewerDaemonIsKeptNotDamage() throws {
        let frame = Self.frame(type: 99, payload: [7, 7, 7])
        let contents = try JournalFormat.decode(
            Fixtures.file([.nextID(2)]) + frame + JournalFormat.encode([.nextID(5)]))
        #expect(contents.damage == nil)
        #expect(
            contents.records == [
                .nextID(2), .foreign(ForeignRecord(type: 99, payload: [7, 7, 7], jobID: nil)), .nextID(5),
            ])
        var state = JournalState()
        for record in contents.records { state.apply(record) }
        // Compaction writes it back as it was.
        #expect(JournalFormat.encode(state.compactedRecords()).suffix(frame.count) == ArraySlice(frame))
    }

    @Test func inAFormatTwoFileAnUnknownRecordTypeIsStillDamage() throws {
        var file = JournalFormat.magic + [2, 0, 0, 0]
        file +=
            Self.frame(type: 4, payload: [2]) + Self.frame(type: 99, payload: [1]) + Self.frame(type: 4, payload: [3])
        let contents = try JournalFormat.decode(file)
        #expect(contents.records == [.nextID(2), .nextID(3)])
        #expect(contents.damage?.reason.contains("unknown record type 99") == true)
    }

    /// A job record naming a protocol this daemon does not know (added by a newer uploadd) is kept
    /// byte for byte with its progress, its job is left alone, and its ID stays taken.
    @Test func aJobOfANewerProtocolIsKeptAsItIsAndLeftAlone() throws {
        var job = Fixtures.job(5)
        job.resolvedProtocol = .tus
        var writer = BinaryWriter()
        JournalRecord.job(job).writePayload(to: &writer)
        // Rename the protocol inside the payload, as a newer daemon would have written it.
        let payload = Self.replacing(Array("tus".utf8), with: Array("xyz".utf8), in: writer.bytes)
        let progress = JobProgress(id: job.id, bytesAcked: 9, checkpoint: nil)
        let records = [JournalRecord.job(Fixtures.job(4))]
        let file =
            Fixtures.file(records) + Self.frame(type: 1, payload: payload) + JournalFormat.encode([.progress(progress)])
        let contents = try JournalFormat.decode(file)
        #expect(contents.damage == nil)
        #expect(contents.records.count == 3)
        #expect(contents.records[1] == .foreign(ForeignRecord(type: 1, payload: payload, jobID: job.id)))
        var state = JournalState()
        for record in contents.records { state.apply(record) }
        #expect(state.jobs.keys.sorted() == [JobID(4)])
        #expect(state.foreignJobs[job.id]?.count == 2)
        #expect(state.nextID == 6)
        // Compacted and read again: still there, byte for byte, with its progress.
        let again = try JournalFormat.decode(Fixtures.file(state.compactedRecords()))
        var reread = JournalState()
        for record in again.records { reread.apply(record) }
        #expect(reread.foreignJobs == state.foreignJobs)
        #expect(reread.jobs == state.jobs)
    }

    /// Format 4's additions, a job's preparation and what it made, come back as written.
    @Test func aJobWithItsPreparationAndThePreparedFileRoundTrips() throws {
        var job = Fixtures.job(2)
        job.spec.preparation = [
            PreparationRequest(step: "image", options: "max=2048,quality=75"),
            PreparationRequest(step: "other", options: ""),
        ]
        job.prepared = PreparedFile(
            path: "/cache/2.prepared", size: 301_234, sha256: String(repeating: "ab", count: 32), fileName: "IMG_1.jpg",
            contentType: "image/jpeg", details: [KeyValue(name: "width", value: "2048")])
        let contents = try JournalFormat.decode(Fixtures.file([.job(job)]))
        #expect(contents.damage == nil)
        #expect(contents.records == [.job(job)])
    }

    /// A format 3 file (no preparation fields) reads with the defaults; the version says it is 3, so
    /// the daemon rewrites it as 4 (a format 3 daemon must never meet a job it would misread).
    @Test func aFormatThreeFileReadsWithNoPreparation() throws {
        let job = Fixtures.job(6)
        var file = JournalFormat.magic + [3, 0, 0, 0] + JournalFormat.encode([.job(job)])
        let contents = try JournalFormat.decode(file)
        #expect(contents.version == 3)
        #expect(contents.records == [.job(job)])
        file[JournalFormat.magic.count] = 6
        #expect(throws: JournalFormatError.newerVersion(6)) { try JournalFormat.decode(file) }
    }

    /// The journal fuzzer's seed of 302 frames (made by hand, `Tests/Fuzz/Corpus/journal`) is a
    /// whole journal of the current format: mutations of it reach the decoder's parallel windows
    /// (256 frames and more), which the other seeds are too small for. Not many more: a seed of
    /// 1,402 frames slowed the fuzzer to 1,041 inputs in 20 s, near the 1,000 `make test` asks for.
    @Test func theFuzzSeedOfManyFramesDecodesWhole() throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/Corpus/journal/format5-302-frames")
        let contents = try JournalFormat.decode([UInt8](try Data(contentsOf: seed)))
        #expect(contents.version == JournalFormat.version)
        #expect(contents.damage == nil)
        #expect(contents.records.count == 302)
        #expect(contents.records.first == .nextID(1_000))
        #expect(contents.records[1] == .progress(JobProgress(id: JobID(1), bytesAcked: 100, checkpoint: nil)))
        #expect(contents.records[2] == .removed(JobID(1)))
        guard case .foreign(let future)? = contents.records.last else {
            Issue.record("the last record is a foreign one")
            return
        }
        #expect(future.type == 9)
    }

    /// Format 5 added a snapshot's offset in a pack. A format 4 file has none: its copies are
    /// whole files, and it reads so. A packed snapshot comes back with its offset.
    @Test func aPackOffsetRoundTripsAndFormatFourHasNone() throws {
        var whole = Fixtures.job(6)
        whole.snapshot = SourceSnapshot(
            kind: .copy, path: "/cache/snapshots/6", size: 100, device: 1, inode: 2, modificationTimeNanoseconds: 3)
        let formatFour = JournalFormat.magic + [4, 0, 0, 0] + JournalFormat.encode([.job(whole)])
        let four = try JournalFormat.decode(formatFour)
        #expect(four.version == 4)
        #expect(four.records == [.job(whole)])
        guard case .job(let read) = four.records.first else { return }
        #expect(read.snapshot?.isPacked == false)
        #expect(read.snapshot?.start == 0)

        var packed = Fixtures.job(7)
        packed.snapshot = SourceSnapshot(
            kind: .copy, path: "/cache/snapshots/pack-6", size: 100, device: 1, inode: 2, modificationTimeNanoseconds: 3
        )
        packed.snapshot?.packOffset = 65_536
        packed.snapshot?.cachedCopy = FileIdentity(inode: 9, modificationTimeNanoseconds: 10)
        let contents = try JournalFormat.decode(JournalFormat.header() + JournalFormat.encode([.job(packed)]))
        #expect(contents.version == 5)
        #expect(contents.records == [.job(packed)])
        guard case .job(let back) = contents.records.first else { return }
        #expect(back.snapshot?.start == 65_536)
        #expect(back.snapshot?.isPacked == true)
    }

    /// A checkpoint kind this daemon has never heard of (a newer uploadd's protocol changed its
    /// checkpoint) is neither damage nor a reason to drop the job: it is carried through replay
    /// and compaction byte for byte, and only its protocol ever reads it.
    @Test func aCheckpointOfAnUnknownKindIsKeptByteForByte() throws {
        var job = Fixtures.job(3)
        job.checkpoint = Checkpoint(kind: "tus-v2", payload: [0, 1, 2, 250, 251])
        let progress = JobProgress(
            id: job.id, bytesAcked: 7, checkpoint: Checkpoint(kind: "tus-v2", payload: Array("later".utf8)))
        let file = Fixtures.file([.job(job), .progress(progress)])
        let contents = try JournalFormat.decode(file)
        #expect(contents.damage == nil)
        #expect(contents.records == [.job(job), .progress(progress)])
        var state = JournalState()
        for record in contents.records { state.apply(record) }
        #expect(state.jobs[job.id]?.checkpoint == progress.checkpoint)
        let again = try JournalFormat.decode(Fixtures.file(state.compactedRecords()))
        var reread = JournalState()
        for record in again.records { reread.apply(record) }
        #expect(reread.jobs == state.jobs)
    }

    /// A message with fields a newer writer added at its end reads as before: the extra bytes are skipped.
    @Test func unknownTrailingFieldsOfANestedMessageAreSkipped() throws {
        var writer = BinaryWriter()
        writer.writeMessage { inner in
            inner.write("name")
            inner.write("value")
            inner.write(UInt64(12345))  // a field this reader does not know
            inner.write("more")
        }
        writer.write("after")
        let bytes = writer.bytes
        let (pair, after) = try bytes.withUnsafeBytes { raw in
            var reader = BinaryReader(raw)
            return (try KeyValue(reading: &reader), try reader.readString())
        }
        #expect(pair == KeyValue(name: "name", value: "value"))
        #expect(after == "after")
    }

    static func frame(type: UInt8, payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = []
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: crc32c([type] + payload).littleEndian) { frame.append(contentsOf: $0) }
        return frame + [type] + payload
    }

    static func replacing(_ old: [UInt8], with new: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        var index = 0
        while index + old.count <= result.count {
            if Array(result[index..<(index + old.count)]) == old {
                result.replaceSubrange(index..<(index + old.count), with: new)
                index += new.count
            } else {
                index += 1
            }
        }
        return result
    }

    @Test func undecodablePayloadWithAValidChecksumIsDamage() throws {
        let payload = Array("{\"not\":\"a job\"}".utf8)
        var frame: [UInt8] = []
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: Self.crc32c([1] + payload).littleEndian) { frame.append(contentsOf: $0) }
        frame += [1] + payload
        let contents = try JournalFormat.decode(
            Fixtures.file([.nextID(2)]) + frame + JournalFormat.encode([.nextID(3)]))
        #expect(contents.records == [.nextID(2), .nextID(3)])
        #expect(contents.damage?.reason.contains("does not decode") == true)
        #expect(contents.damage?.length == frame.count)
    }

    /// A CRC is linear: one flipped bit anywhere in a body is found from the checksum and put back.
    @Test func oneFlippedBitIsFoundFromTheChecksum() {
        let body = [UInt8(1)] + Array("a record's payload, long enough to have many bits".utf8)
        let checksum = Self.crc32c(body)
        for byte in body.indices {
            for bit in 0..<8 {
                var damaged = body
                damaged[byte] ^= 1 << bit
                #expect(JournalFormat.restoreOneBit(&damaged, checksum: checksum), "bit \(bit) of byte \(byte)")
                #expect(damaged == body, "bit \(bit) of byte \(byte)")
            }
        }
        var twice = body
        twice[3] ^= 1
        twice[9] ^= 4
        #expect(!JournalFormat.restoreOneBit(&twice, checksum: checksum), "two flipped bits are not one")
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
