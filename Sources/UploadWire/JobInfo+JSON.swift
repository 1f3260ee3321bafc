import Foundation

/// Jobs as JSON, written by hand: the same bytes `JSONCoding.encoder` writes (keys sorted, dates
/// as ISO 8601 with milliseconds, slashes unescaped), about ten times faster. Every event and
/// every `add` answer is a job: JSONEncoder's generic containers took a sixth of the daemon's
/// CPU per small file. `JobInfoJSONTests` compares the two on thousands of random jobs.
extension JobInfo {
    /// This job as one JSON object.
    public var jsonBytes: [UInt8] { jsonBytes(only: nil) }

    /// This job as one JSON object of only `fields` (nil: all of them).
    public func jsonBytes(only fields: JobFields?) -> [UInt8] {
        var writer = JSONWriter()
        write(to: &writer, only: fields)
        return writer.bytes
    }

    /// `fields`: only these of its keys (as `events.subscribe`'s `job_fields` asks); nil: all.
    func write(to writer: inout JSONWriter, only fields: JobFields? = nil) {
        func wants(_ key: JobFields.Key) -> Bool { fields?.contains(key) ?? true }
        // In the order of their names, as .sortedKeys puts them.
        writer.beginObject()
        if let activity, wants(.activity) {
            writer.key("activity")
            writer.string(activity)
        }
        if wants(.attempts) {
            writer.key("attempts")
            writer.integer(attempts)
        }
        if let batch, wants(.batch) {
            writer.key("batch")
            writer.integer(batch.rawValue)
        }
        if wants(.bytesAcked) {
            writer.key("bytes_acked")
            writer.integer(bytesAcked)
        }
        if wants(.bytesSent) {
            writer.key("bytes_sent")
            writer.integer(bytesSent)
        }
        if wants(.bytesTotal) {
            writer.key("bytes_total")
            writer.integer(bytesTotal)
        }
        if let clientToken, wants(.clientToken) {
            writer.key("client_token")
            writer.string(clientToken)
        }
        if wants(.createdAt) {
            writer.key("created_at")
            writer.date(createdAt)
        }
        if wants(.destination) {
            writer.key("destination")
            writer.string(destination)
        }
        if wants(.error) {
            writer.key("error")
            if let error {
                writer.beginObject()
                writer.key("code")
                writer.string(error.code)
                writer.key("message")
                writer.string(error.message)
                if let status = error.status {
                    writer.key("status")
                    writer.integer(status)
                }
                writer.endObject()
            } else {
                writer.null()
            }
        }
        if wants(.eta) {
            writer.key("eta")
            if let eta { writer.double(eta) } else { writer.null() }
        }
        if let folder, wants(.folder) {
            writer.key("folder")
            writer.string(folder)
        }
        if let history, wants(.history) {
            writer.key("history")
            writer.beginArray()
            for event in history {
                writer.element()
                writer.beginObject()
                writer.key("at")
                writer.date(event.at)
                writer.key("message")
                writer.string(event.message)
                writer.endObject()
            }
            writer.endArray()
        }
        if wants(.id) {
            writer.key("id")
            writer.integer(id.rawValue)
        }
        if let image, wants(.image) {
            writer.key("image")
            writer.string(image)
        }
        if let metadata, wants(.metadata) {
            writer.key("metadata")
            writer.stringDictionary(metadata)
        }
        if let nextAttemptAt, wants(.nextAttemptAt) {
            writer.key("next_attempt_at")
            writer.date(nextAttemptAt)
        }
        if let position, wants(.position) {
            writer.key("position")
            writer.integer(position)
        }
        if let prepared, wants(.prepared) {
            writer.key("prepared")
            writer.beginObject()
            if let contentType = prepared.contentType {
                writer.key("content_type")
                writer.string(contentType)
            }
            writer.key("details")
            writer.stringDictionary(prepared.details)
            if let fileName = prepared.fileName {
                writer.key("file_name")
                writer.string(fileName)
            }
            writer.key("original_size")
            writer.integer(prepared.originalSize)
            writer.key("sha256")
            writer.string(prepared.sha256)
            writer.key("size")
            writer.integer(prepared.size)
            writer.endObject()
        }
        if wants(.priority) {
            writer.key("priority")
            writer.integer(priority)
        }
        if wants(.`protocol`) {
            writer.key("protocol")
            writer.string(protocolName)
        }
        if wants(.result) {
            writer.key("result")
            if let result {
                writer.beginObject()
                if let body = result.body {
                    writer.key("body")
                    writer.string(body)
                }
                if let status = result.status {
                    writer.key("status")
                    writer.integer(status)
                }
                if let url = result.url {
                    writer.key("url")
                    writer.string(url)
                }
                writer.endObject()
            } else {
                writer.null()
            }
        }
        if wants(.revision) {
            writer.key("revision")
            writer.integer(revision)
        }
        if let snapshot, wants(.snapshot) {
            writer.key("snapshot")
            writer.string(snapshot)
        }
        if wants(.source) {
            writer.key("source")
            writer.string(source)
        }
        if wants(.speed) {
            writer.key("speed")
            writer.double(speed)
        }
        if wants(.state) {
            writer.key("state")
            writer.string(state.rawValue)
        }
        if wants(.updatedAt) {
            writer.key("updated_at")
            writer.date(updatedAt)
        }
        if let user, wants(.user) {
            writer.key("user")
            writer.string(user)
        }
        if wants(.waiting) {
            writer.key("waiting")
            if let waiting { writer.string(waiting) } else { writer.null() }
        }
        writer.endObject()
    }
}

extension JobList {
    /// `{"errors": [...], "jobs": [...], "next": N}` as JSONCoding.encoder writes it.
    public var jsonBytes: [UInt8] { jsonBytes(only: nil) }

    /// The same with only `fields` of each job (nil: all of them).
    public func jsonBytes(only fields: JobFields?) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        if let errors {
            writer.key("errors")
            writer.beginArray()
            for failure in errors {
                writer.element()
                writer.beginObject()
                writer.key("code")
                writer.integer(failure.code)
                if let id = failure.id {
                    writer.key("id")
                    writer.integer(id.rawValue)
                }
                if let index = failure.index {
                    writer.key("index")
                    writer.integer(index)
                }
                writer.key("message")
                writer.string(failure.message)
                if let source = failure.source {
                    writer.key("source")
                    writer.string(source)
                }
                writer.endObject()
            }
            writer.endArray()
        }
        Self.writeJobs(to: &writer, count: jobs.count, next: next, only: fields) { jobs[$0] }
        return writer.bytes
    }

    /// `{"jobs": [...], "next": N}` of `count` jobs, each made by `job` as it is written: a page
    /// of `job.list` without its values all at once.
    public static func jsonBytes(
        jobCount count: Int, next: JobID?, only fields: JobFields?, job: (Int) -> JobInfo
    ) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writeJobs(to: &writer, count: count, next: next, only: fields, job: job)
        return writer.bytes
    }

    /// The most room reserved ahead for the jobs of one answer: a first job far bigger than the
    /// rest cannot ask for more. A bigger answer grows as arrays do.
    static let maxReservedRoom = 256 << 20

    /// The jobs and the next page, and the end of the object.
    private static func writeJobs(
        to writer: inout JSONWriter, count: Int, next: JobID?, only fields: JobFields?, job: (Int) -> JobInfo
    ) {
        writer.key("jobs")
        writer.beginArray()
        for index in 0..<count {
            writer.element()
            let before = writer.bytes.count
            job(index).write(to: &writer, only: fields)
            // Room for all of them, each as big as the first, with a fifth to spare and at most
            // `maxReservedRoom`: the bytes are not copied again and again as the array grows
            // (untouched room costs no memory). By the first job's own bytes: what was written
            // before it (a bulk command's errors) says nothing of the jobs' size.
            if index == 0, count > 1 {
                let estimate = (writer.bytes.count - before).multipliedReportingOverflow(by: (count - 1) * 6 / 5)
                writer.reserveLineRoom(
                    forMore: estimate.overflow ? Self.maxReservedRoom : min(estimate.partialValue, Self.maxReservedRoom)
                )
            }
        }
        writer.endArray()
        if let next {
            writer.key("next")
            writer.integer(next.rawValue)
        }
        writer.endObject()
    }
}

/// Appends JSON tokens to a byte array, commas included.
struct JSONWriter {
    var bytes: [UInt8] = []
    /// Whether the container being written has a member or element yet.
    private var hasMember: [Bool] = []

    init() { bytes.reserveCapacity(512) }

    /// Room for `count` more bytes, and for what makes the result a line (`RPCLine.result`).
    mutating func reserveLineRoom(forMore count: Int) {
        bytes.reserveCapacity(bytes.count + count + Self.lineRoom)
    }

    /// What `RPCLine.result` puts around a result: the ID, the version, the braces, the newline.
    static let lineRoom = 128

    mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        hasMember.append(false)
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        hasMember.removeLast()
    }

    mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        hasMember.append(false)
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        hasMember.removeLast()
    }

    /// Before an array element: the comma it needs.
    mutating func element() {
        if hasMember[hasMember.count - 1] { bytes.append(UInt8(ascii: ",")) }
        hasMember[hasMember.count - 1] = true
    }

    mutating func key(_ name: StaticString) {
        element()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// A member's name that is not known when compiling.
    mutating func key(_ name: String) {
        element()
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func null() { bytes.append(contentsOf: [110, 117, 108, 108]) }

    mutating func bool(_ value: Bool) { bytes.append(contentsOf: value ? "true".utf8 : "false".utf8) }

    /// Digits written in place, least significant first, then turned around: no String made.
    mutating func integer<T: BinaryInteger>(_ value: T) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(48 + Int(rest % 10)))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    /// As JSONEncoder writes a Double: its shortest form, without a trailing `.0`.
    mutating func double(_ value: Double) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Most strings (paths, URLs, states) need no escape: one scan of their bytes and one
            // copy (the generic `utf8.contains(where:)` was 5% of `uploadctl add`'s CPU).
            guard utf8.contains(where: Self.needsEscape) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
                case 0x08: bytes.append(contentsOf: [92, UInt8(ascii: "b")])
                case 0x0C: bytes.append(contentsOf: [92, UInt8(ascii: "f")])
                case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    mutating func stringDictionary(_ dictionary: [String: String]) {
        beginObject()
        for name in dictionary.keys.sorted() {
            key(name)
            string(dictionary[name]!)
        }
        endObject()
    }

    /// `2026-12-01T11:37:42.814Z`, as `JSONCoding`'s ISO8601FormatStyle with fractional seconds
    /// writes it (milliseconds truncated), from gmtime_r.
    mutating func date(_ date: Date) {
        let time = date.timeIntervalSince1970
        let seconds = time.rounded(.down)
        let milliseconds = Int((time - seconds) * 1000)
        var parts = tm()
        var clock = time_t(seconds)
        gmtime_r(&clock, &parts)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(48 + value / divisor % 10))
                divisor /= 10
            }
        }
        bytes.append(UInt8(ascii: "\""))
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(milliseconds, 3)
        bytes.append(contentsOf: [UInt8(ascii: "Z"), UInt8(ascii: "\"")])
    }
}

/// Which keys of a job object to write (`job_fields`), a bit each: asked once per subscription
/// or add, then tested for every key of every job (a set of strings hashed each key).
public struct JobFields: Sendable, Hashable {
    /// A job object's keys, in the order of their names (`names`).
    public enum Key: Int, CaseIterable, Sendable {
        case activity, attempts, batch, bytesAcked, bytesSent, bytesTotal, clientToken, createdAt, destination, error
        case eta, folder
        case history, id, image, metadata, nextAttemptAt, position, prepared, priority, `protocol`, result, revision
        case snapshot, source, speed, state, updatedAt, user, waiting
    }

    /// Each key"s name, at its `Key`"s raw value.
    public static let names = [
        "activity", "attempts", "batch", "bytes_acked", "bytes_sent", "bytes_total", "client_token", "created_at",
        "destination",
        "error", "eta", "folder", "history", "id", "image", "metadata", "next_attempt_at", "position", "prepared",
        "priority",
        "protocol",
        "result", "revision", "snapshot", "source", "speed", "state", "updated_at", "user", "waiting",
    ]

    private let bits: UInt32

    /// Nil when a name is not a key of a job object.
    public init?(names: some Sequence<String>) {
        var bits: UInt32 = 0
        for name in names {
            guard let index = Self.names.firstIndex(of: name) else { return nil }
            bits |= 1 << UInt32(index)
        }
        self.bits = bits
    }

    public func contains(_ key: Key) -> Bool { bits & (1 << UInt32(key.rawValue)) != 0 }
}
