// Format 4 and 5 version of golden-dump-v3.swift: the same output plus the fields formats 4 and
// 5 added (a job's preparation, batch, prepared file, rank, owed hook, revision; a snapshot's
// offset in a pack). Built in format 4's worktree, the `pack_offset` line is left out (that
// release has no such field).
//
// Throwaway: decodes a journal with THIS checkout's own UploadCore (JournalFormat.decode +
// JournalState.apply, exactly as the daemon replays it, without the scheduler's requeue) and
// prints what it holds as JSON.
import Foundation
import UploadCore
import UploadWire

// The same style as the daemon's JSON answers (JSONCoding), so these strings match list.json/show-*.json.
func iso(_ date: Date) -> String { Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date) }
func dateValue(_ date: Date?) -> Any {
    guard let date else { return NSNull() }
    return ["reference_seconds": date.timeIntervalSinceReferenceDate, "iso8601": iso(date)]
}
func opt(_ v: Any?) -> Any { v ?? NSNull() }
// Format 3: a checkpoint is {kind, payload}; the payload of each released kind is read here with
// UploadCore's BinaryReader, field by field as the daemon's TusCheckpoint, S3Checkpoint and
// ChunkedCheckpoint read it (UploadDaemon/Protocols/*), and must be read to its last byte.
func checkpointValue(_ c: Checkpoint?) -> Any {
    guard let c else { return NSNull() }
    do {
        return try c.payload.withUnsafeBytes { (bytes) throws(BinaryDecodingError) -> [String: Any] in
            var r = BinaryReader(bytes)
            let value: [String: Any]
            switch c.kind {
            case "tus":
                let url = try r.readString()
                let expires = try r.readOptional { (r) throws(BinaryDecodingError) in try r.readString() }
                value = ["kind": "tus", "upload_url": url, "expires": opt(expires)]
            case "s3":
                let uploadID = try r.readString()
                let key = try r.readString()
                let partSize = try r.readInt64()
                value = ["kind": "s3", "upload_id": uploadID, "key": key, "part_size": partSize]
            case "chunked":
                let token = try r.readString()
                let blockSize = try r.readInt64()
                let acked = try r.readInt64()
                value = ["kind": "chunked", "up_token": token, "block_size": blockSize, "blocks_acknowledged": acked]
            default:
                throw BinaryDecodingError(description: "unknown checkpoint kind \(c.kind)")
            }
            guard r.isAtEnd else { throw BinaryDecodingError(description: "\(c.kind) payload has bytes left") }
            return value
        }
    } catch {
        FileHandle.standardError.write("checkpoint: \(error)\n".data(using: .utf8)!)
        exit(2)
    }
}
func kv(_ list: [KeyValue]) -> [[String: String]] { list.map { ["name": $0.name, "value": $0.value] } }

let path = CommandLine.arguments[1]
let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
let contents = try JournalFormat.decode(bytes)
var state = JournalState()
var records: [[String: Any]] = []
var offset = JournalFormat.headerSize
for record in contents.records {
    var one: [String: Any] = ["offset": offset]
    let length =
        Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
    one["frame_bytes"] = JournalFormat.frameOverhead + length
    switch record {
    case .job(let job):
        one["type"] = "job"; one["id"] = job.id.rawValue; one["state"] = job.state.rawValue
        one["bytes_acked"] = job.bytesAcked; one["checkpoint"] = checkpointValue(job.checkpoint)
    case .progress(let p):
        one["type"] = "progress"; one["id"] = p.id.rawValue; one["bytes_acked"] = p.bytesAcked
        one["checkpoint"] = checkpointValue(p.checkpoint)
    case .removed(let id): one["type"] = "removed"; one["id"] = id.rawValue
    case .nextID(let n): one["type"] = "next_id"; one["next_id"] = n
    case .foreign(let f):
        one["type"] = "foreign"; one["foreign_type"] = Int(f.type); one["id"] = opt(f.jobID?.rawValue)
    }
    offset += JournalFormat.frameOverhead + length
    records.append(one)
    state.apply(record)
}
var jobs: [[String: Any]] = []
for id in state.jobs.keys.sorted() {
    let job = state.jobs[id]!
    let spec = job.spec
    var j: [String: Any] = [
        "id": job.id.rawValue, "state": job.state.rawValue,
        "protocol": spec.uploadProtocol.rawValue, "resolved_protocol": opt(job.resolvedProtocol?.rawValue),
        "source": spec.source, "destination": spec.destination,
        "headers": kv(spec.headers), "fields": kv(spec.fields), "user": opt(spec.user),
        "chunk_size": opt(spec.chunkSize), "priority": spec.priority, "snapshot_mode": spec.snapshot.rawValue,
        "image": opt(spec.preparation.first { $0.step == "image" }?.options), "client_token": opt(spec.clientToken),
        "metadata": opt(spec.metadata),
        "bytes_total": job.bytesTotal, "bytes_acked": job.bytesAcked, "attempts": job.attempts,
        "failures_without_progress": job.failuresWithoutProgress, "next_attempt_at": dateValue(job.nextAttemptAt),
        "created_at": dateValue(job.createdAt), "updated_at": dateValue(job.updatedAt),
        "checkpoint": checkpointValue(job.checkpoint),
        "umask": opt(spec.umask), "crashes": job.crashes, "failing_since": dateValue(job.failingSince),
        "preparation": spec.preparation.map { ["step": $0.step, "options": $0.options] },
        "batch": opt(spec.batch?.rawValue),
        "prepared": job.prepared.map {
            [
                "path": $0.path, "size": $0.size, "sha256": $0.sha256, "file_name": opt($0.fileName),
                "content_type": opt($0.contentType), "details": kv($0.details),
            ] as [String: Any]
        } ?? NSNull(),
        "rank": opt(job.rank), "hook_pending": job.hookPending, "revision": job.revision,
        "history_count": job.history.count,
        "history": job.history.map { ["at": dateValue($0.at), "message": $0.message] as [String: Any] },
    ]
    j["error"] =
        job.error.map { ["code": $0.code, "message": $0.message, "status": opt($0.status)] as [String: Any] }
        ?? NSNull()
    j["result"] =
        job.result.map { ["url": opt($0.url), "status": opt($0.status), "body": opt($0.body)] as [String: Any] }
        ?? NSNull()
    j["snapshot"] =
        job.snapshot.map {
            [
                "kind": $0.kind.rawValue, "path": $0.path, "size": $0.size, "device": $0.device, "inode": $0.inode,
                "modification_time_ns": $0.modificationTimeNanoseconds,
                "cached_copy": $0.cachedCopy.map {
                    ["inode": $0.inode, "modification_time_ns": $0.modificationTimeNanoseconds] as [String: Any]
                } ?? NSNull(),
                "pack_offset": opt($0.packOffset),
            ] as [String: Any]
        } ?? NSNull()
    jobs.append(j)
}
let versionBytes =
    bytes.count >= 12 ? UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24 : 0
var counts: [String: Int] = [:]
for r in records { counts[r["type"] as! String, default: 0] += 1 }
let out: [String: Any] = [
    "file": (path as NSString).lastPathComponent, "file_bytes": bytes.count, "format_version": versionBytes,
    "decoder_format_version": JournalFormat.version,
    "valid_length": contents.validLength,
    "damage": contents.damage.map { ["offset": $0.offset, "reason": $0.reason] as [String: Any] } ?? NSNull(),
    "record_count": records.count, "record_counts": counts, "records": records,
    "next_id": state.nextID, "job_count": jobs.count, "jobs": jobs,
]
let data = try JSONSerialization.data(
    withJSONObject: out, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
FileHandle.standardOutput.write(data)
FileHandle.standardOutput.write("\n".data(using: .utf8)!)
