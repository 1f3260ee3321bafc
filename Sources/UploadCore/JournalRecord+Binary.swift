import Foundation

/// The binary payloads of journal format 2, field by field (see `BinaryWriter` for the rules).
/// Changing the order or meaning of a field here needs a new format version; new fields go last.
extension JournalRecord {
    func writePayload(to writer: inout BinaryWriter) {
        switch self {
        case .job(let job): job.write(to: &writer)
        case .progress(let progress):
            writer.write(progress.id.rawValue)
            writer.write(progress.bytesAcked)
            writer.write(progress.checkpoint) { $1.write(to: &$0) }
        case .removed(let id): writer.write(id.rawValue)
        case .nextID(let next): writer.write(next)
        }
    }

    static func readPayload(type: UInt8, from reader: inout BinaryReader) throws(BinaryDecodingError) -> JournalRecord? {
        switch type {
        case 1: return .job(try Job(reading: &reader))
        case 2:
            return .progress(
                JobProgress(
                    id: JobID(try reader.readUInt64()), bytesAcked: try reader.readInt64(),
                    checkpoint: try reader.readOptional { (reader) throws(BinaryDecodingError) in try Checkpoint(reading: &reader) }))
        case 3: return .removed(JobID(try reader.readUInt64()))
        case 4: return .nextID(try reader.readUInt64())
        default: return nil
        }
    }
}

extension Job {
    func write(to writer: inout BinaryWriter) {
        writer.write(id.rawValue)
        spec.write(to: &writer)
        writer.write(state.rawValue)
        writer.write(resolvedProtocol?.rawValue) { $0.write($1) }
        writer.write(snapshot) { $1.write(to: &$0) }
        writer.write(bytesTotal)
        writer.write(bytesAcked)
        writer.write(checkpoint) { $1.write(to: &$0) }
        writer.write(attempts)
        writer.write(failuresWithoutProgress)
        writer.write(nextAttemptAt) { $0.write($1) }
        writer.write(error) { writer, error in
            writer.write(error.code)
            writer.write(error.message)
            writer.write(error.status) { $0.write($1) }
        }
        writer.write(result) { writer, result in
            writer.write(result.url) { $0.write($1) }
            writer.write(result.status) { $0.write($1) }
            writer.write(result.body) { $0.write($1) }
        }
        writer.write(createdAt)
        writer.write(updatedAt)
        writer.write(history) { writer, event in
            writer.write(event.at)
            writer.write(event.message)
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        let id = JobID(try reader.readUInt64())
        let spec = try JobSpec(reading: &reader)
        self.init(id: id, spec: spec, createdAt: Date(timeIntervalSinceReferenceDate: 0))
        state = try reader.readEnum(JobState.self)
        resolvedProtocol = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readEnum(UploadProtocol.self) }
        snapshot = try reader.readOptional { (reader) throws(BinaryDecodingError) in try SourceSnapshot(reading: &reader) }
        bytesTotal = try reader.readInt64()
        bytesAcked = try reader.readInt64()
        checkpoint = try reader.readOptional { (reader) throws(BinaryDecodingError) in try Checkpoint(reading: &reader) }
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
    func write(to writer: inout BinaryWriter) {
        writer.write(source)
        writer.write(destination)
        writer.write(uploadProtocol.rawValue)
        writer.write(headers) { $1.write(to: &$0) }
        writer.write(fields) { $1.write(to: &$0) }
        writer.write(user) { $0.write($1) }
        writer.write(chunkSize) { $0.write($1) }
        writer.write(priority)
        writer.write(snapshot.rawValue)
        writer.write(image) { $0.write($1) }
        writer.write(clientToken) { $0.write($1) }
        // Sorted, so the same job always encodes to the same bytes.
        writer.write(metadata.map { $0.sorted { $0.key < $1.key }.map { KeyValue(name: $0.key, value: $0.value) } }) { writer, pairs in
            writer.write(pairs) { $1.write(to: &$0) }
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(source: try reader.readString(), destination: try reader.readString())
        uploadProtocol = try reader.readEnum(UploadProtocol.self)
        headers = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
        fields = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
        user = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        chunkSize = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt64() }
        priority = try reader.readInt()
        snapshot = try reader.readEnum(SnapshotMode.self)
        image = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        clientToken = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        metadata = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            let pairs = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
            return Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        }
    }
}

extension KeyValue {
    func write(to writer: inout BinaryWriter) {
        writer.write(name)
        writer.write(value)
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(name: try reader.readString(), value: try reader.readString())
    }
}

extension SourceSnapshot {
    func write(to writer: inout BinaryWriter) {
        writer.write(kind.rawValue)
        writer.write(path)
        writer.write(size)
        writer.write(device)
        writer.write(inode)
        writer.write(modificationTimeNanoseconds)
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(
            kind: try reader.readEnum(Kind.self), path: try reader.readString(), size: try reader.readInt64(),
            device: try reader.readUInt64(), inode: try reader.readUInt64(), modificationTimeNanoseconds: try reader.readInt64())
    }
}

extension Checkpoint {
    func write(to writer: inout BinaryWriter) {
        switch self {
        case .tus(let uploadURL, let expires):
            writer.write("tus")
            writer.write(uploadURL)
            writer.write(expires) { $0.write($1) }
        case .s3(let uploadID, let key, let partSize):
            writer.write("s3")
            writer.write(uploadID)
            writer.write(key)
            writer.write(partSize)
        case .chunked(let upToken, let blockSize, let blocksAcknowledged):
            writer.write("chunked")
            writer.write(upToken)
            writer.write(blockSize)
            writer.write(blocksAcknowledged)
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        switch try reader.readString() {
        case "tus":
            self = .tus(
                uploadURL: try reader.readString(),
                expires: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() })
        case "s3":
            self = .s3(uploadID: try reader.readString(), key: try reader.readString(), partSize: try reader.readInt64())
        case "chunked":
            self = .chunked(upToken: try reader.readString(), blockSize: try reader.readInt64(), blocksAcknowledged: try reader.readInt64())
        case let other:
            throw BinaryDecodingError(description: "unknown checkpoint kind '\(other)'")
        }
    }
}
