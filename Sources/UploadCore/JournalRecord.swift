import CShims
import Dispatch
import Foundation
import UploadWire

/// Progress of a job as the server has committed it.
public struct JobProgress: Decodable, Sendable, Equatable {
    public var id: JobID
    public var bytesAcked: Int64
    public var checkpoint: Checkpoint?

    public init(id: JobID, bytesAcked: Int64, checkpoint: Checkpoint?) {
        self.id = id
        self.bytesAcked = bytesAcked
        self.checkpoint = checkpoint
    }
}

/// One entry of the append-only journal. Replaying them in order rebuilds the queue.
public enum JournalRecord: Sendable, Equatable {
    /// A job's full state: written when it is added and at every state change (the last one wins).
    case job(Job)
    /// Bytes committed by the server, written as chunks are acknowledged.
    case progress(JobProgress)
    /// The job was removed and is forgotten.
    case removed(JobID)
    /// The next ID to hand out, so IDs are never reused even after their jobs are compacted away.
    case nextID(UInt64)
    /// A well-formed record this daemon does not understand (written by a newer uploadd): kept
    /// byte for byte, and its job left alone.
    case foreign(ForeignRecord)

    static let jobType: UInt8 = 1

    var typeCode: UInt8 {
        switch self {
        case .job: return Self.jobType
        case .progress: return 2
        case .removed: return 3
        case .nextID: return 4
        case .foreign(let record): return record.type
        }
    }
}

/// A record kept as it was read: its type, its payload, and the job it belongs to when known.
public struct ForeignRecord: Sendable, Equatable {
    public var type: UInt8
    public var payload: [UInt8]
    public var jobID: JobID?
}

/// The journal's on-disk format: a header, then framed records.
///
/// ```
/// header:  "UPLOADD\n" (8 bytes)  version: UInt32 LE
/// record:  length: UInt32 LE  crc32c: UInt32 LE  type: UInt8  payload: length bytes
/// ```
/// The CRC32C covers the type byte and the payload. A record is only valid when it is whole and its
/// checksum matches; replay stops at the first that is not.
///
/// Version 5 payloads are binary with length-prefixed structs (`JournalCodec.swift`). Each bump
/// added fields at the ends of structs that an older daemon would have skipped and then
/// misread the job: version 4 added a job's preparation (a version 3 daemon would upload the
/// unprepared original), version 5 a snapshot's offset in a pack of copies (a version 4 daemon
/// would upload the whole pack). Older versions are still read — 4 and 3 (same codec), 2 (uploadd
/// 0.2, binary without prefixes, `JournalFormat2.swift`) and 1 (uploadd 0.1, JSON) — and the file
/// is then rewritten as version 5. A newer version is refused without touching the file. The
/// README's journal section says when to bump it.
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
    private static func decodePayload(
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

    /// Decodes a whole journal file. Never throws on damage: it returns every record before it and
    /// says where and why it stopped. Throws only when the file is not a journal we can read at all.
    public static func decode(_ bytes: [UInt8]) throws(JournalFormatError) -> JournalContents {
        var records: [JournalRecord] = []
        var contents = try decode(bytes) { records.append($0) }
        contents.records = records
        return contents
    }

    /// Decodes a whole journal file as `decode(_:)` does, handing each record to `each` as it is
    /// read rather than keeping them: replay holds one record at a time, not the whole queue twice.
    /// The contents returned have no records; `recordCount` counts them.
    public static func decode(_ bytes: [UInt8], each: (consuming JournalRecord) -> Void) throws(JournalFormatError)
        -> JournalContents
    {
        if bytes.isEmpty { return JournalContents(records: [], validLength: 0, damage: nil) }
        guard bytes.count >= headerSize else {
            return JournalContents(
                records: [], validLength: 0, damage: JournalDamage(offset: 0, reason: "the header is torn"))
        }
        guard Array(bytes[0..<magic.count]) == magic else { throw .notAJournal }
        let version = readUInt32(bytes, at: magic.count)
        guard version <= Self.version else { throw .newerVersion(version) }
        guard version >= 1 else { throw .notAJournal }

        var count = 0
        var offset = headerSize
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
            func damage(_ reason: String) -> JournalContents {
                JournalContents(
                    records: [], recordCount: count, validLength: offset,
                    damage: JournalDamage(offset: offset, reason: reason), version: version)
            }
            // Frames are found one after another (each says where the next begins); a window of
            // them is then checked and decoded on every core, and handed out in order.
            let stop = findFrames(in: bytes, from: offset, into: &frames)
            var damaged: String?
            decodeFrames(frames, of: bytes, version: version, results: results, sharers: sharers) { frame, decoded in
                switch consume decoded {
                case .record(let record):
                    each(record)
                    count += 1
                    offset = frame.upperBound
                    return true
                case .damaged(let reason):
                    damaged = reason
                    return false
                }
            }
            if let reason = damaged ?? stop { return damage(reason) }
        }
        return JournalContents(records: [], recordCount: count, validLength: offset, damage: nil, version: version)
    }

    /// Records decoded in one window: enough to keep both cores busy, few enough to hold.
    static let decodingWindow = 4096

    /// The frames from `start` on, up to a window of them. Returns why it stopped short of the end
    /// of `bytes`, if it did: a frame that cannot be whole.
    private static func findFrames(in bytes: [UInt8], from start: Int, into frames: inout [Range<Int>]) -> String? {
        frames.removeAll(keepingCapacity: true)
        var offset = start
        while frames.count < decodingWindow && offset < bytes.count {
            guard bytes.count - offset >= frameOverhead else { return "a record header is torn" }
            let length = Int(readUInt32(bytes, at: offset))
            guard length <= maxPayloadSize else { return "a record claims an impossible length \(length)" }
            let end = offset + frameOverhead + length
            guard end <= bytes.count else { return "the last record is torn" }
            frames.append(offset..<end)
            offset = end
        }
        return nil
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

    /// The highest job ID in any whole, checksummed record found anywhere in `bytes` (the part of
    /// a journal after damage). Replay stops at the damage, but IDs seen past it must never be
    /// handed out again.
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
                    switch record {
                    case .job(let job): id = job.id.rawValue
                    case .progress(let progress): id = progress.id.rawValue
                    case .removed(let removed): id = removed.rawValue
                    case .nextID(let next): id = next > 0 ? next - 1 : nil
                    case .foreign(let foreign): id = foreign.jobID?.rawValue
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

    private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}

/// What a journal file holds, up to the first damage.
public struct JournalContents: Sendable {
    /// Every record, in order; empty when they were handed out one by one (`decode(_:each:)`).
    public var records: [JournalRecord]
    /// How many records were read.
    public var recordCount: Int
    /// Bytes from the start of the file that are whole and valid.
    public var validLength: Int
    public var damage: JournalDamage?
    /// The file's format version (an empty file counts as the current one).
    public var version: UInt32 = JournalFormat.version

    public init(
        records: [JournalRecord], recordCount: Int? = nil, validLength: Int, damage: JournalDamage?,
        version: UInt32 = JournalFormat.version
    ) {
        self.records = records
        self.recordCount = recordCount ?? records.count
        self.validLength = validLength
        self.damage = damage
        self.version = version
    }
}

/// Where a journal stopped being readable, and why.
public struct JournalDamage: Sendable, Equatable, Codable {
    public var offset: Int
    public var reason: String
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
