import Foundation
import UploadWire

/// The binary payloads of journal formats 3 to 5 (the current one), field by field (see
/// `BinaryWriter` for the encoding; contrib/DESIGN.md, "Journal", for what each format added).
///
/// Rules that keep every daemon, older or newer, able to share a journal:
/// - every nested struct is a message (length-prefixed), so a field can be added at the end of
///   any struct; readers skip what they do not know and give a missing field its default
///   (`readIfPresent`);
/// - enum values are written by name; a record with a name this daemon does not know (a protocol
///   or state added later) is kept byte for byte as `.foreign` and its job left alone, never
///   counted as damage;
/// - anything an older reader could misread (a field whose absence changes meaning, a new record
///   type the queue depends on) needs a new format version, which older daemons refuse.
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
        case .folderFiles(let record): record.write(to: &writer)
        case .foreign(let record): writer.writeRaw(record.payload)
        }
    }

    /// A format 3 payload. A record this daemon cannot fully understand but that is well formed
    /// comes back as `.foreign`; only malformed bytes throw.
    static func readPayload(type: UInt8, from reader: inout BinaryReader) throws(BinaryDecodingError) -> JournalRecord {
        let start = reader  // a copy of the position, for the bytes of a record kept as it is
        do {
            switch type {
            case 1: return .job(try Job(reading: &reader))
            case 2:
                return .progress(
                    JobProgress(
                        id: JobID(try reader.readUInt64()), bytesAcked: try reader.readInt64(),
                        checkpoint: try reader.readOptional { (reader) throws(BinaryDecodingError) in
                            try Checkpoint(reading: &reader)
                        }))
            case 3: return .removed(JobID(try reader.readUInt64()))
            case 4: return .nextID(try reader.readUInt64())
            case 5: return .folderFiles(try FolderLedgerRecord(reading: &reader))
            default: return .foreign(ForeignRecord(type: type, payload: start.remaining, jobID: nil))
            }
        } catch  where error.isUnknownValue {
            // Job and progress records start with the job's ID: keep them with their job. Others
            // (a folder's ledger) belong to no job.
            guard type == 1 || type == 2 else {
                return .foreign(ForeignRecord(type: type, payload: start.remaining, jobID: nil))
            }
            var idReader = start
            let id = try? idReader.readUInt64()
            return .foreign(ForeignRecord(type: type, payload: start.remaining, jobID: id.map { JobID($0) }))
        }
    }
}

extension FolderLedgerRecord {
    // A state named later makes the whole record `.foreign` (kept, and read by the daemon that
    // wrote it): entries are not dropped one by one.
    func write(to writer: inout BinaryWriter) {
        writer.write(folder)
        writer.write(files) { writer, file in
            writer.writeMessage { writer in
                writer.write(file.key.device)
                writer.write(file.key.inode)
                writer.write(file.path)
                writer.write(file.size)
                writer.write(file.modifiedNanoseconds)
                writer.write(file.state.rawValue)
                writer.write(file.job?.rawValue) { $0.write($1) }
                if let sha256 = file.sha256 { writer.write(sha256) }  // added later: only when set
            }
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        folder = try reader.readString()
        files = try reader.readArray { (reader) throws(BinaryDecodingError) in
            try reader.readMessage { (reader) throws(BinaryDecodingError) in
                FolderFile(
                    key: FolderFileKey(device: try reader.readUInt64(), inode: try reader.readUInt64()),
                    path: try reader.readString(), size: try reader.readInt64(),
                    modifiedNanoseconds: try reader.readInt64(), state: try reader.readEnum(FolderFileState.self),
                    job: try reader.readOptional { (reader) throws(BinaryDecodingError) in
                        JobID(try reader.readUInt64())
                    },
                    sha256: try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
                        try reader.readString()
                    }
                )
            }
        }
    }
}

extension Job {
    func write(to writer: inout BinaryWriter) {
        writer.write(id.rawValue)
        writer.writeMessage { spec.write(to: &$0) }
        writer.write(state.rawValue)
        writer.write(resolvedProtocol?.rawValue) { $0.write($1) }
        // As kept (an empty path where it is the source's), so that no path is made to be written.
        writer.write(storage.fields.snapshot) { $1.write(to: &$0, sourceOf: spec) }
        writer.write(bytesTotal)
        writer.write(bytesAcked)
        writer.write(checkpoint) { $1.write(to: &$0) }
        writer.write(attempts)
        writer.write(failuresWithoutProgress)
        writer.write(nextAttemptAt) { $0.write($1) }
        writer.write(error) { writer, error in
            writer.writeMessage { writer in
                writer.write(error.code)
                writer.write(error.message)
                writer.write(error.status) { $0.write($1) }
            }
        }
        writer.write(result) { writer, result in
            writer.writeMessage { writer in
                writer.write(result.url) { $0.write($1) }
                writer.write(result.status) { $0.write($1) }
                writer.write(result.body) { $0.write($1) }
            }
        }
        writer.write(createdAt)
        writer.write(updatedAt)
        writer.write(history) { writer, event in
            writer.writeMessage { writer in
                writer.write(event.at)
                writer.write(event.message)
            }
        }
        writer.write(crashes)
        // Added in 0.3 after the first format 3 fields: read with `readIfPresent`. New fields go below.
        writer.write(failingSince) { $0.write($1) }
        // Format 4.
        writer.write(prepared) { $1.write(to: &$0) }
        writer.write(rank) { $0.write($1) }
        writer.write(hookPending)
        writer.write(revision)
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        let id = JobID(try reader.readUInt64())
        let spec = try reader.readMessage { (reader) throws(BinaryDecodingError) in try JobSpec(reading: &reader) }
        self.init(id: id, spec: spec, createdAt: Date(timeIntervalSinceReferenceDate: 0))
        state = try reader.readEnum(JobState.self)
        resolvedProtocol = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try reader.readEnum(UploadProtocol.self)
        }
        snapshot = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try SourceSnapshot(reading: &reader)
        }
        bytesTotal = try reader.readInt64()
        bytesAcked = try reader.readInt64()
        let checkpoint = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try Checkpoint(reading: &reader)
        }
        attempts = try reader.readInt()
        failuresWithoutProgress = try reader.readInt()
        let nextAttemptAt = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readDate() }
        let error = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try reader.readMessage { (reader) throws(BinaryDecodingError) in
                JobError(
                    code: try reader.readString(), message: try reader.readString(),
                    status: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt() })
            }
        }
        let result = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            try reader.readMessage { (reader) throws(BinaryDecodingError) in
                JobResult(
                    url: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() },
                    status: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt() },
                    body: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() })
            }
        }
        createdAt = try reader.readDate()
        updatedAt = try reader.readDate()
        history = try reader.readArray { (reader) throws(BinaryDecodingError) in
            try reader.readMessage { (reader) throws(BinaryDecodingError) in
                JobEvent(at: try reader.readDate(), message: try reader.readString())
            }
        }
        crashes = try reader.readInt()
        let failingSince = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readDate() }
        }
        let prepared = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try PreparedFile(reading: &reader) }
        }
        let rank = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt64() }
        }
        setRareFields(
            checkpoint: checkpoint, nextAttemptAt: nextAttemptAt, error: error, result: result,
            failingSince: failingSince, prepared: prepared, rank: rank)
        hookPending = try reader.readIfPresent(false) { (reader) throws(BinaryDecodingError) in try reader.readBool() }
        revision = try reader.readIfPresent(0) { (reader) throws(BinaryDecodingError) in try reader.readUInt64() }
    }
}

extension JobSpec {
    /// `source`, written from its two parts.
    func writeSource(to writer: inout BinaryWriter) {
        writer.write(joining: options.box?.value.sourceFolder ?? "", sourceName)
    }

    func write(to writer: inout BinaryWriter) {
        writeSource(to: &writer)
        writer.write(destination)
        writer.write(uploadProtocol.rawValue)
        writer.write(headers) { $1.write(to: &$0) }
        writer.write(fields) { $1.write(to: &$0) }
        writer.write(user) { $0.write($1) }
        writer.write(chunkSize) { $0.write($1) }
        writer.write(priority)
        writer.write(snapshot.rawValue)
        writer.write(nil as String?) { $0.write($1) }  // format 3's `image`, never set: see `preparation`
        writer.write(clientToken) { $0.write($1) }
        // Sorted, so the same job always encodes to the same bytes.
        writer.write(metadata.map { $0.sorted { $0.key < $1.key }.map { KeyValue(name: $0.key, value: $0.value) } }) {
            writer, pairs in writer.write(pairs) { $1.write(to: &$0) }
        }
        writer.write(umask.map(UInt64.init)) { $0.write($1) }
        // Format 4.
        writer.write(preparation) { writer, request in
            writer.writeMessage { writer in
                writer.write(request.step)
                writer.write(request.options)
            }
        }
        writer.write(batch.map(\.rawValue)) { $0.write($1) }
        // Format 5, added without a bump: only when set (every other job keeps the bytes format 5
        // wrote). A daemon that predates it sends such a job's file in the part the remote names
        // (or `file`): to the same URL, with the same bytes and credentials, where the server
        // refuses the form (its field is missing) or files it as any part. Not worth making every
        // journal unreadable to older daemons, as a bump does. A field added after it writes it
        // always (nil or not) first.
        if fileField != nil || folder != nil { writer.write(fileField as String?) { $0.write($1) } }
        // Added the same way, for a watched folder's jobs. A daemon that predates it uploads the
        // job as any other; when it rewrites the job, the folder is lost, and a later daemon takes
        // the file again if its ledger has no entry for it.
        if folder != nil || folderAfter != nil { writer.write(folder as String?) { $0.write($1) } }
        // And `after` of its rule, when it is not `keep`. A daemon that predates it keeps the file.
        if let folderAfter { writer.write(folderAfter as String?) { $0.write($1) } }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self.init(source: try reader.readString(), destination: try reader.readString())
        // The shared options are gathered first and set at once: one box, not one per field.
        var options = self.options.value
        uploadProtocol = try reader.readEnum(UploadProtocol.self)
        options.headers = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader)
        }
        options.fields = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
        options.user = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        options.chunkSize = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt64() }
        priority = try reader.readInt()
        snapshot = try reader.readEnum(SnapshotMode.self)
        let image = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        options.clientToken = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString()
        }
        options.metadata = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            let pairs = try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
            return Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        }
        options.umask = try reader.readOptional { (reader) throws(BinaryDecodingError) in
            let value = try reader.readUInt64()
            guard value <= 0o777 else { throw BinaryDecodingError(description: "umask \(value) is out of range") }
            return UInt32(value)
        }
        options.preparation = try reader.readIfPresent([]) { (reader) throws(BinaryDecodingError) in
            try reader.readArray { (reader) throws(BinaryDecodingError) in
                try reader.readMessage { (reader) throws(BinaryDecodingError) in
                    PreparationRequest(step: try reader.readString(), options: try reader.readString())
                }
            }
        }
        options.batch = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in JobID(try reader.readUInt64()) }
        }
        options.fileField = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        }
        options.folder = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        }
        options.folderAfter = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
            try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
        }
        // No released daemon accepted an image SPEC; were one ever set, it is the image step.
        if let image, options.preparation.isEmpty {
            options.preparation = [PreparationRequest(step: "image", options: image)]
        }
        self.options = OutOfLine(options)
    }
}

extension KeyValue {
    func write(to writer: inout BinaryWriter) {
        writer.writeMessage { writer in
            writer.write(name)
            writer.write(value)
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self = try reader.readMessage { (reader) throws(BinaryDecodingError) in
            KeyValue(name: try reader.readString(), value: try reader.readString())
        }
    }
}

extension SourceSnapshot {
    /// `spec`: the job's, whose source an empty path stands for (`kept(for:)`).
    func write(to writer: inout BinaryWriter, sourceOf spec: JobSpec? = nil) {
        writer.writeMessage { writer in
            writer.write(kind.rawValue)
            if path.isEmpty, let spec { spec.writeSource(to: &writer) } else { writer.write(path) }
            writer.write(size)
            writer.write(device)
            writer.write(inode)
            writer.write(modificationTimeNanoseconds)
            writer.write(cachedCopy) { writer, identity in
                writer.write(identity.inode)
                writer.write(identity.modificationTimeNanoseconds)
            }
            writer.write(packOffset) { $0.write($1) }
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self = try reader.readMessage { (reader) throws(BinaryDecodingError) in
            var snapshot = SourceSnapshot(
                kind: try reader.readEnum(Kind.self), path: try reader.readString(), size: try reader.readInt64(),
                device: try reader.readUInt64(), inode: try reader.readUInt64(),
                modificationTimeNanoseconds: try reader.readInt64())
            snapshot.cachedCopy = try reader.readOptional { (reader) throws(BinaryDecodingError) in
                FileIdentity(inode: try reader.readUInt64(), modificationTimeNanoseconds: try reader.readInt64())
            }
            snapshot.packOffset = try reader.readIfPresent(nil) { (reader) throws(BinaryDecodingError) in
                try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readInt64() }
            }
            return snapshot
        }
    }
}

/// A checkpoint is its kind, then a message that only its protocol reads: a protocol added or
/// changed later never makes this daemon misread a record. Format 3 wrote the same bytes when
/// the checkpoint was a closed enum of three kinds.
extension Checkpoint {
    func write(to writer: inout BinaryWriter) {
        writer.writeMessage { writer in
            writer.write(kind)
            writer.writeMessage { $0.writeRaw(payload) }
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self = try reader.readMessage { (reader) throws(BinaryDecodingError) in
            let kind = try reader.readString()
            return Checkpoint(kind: kind, payload: try reader.readMessage { $0.readRest() })
        }
    }
}

extension PreparedFile {
    func write(to writer: inout BinaryWriter) {
        writer.writeMessage { writer in
            writer.write(path)
            writer.write(size)
            writer.write(sha256)
            writer.write(fileName) { $0.write($1) }
            writer.write(contentType) { $0.write($1) }
            writer.write(details) { $1.write(to: &$0) }
        }
    }

    init(reading reader: inout BinaryReader) throws(BinaryDecodingError) {
        self = try reader.readMessage { (reader) throws(BinaryDecodingError) in
            PreparedFile(
                path: try reader.readString(), size: try reader.readInt64(), sha256: try reader.readString(),
                fileName: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() },
                contentType: try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString()
                },
                details: try reader.readArray { (reader) throws(BinaryDecodingError) in try KeyValue(reading: &reader) }
            )
        }
    }
}
