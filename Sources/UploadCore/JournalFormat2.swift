import Foundation
import UploadWire

/// Journal format 2 (uploadd 0.2), read only: binary payloads, field by field, no length prefixes
/// on nested structs. A journal in this format is replayed and rewritten in the current format.
/// Never change a line here: the golden files of Tests/Fixtures/journals/format2 hold the truth.
extension JournalRecord {
    static func readFormat2Payload(type: UInt8, from reader: inout BinaryReader) throws(BinaryDecodingError)
        -> JournalRecord?
    {
        switch type {
        case 1: return .job(try Job(format2: &reader))
        case 2:
            return .progress(
                JobProgress(
                    id: JobID(try reader.readUInt64()), bytesAcked: try reader.readInt64(),
                    checkpoint: try reader.readOptional { (reader) throws(BinaryDecodingError) in
                        try Checkpoint(format2: &reader)
                    }))
        case 3: return .removed(JobID(try reader.readUInt64()))
        case 4: return .nextID(try reader.readUInt64())
        default: return nil
        }
    }
}

extension Job {
    init(format2 reader: inout BinaryReader) throws(BinaryDecodingError) {
        let id = JobID(try reader.readUInt64())
        let spec = try JobSpec(format2: &reader)
        self.init(id: id, spec: spec, createdAt: Date(timeIntervalSinceReferenceDate: 0))
        state = try reader.readEnum(JobState.self)
        resolvedProtocol = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try reader.readEnum(UploadProtocol.self)
        }
        snapshot = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try SourceSnapshot(format2: &reader)
        }
        bytesTotal = try reader.readInt64()
        bytesAcked = try reader.readInt64()
        checkpoint = try reader.readOptional { (reader) throws(BinaryDecodingError) in try Checkpoint(format2: &reader)
        }
        attempts = try reader.readInt()
        failuresWithoutProgress = try reader.readInt()
        nextAttemptAt = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readDate() }
        error = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            JobError(
                code: try reader.readString(), message: try reader.readString(),
                status: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt() })
        }
        result = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            JobResult(
                url: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() },
                status: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt() },
                body: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() })
        }
        createdAt = try reader.readDate()
        updatedAt = try reader.readDate()
        history = try reader.readArray { (reader) throws(BinaryDecodingError) in
            JobEvent(at: try reader.readDate(), message: try reader.readString())
        }
    }
}

extension JobSpec {
    init(format2 reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(source: try reader.readString(), destination: try reader.readString())
        uploadProtocol = try reader.readEnum(UploadProtocol.self)
        headers = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(format2: &reader) }
        fields = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(format2: &reader) }
        user = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        chunkSize = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt64() }
        priority = try reader.readInt()
        snapshot = try reader.readEnum(SnapshotMode.self)
        if let image = try reader.readOptional({ (reader) throws(BinaryDecodingError) in try reader.readString() }) {
            preparation = [PreparationRequest(step: "image", options: image)]
        }
        clientToken = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        metadata = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            let pairs = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(format2: &reader) }
            return Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        }
    }
}

extension KeyValue {
    init(format2 reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(name: try reader.readString(), value: try reader.readString())
    }
}

extension SourceSnapshot {
    init(format2 reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(
            kind: try reader.readEnum(Kind.self), path: try reader.readString(), size: try reader.readInt64(),
            device: try reader.readUInt64(), inode: try reader.readUInt64(),
            modificationTimeNanoseconds: try reader.readInt64())
    }
}
