import CShims
import Dispatch
import Foundation
import UploadWire

/// The journal's on-disk format: a header, then framed records.
///
/// ```
/// header:  "UPLOADD\n" (8 bytes)  version: UInt32 LE
/// record:  length: UInt32 LE  crc32c: UInt32 LE  type: UInt8  payload: length bytes
/// ```
/// The CRC32C covers the type byte and the payload. A record is only valid when it is whole and its
/// checksum matches. Every record carries its own checksum, so replay does not stop at damage: it
/// sets the damaged bytes aside and goes on from the next valid record (`JournalResync.swift`).
///
/// Version 5 payloads are binary with length-prefixed structs (`JournalCodec.swift`). Each bump
/// added fields at the ends of structs that an older daemon would have skipped and then
/// misread the job: version 4 added a job's preparation (a version 3 daemon would upload the
/// unprepared original), version 5 a snapshot's offset in a pack of copies (a version 4 daemon
/// would upload the whole pack). Older versions are still read — 4 and 3 (same codec), 2 (uploadd
/// 0.2, binary without prefixes, `JournalFormat2.swift`) and 1 (uploadd 0.1, JSON) — and the file
/// is then rewritten as version 5. A newer version is refused without touching the file.
/// contrib/DESIGN.md ("Journal") says when to bump it.
public enum JournalFormat {
    public static let magic = Array("UPLOADD\n".utf8)
    public static let version: UInt32 = 5
    public static let headerSize = 12
    public static let frameOverhead = 9
    /// Larger lengths can only come from damage: no record is anywhere near this.
    public static let maxPayloadSize = 16 << 20

    public static func header() -> [UInt8] {
        var bytes = magic
        appendUInt32(version, to: &bytes)
        return bytes
    }

    /// Appends one framed record to `buffer`.
    public static func append(_ record: JournalRecord, to buffer: inout [UInt8]) {
        appendFrame(type: record.typeCode, to: &buffer) { record.writePayload(to: &$0) }
    }

    static func appendFrame(type: UInt8, payload: [UInt8], to buffer: inout [UInt8]) {
        appendFrame(type: type, to: &buffer) { $0.writeRaw(payload) }
    }

    /// A frame: the payload's length and checksum, the type, then the payload `writePayload` writes in
    /// place, after room for the length and checksum, which are filled in once it is known.
    private static func appendFrame(
        type: UInt8, to buffer: inout [UInt8], writePayload: (inout BinaryWriter) -> Void
    ) {
        let frameStart = buffer.count
        var writer = BinaryWriter(appending: buffer)
        buffer = []  // the writer's bytes are the only reference: appended to in place
        writer.writeRaw(Self.roomForLengthAndChecksum)
        writer.writeByte(type)
        writePayload(&writer)
        let (length, crc) = writer.bytes.withUnsafeBytes { frame in
            let payload = UnsafeRawBufferPointer(rebasing: frame[(frameStart + 9)...])
            let crc = withUnsafeBytes(of: type) { CShims_crc32c(0, $0.baseAddress, 1) }
            return (UInt32(payload.count), CShims_crc32c(crc, payload.baseAddress, payload.count))
        }
        withUnsafeBytes(of: length.littleEndian) { writer.overwrite(at: frameStart, with: $0) }
        withUnsafeBytes(of: crc.littleEndian) { writer.overwrite(at: frameStart + 4, with: $0) }
        buffer = writer.bytes
    }

    private static let roomForLengthAndChecksum = [UInt8](repeating: 0, count: 8)

    public static func encode(_ records: [JournalRecord]) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(records.count * 512)  // a job's record is a few hundred bytes
        for record in records { append(record, to: &buffer) }
        return buffer
    }

    /// A payload of `version`; format 1 with `formatOne` (one decoder for a whole pass). Nil: a
    /// record type that format did not have (damage in a file no newer daemon writes).
    static func decodePayload(
        type: UInt8, _ payload: UnsafeRawBufferPointer, version: UInt32, formatOne: JSONDecoder?
    )
        throws -> JournalRecord?
    {
        if let formatOne { return try decodeJSONPayload(type: type, Data(payload), decoder: formatOne) }
        var reader = BinaryReader(payload)
        if version == 2 { return try JournalRecord.readFormat2Payload(type: type, from: &reader) }
        return try JournalRecord.readPayload(type: type, from: &reader)
    }

    /// Format 1, read only.
    private static func decodeJSONPayload(type: UInt8, _ payload: Data, decoder: JSONDecoder) throws -> JournalRecord? {
        switch type {
        case 1: return .job(try decoder.decode(Job.self, from: payload))
        case 2: return .progress(try decoder.decode(JobProgress.self, from: payload))
        case 3: return .removed(try decoder.decode(JobID.self, from: payload))
        case 4: return .nextID(try decoder.decode(UInt64.self, from: payload))
        default: return nil
        }
    }

    /// Decodes a whole journal file. Never throws on damage: it returns every intact record, past
    /// any damaged stretch, and says where each stretch is and why. Throws only when the file is not
    /// a journal we can read at all.
    public static func decode(_ bytes: [UInt8]) throws(JournalFormatError) -> JournalContents {
        var records: [JournalRecord] = []
        var contents = try decode(bytes) { records.append($0) }
        contents.records = records
        return contents
    }

    /// Decodes a whole journal file as `decode(_:)` does, handing each record to `each` as it is
    /// read rather than keeping them: replay holds one record at a time, not the whole queue twice.
    /// `onDamage` hears of each damaged region when it is found, before the records after it.
    /// The contents returned have no records; `recordCount` counts them.
    public static func decode(
        _ bytes: [UInt8], each: (consuming JournalRecord) -> Void, onDamage: (JournalDamage) -> Void = { _ in }
    ) throws(JournalFormatError) -> JournalContents {
        if bytes.isEmpty { return JournalContents(records: [], validLength: 0, damaged: []) }
        guard bytes.count >= headerSize else {
            let torn = JournalDamage(
                offset: 0, length: bytes.count, reason: "the header is torn", record: .unknown, isTornTail: true)
            onDamage(torn)
            return JournalContents(records: [], validLength: 0, damaged: [torn])
        }
        guard Array(bytes[0..<magic.count]) == magic else { throw .notAJournal }
        let version = readUInt32(bytes, at: magic.count)
        guard version <= Self.version else { throw .newerVersion(version) }
        guard version >= 1 else { throw .notAJournal }

        var count = 0
        var offset = headerSize
        var damaged: [JournalDamage] = []
        var frames: [Range<Int>] = []
        let results = UnsafeMutablePointer<DecodedFrame>.allocate(capacity: decodingWindow)
        let sharers = UnsafeMutablePointer<StringSharer>.allocate(capacity: Parallel.cores)
        sharers.initialize(repeating: StringSharer(), count: Parallel.cores)
        defer {
            results.deallocate()
            sharers.deinitialize(count: Parallel.cores)
            sharers.deallocate()
        }
        while offset < bytes.count {
            // Frames are found one after another (each says where the next begins); a window of
            // them is then checked and decoded on every core, and handed out in order.
            let stoppedShort = findFrames(in: bytes, from: offset, into: &frames)
            var badRecord: String?
            decodeFrames(frames, of: bytes, version: version, results: results, sharers: sharers) { frame, decoded in
                switch consume decoded {
                case .record(let record):
                    each(record)
                    count += 1
                    offset = frame.upperBound
                    return true
                case .damaged(let reason):
                    badRecord = reason
                    return false
                }
            }
            guard badRecord != nil || stoppedShort else { continue }
            let region = damagedRegion(in: bytes, from: offset, version: version, recordReason: badRecord)
            damaged.append(region)
            onDamage(region)
            offset = region.range.upperBound
        }
        // Whole records up to the end of the file, or up to the damage the file ends with.
        let validLength = damaged.last.flatMap { $0.range.upperBound == bytes.count ? $0.offset : nil } ?? bytes.count
        return JournalContents(
            records: [], recordCount: count, validLength: validLength, damaged: damaged, version: version)
    }

    /// Records decoded in one window: enough to keep both cores busy, few enough to hold.
    static let decodingWindow = 4096

    /// The frames from `start` on, up to a window of them. Returns whether it stopped short of the
    /// end of `bytes` at a frame that cannot be whole (`damagedRegion` says why).
    private static func findFrames(in bytes: [UInt8], from start: Int, into frames: inout [Range<Int>]) -> Bool {
        frames.removeAll(keepingCapacity: true)
        var offset = start
        while frames.count < decodingWindow && offset < bytes.count {
            guard let end = claimedEnd(of: bytes, at: offset), end <= bytes.count else { return true }
            frames.append(offset..<end)
            offset = end
        }
        return false
    }

    /// Where the frame at `offset` ends by its length (maybe past the end of `bytes`); nil when
    /// its header is cut off or its length cannot be.
    static func claimedEnd(of bytes: [UInt8], at offset: Int) -> Int? {
        guard bytes.count - offset >= frameOverhead else { return nil }
        let length = Int(readUInt32(bytes, at: offset))
        guard length <= maxPayloadSize else { return nil }
        return offset + frameOverhead + length
    }

    private enum DecodedFrame {
        case record(JournalRecord)
        case damaged(String)
    }

    /// Each frame's checksum and payload, handed to `deliver` in the order of `frames` until it
    /// returns false. They are decoded on every core when there are enough of them (format 1's
    /// JSON, never large, on one) into `results`, room for a window, and each is moved out to
    /// `deliver`: a job handed over is its only reference, so applying it changes it in place.
    private static func decodeFrames(
        _ frames: [Range<Int>], of bytes: [UInt8], version: UInt32, results: UnsafeMutablePointer<DecodedFrame>,
        sharers: UnsafeMutablePointer<StringSharer>, deliver: (Range<Int>, consuming DecodedFrame) -> Bool
    ) {
        bytes.withUnsafeBytes { file in
            if version < 2 {
                let formatOne = JSONDecoder()
                for frame in frames {
                    let decoded = decodeFrame(
                        frame, of: file, version: version, sharer: &sharers[0], formatOne: formatOne)
                    guard deliver(frame, decoded) else { return }
                }
                return
            }
            let workers = frames.count >= 256 ? Parallel.cores : 1
            let parts = Parallel.split(frames.indices, into: workers)
            let shared = SharedPointers(file: file, results: results, sharers: sharers)
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                for index in parts[worker] {
                    (shared.results + index).initialize(
                        to: decodeFrame(
                            frames[index], of: shared.file, version: version, sharer: &shared.sharers[worker]))
                }
            }
            for index in frames.indices {
                guard deliver(frames[index], (results + index).move()) else {
                    (results + index + 1).deinitialize(count: frames.count - index - 1)
                    return
                }
            }
        }
    }

    /// The journal's bytes, the results and the string sharers, for the workers of `decodeFrames`:
    /// the bytes are only read, each worker writes its own range of results and uses its own
    /// sharer, and `concurrentPerform` returns only when every worker has, before any buffer goes
    /// away.
    private struct SharedPointers: @unchecked Sendable {
        let file: UnsafeRawBufferPointer
        let results: UnsafeMutablePointer<DecodedFrame>
        let sharers: UnsafeMutablePointer<StringSharer>
    }

    private static func decodeFrame(
        _ frame: Range<Int>, of file: UnsafeRawBufferPointer, version: UInt32, sharer: inout StringSharer,
        formatOne: JSONDecoder? = nil
    ) -> DecodedFrame {
        let crc = file.loadUnaligned(fromByteOffset: frame.lowerBound + 4, as: UInt32.self).littleEndian
        let body = UnsafeRawBufferPointer(rebasing: file[(frame.lowerBound + 8)..<frame.upperBound])
        guard CShims_crc32c(0, body.baseAddress, body.count) == crc else {
            return .damaged("a record's checksum does not match")
        }
        do {
            guard
                let record = try decodePayload(
                    type: body[0], UnsafeRawBufferPointer(rebasing: body[1...]), version: version,
                    formatOne: formatOne)
            else { return .damaged("unknown record type \(body[0])") }
            switch consume record {
            case .job(var job):
                sharer.share(&job)
                return .record(.job(job))
            case let other: return .record(other)
            }
        } catch {
            return .damaged("a record does not decode: \(error)")
        }
    }

    /// The highest job ID in any whole, checksummed record found anywhere in `bytes` (a damaged
    /// region of a journal). Replay skips the region, but IDs seen in it must never be handed out
    /// again.
    public static func highestJobID(scanning bytes: ArraySlice<UInt8>, version: UInt32 = JournalFormat.version)
        -> UInt64?
    {
        var highest: UInt64?
        let formatOne = version < 2 ? JSONDecoder() : nil
        var offset = bytes.startIndex
        while offset + frameOverhead <= bytes.endIndex {
            let length = Int(readUInt32(Array(bytes[offset..<offset + 4]), at: 0))
            let end = offset + 9 + length
            if length <= maxPayloadSize, end <= bytes.endIndex {
                let crc = readUInt32(Array(bytes[(offset + 4)..<(offset + 8)]), at: 0)
                let actual = bytes[(offset + 8)..<end].withUnsafeBytes { CShims_crc32c(0, $0.baseAddress, $0.count) }
                if actual == crc,
                    let record = try? bytes[(offset + 9)..<end].withUnsafeBytes({ payload in
                        try decodePayload(type: bytes[offset + 8], payload, version: version, formatOne: formatOne)
                    })
                {
                    let id: UInt64?
                    if case .nextID(let next) = record {
                        id = next > 0 ? next - 1 : nil
                    } else {
                        id = record.jobID?.rawValue
                    }
                    if let id { highest = max(highest ?? 0, id) }
                    offset = end
                    continue
                }
            }
            offset += 1
        }
        return highest
    }

    private static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}

/// What a journal file holds: its intact records, and the damaged regions between or after them.
public struct JournalContents: Sendable {
    /// Every record, in order; empty when they were handed out one by one (`decode(_:each:)`).
    public var records: [JournalRecord]
    /// How many records were read.
    public var recordCount: Int
    /// Bytes from the start of the file up to the end of its last whole record: the file's length,
    /// or where the damage it ends with begins.
    public var validLength: Int
    /// The damaged regions, in the order of the file; empty when the file is whole.
    public var damaged: [JournalDamage]
    /// The file's format version (an empty file counts as the current one).
    public var version: UInt32 = JournalFormat.version

    /// The first damaged region, if any.
    public var damage: JournalDamage? { damaged.first }

    public init(
        records: [JournalRecord], recordCount: Int? = nil, validLength: Int, damaged: [JournalDamage],
        version: UInt32 = JournalFormat.version
    ) {
        self.records = records
        self.recordCount = recordCount ?? records.count
        self.validLength = validLength
        self.damaged = damaged
        self.version = version
    }
}

/// A stretch of a journal that is not whole, valid records, and why.
public struct JournalDamage: Sendable, Equatable {
    public var offset: Int
    public var length: Int
    public var reason: String
    /// Whose record the damaged bytes held, as far as they tell.
    public var record: DamagedRecord
    /// The region runs to the end of the file from a record that is cut off: the write a crash
    /// interrupted, never synced, so nothing acted on it.
    public var isTornTail: Bool = false

    public var range: Range<Int> { offset..<(offset + length) }
}

/// Whose record a damaged region held.
public enum DamagedRecord: Sendable, Equatable {
    /// The region is one record of this job. `certain` when its checksum shows what the record
    /// was (one bit flipped, or only its length damaged); otherwise the ID is read from the
    /// damaged bytes themselves, and may be damaged too.
    case job(JobID, certain: Bool)
    /// The region is one record that belongs to no job (the next ID to hand out).
    case noJob
    /// Several records, or one too damaged to tell whose it was.
    case unknown
}

public enum JournalFormatError: Error, Equatable, CustomStringConvertible {
    case notAJournal
    case newerVersion(UInt32)

    public var description: String {
        switch self {
        case .notAJournal:
            return "the file is not an uploadd journal (its header is wrong); move it away to start with an empty queue"
        case .newerVersion(let version):
            return "the journal has format version \(version), newer than this uploadd understands"
                + " (\(JournalFormat.version)); run the newer uploadd, or move the file away to start empty"
        }
    }
}
