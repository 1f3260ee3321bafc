import Foundation

/// JSON-RPC 2.0 over newline-delimited JSON on a Unix socket. Every name here is public contract.
public enum ControlProtocol {
    public static let version = 1
    /// A request line longer than this is refused: the connection gets an error and is closed.
    public static let maxLineLength = 1 << 20
}

/// The methods the daemon serves.
public enum ControlMethod: String, Sendable, CaseIterable {
    case hello = "daemon.hello"
    case status = "daemon.status"
    case reload = "daemon.reload"
    case limit = "daemon.limit"
    case remotes = "daemon.remotes"
    case testRemote = "remote.test"
    case folders = "folder.list"
    case pauseFolder = "folder.pause"
    case resumeFolder = "folder.resume"
    case add = "job.add"
    case list = "job.list"
    case get = "job.get"
    case pause = "job.pause"
    case resume = "job.resume"
    case cancel = "job.cancel"
    case remove = "job.remove"
    case retry = "job.retry"
    case priority = "job.priority"
    case move = "job.move"
    case clear = "job.clear"
    case delete = "job.delete"
    case subscribe = "events.subscribe"
}

/// The notifications sent to subscribers.
public enum ControlEvent: String, Sendable, Codable, CaseIterable {
    /// A job changed state; params are the job object.
    case state = "job.state"
    /// A job moved bytes; params are `JobProgressEvent`. Throttled per job.
    case progress = "job.progress"
    /// A job was removed (remove, clear, delete); params are `{"id": N}`.
    case removed = "job.removed"
    /// The subscriber fell too far behind: no more events come, and the connection closes.
    case overflow = "events.overflow"
}

/// A JSON-RPC request or notification.
public struct RPCRequest: Codable, Sendable {
    public var jsonrpc: String
    public var id: JSONValue?
    public var method: String
    public var params: JSONValue?

    public init(id: JSONValue?, method: String, params: JSONValue? = nil) {
        self.jsonrpc = "2.0"
        self.id = id
        self.method = method
        self.params = params
    }
}

/// A JSON-RPC error object. The codes below -32000 are the spec's; -32001 and down are ours.
public struct RPCError: Codable, Sendable, Error, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { message }

    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603
    public static let jobNotFoundCode = -32001
    public static let invalidTransitionCode = -32002
    public static let sourceErrorCode = -32003
    public static let noSpaceCode = -32004
    public static let shuttingDownCode = -32005
    public static let deniedCode = -32006
    /// daemon.reload: the config file has errors; the one in use stays.
    public static let configErrorCode = -32007
    /// The daemon serves as many clients as it takes at once (sent with `id` null; the connection
    /// then closes): try again once some have closed.
    public static let busyCode = -32008

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: parseErrorCode, message: "parse error: \(detail)")
    }
    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: invalidRequestCode, message: "invalid request: \(detail)")
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(
            code: methodNotFoundCode, message: "unknown method '\(method)'; daemon.hello lists what this daemon serves")
    }
    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "invalid params: \(detail)")
    }

    /// The message as a person reads it: without the JSON-RPC words ("invalid params: ") that
    /// tell a program's author which kind of mistake it was.
    public var messageForPeople: String {
        for prefix in ["invalid params: ", "invalid request: "] where message.hasPrefix(prefix) {
            return String(message.dropFirst(prefix.count))
        }
        return message
    }
    public static func jobNotFound(_ id: JobID) -> RPCError {
        RPCError(code: jobNotFoundCode, message: "no job \(id); uploadctl list shows the jobs")
    }
}

/// A JSON-RPC response: exactly one of `result` and `error`.
public struct RPCResponse: Codable, Sendable {
    public var jsonrpc: String = "2.0"
    public var id: JSONValue
    public var result: JSONValue?
    public var error: RPCError?

    public init(id: JSONValue, result: JSONValue) {
        self.id = id
        self.result = result
    }

    public init(id: JSONValue, error: RPCError) {
        self.id = id
        self.error = error
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(jsonrpc, forKey: .jsonrpc)
        try container.encode(id, forKey: .id)
        if let error {
            try container.encode(error, forKey: .error)
        } else {
            try container.encode(result ?? .null, forKey: .result)
        }
    }
}

/// A notification from the daemon (no id).
public struct RPCNotification: Codable, Sendable {
    public var jsonrpc: String = "2.0"
    public var method: String
    public var params: JSONValue

    public init(method: String, params: JSONValue) {
        self.method = method
        self.params = params
    }
}

extension RPCError {
    /// How params refuse a key they do not know, in the message of -32602.
    static func unknownKeyText(_ key: String) -> String { "unknown key '\(key)'" }

    /// Whether this is params refusing `key`: a daemon older than the key. Clients that use a
    /// newer key ask again without it.
    public func refusesUnknownKey(_ key: String) -> Bool { message.contains(Self.unknownKeyText(key)) }
}

/// Params types reject keys they do not know, so a misspelt option is an error, not a silent no-op.
public protocol StrictParams: Decodable {
    static var knownKeys: Set<String> { get }
}

extension StrictParams {
    /// Decodes params, rejecting unknown keys and wrong types with a message naming the key.
    public static func decode(from params: JSONValue?) throws(RPCError) -> Self {
        let value = params ?? .object([:])
        guard let object = value.objectValue else { throw RPCError.invalidParams("params must be an object") }
        if let unknown = object.keys.filter({ !knownKeys.contains($0) }).min() {
            throw RPCError.invalidParams(RPCError.unknownKeyText(unknown))
        }
        do {
            return try value.decode(Self.self)
        } catch let DecodingError.typeMismatch(type, context) {
            throw RPCError.invalidParams(
                "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' must be \(type)")
        } catch let DecodingError.keyNotFound(key, _) {
            throw RPCError.invalidParams("'\(key.stringValue)' is required")
        } catch let DecodingError.valueNotFound(_, context) {
            throw RPCError.invalidParams(
                "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' must not be null")
        } catch let DecodingError.dataCorrupted(context) {
            throw RPCError.invalidParams(
                "'\(context.codingPath.map(\.stringValue).joined(separator: "."))': \(context.debugDescription)")
        } catch {
            throw RPCError.invalidParams("\(error)")
        }
    }
}

/// `job.add` params: the same names as uploadctl's options.
public struct AddParams: Codable, Sendable, Equatable, StrictParams {
    public var source: String
    /// The file the client checked at `source` (`SourceIdentity`): the daemon refuses whatever
    /// else it finds there. Clients that walk folders others can write to must send it.
    public var sourceIdentity: SourceIdentity?
    public var destination: String
    public var `protocol`: UploadProtocol?
    /// `K: V` strings.
    public var headers: [String]?
    /// `K=V` strings, or an object.
    public var fields: [String]?
    public var user: String?
    /// Bytes, or a SIZE string such as `8M`.
    public var chunkSize: String?
    /// post: the name of the form part that carries the file (default: the remote's `file_field`, else `file`).
    public var fileField: String?
    public var priority: Int?
    public var snapshot: SnapshotMode?
    public var image: String?
    /// Adding twice with the same token returns the first job instead of a second one.
    public var clientToken: String?
    public var metadata: [String: String]?
    /// The adding client's umask (0 to 511, e.g. 18 for 022): what a `file://` copy creates gets
    /// the modes `cp` would give it.
    public var umask: Int?
    /// Joins the batch of that ID (a job ID: the batch's first job's).
    public var batch: JobID?
    /// Starts a batch whose ID is this job's own; the other jobs of the add name it in `batch`.
    public var newBatch: Bool?
    /// Only these keys of the job in the answer (`id` and `state` always come), as in
    /// `events.subscribe`: `uploadctl add` needs the ID and the batch of thousands of jobs.
    public var jobFields: [String]?

    public init(source: String, destination: String) {
        self.source = source
        self.destination = destination
    }

    enum CodingKeys: String, CodingKey {
        case source, destination, `protocol`, headers, fields, user, priority, snapshot, image, metadata, umask, batch
        case sourceIdentity = "source_identity"
        case chunkSize = "chunk_size"
        case fileField = "file_field"
        case clientToken = "client_token"
        case newBatch = "new_batch"
        case jobFields = "job_fields"
    }

    public static let knownKeys: Set<String> = [
        "source", "destination", "protocol", "headers", "fields", "user", "chunk_size", "priority", "snapshot",
        "image", "client_token", "metadata", "umask", "batch", "new_batch", "job_fields", "source_identity",
        "file_field",
        // Many files at once (`readSources`, which reads it before these params are read): known
        // here so that `"sources": null` is a key not given, as `null` is for the others.
        "sources",
    ]

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        source = try container.decode(String.self, forKey: .source)
        sourceIdentity = try container.decodeIfPresent(SourceIdentity.self, forKey: .sourceIdentity)
        destination = try container.decode(String.self, forKey: .destination)
        `protocol` = try container.decodeIfPresent(UploadProtocol.self, forKey: .protocol)
        headers = try container.decodeIfPresent([String].self, forKey: .headers)
        if let object = try? container.decodeIfPresent([String: String].self, forKey: .fields) {
            fields = object.keys.sorted().map { "\($0)=\(object[$0]!)" }
        } else {
            fields = try container.decodeIfPresent([String].self, forKey: .fields)
        }
        user = try container.decodeIfPresent(String.self, forKey: .user)
        if let bytes = try? container.decodeIfPresent(Int64.self, forKey: .chunkSize) {
            chunkSize = String(bytes)
        } else {
            chunkSize = try container.decodeIfPresent(String.self, forKey: .chunkSize)
        }
        fileField = try container.decodeIfPresent(String.self, forKey: .fileField)
        priority = try container.decodeIfPresent(Int.self, forKey: .priority)
        snapshot = try container.decodeIfPresent(SnapshotMode.self, forKey: .snapshot)
        image = try container.decodeIfPresent(String.self, forKey: .image)
        clientToken = try container.decodeIfPresent(String.self, forKey: .clientToken)
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
        umask = try container.decodeIfPresent(Int.self, forKey: .umask)
        batch = try container.decodeIfPresent(JobID.self, forKey: .batch)
        newBatch = try container.decodeIfPresent(Bool.self, forKey: .newBatch)
        jobFields = try container.decodeIfPresent([String].self, forKey: .jobFields)
    }
}

/// Params of the job methods that take `{id}`, `{ids: [...]}` or `{all: true}`.
public struct JobSelection: Codable, Sendable, Equatable, StrictParams {
    public var id: JobID?
    public var ids: [JobID]?
    public var all: Bool?
    /// With `all`: only jobs in these states (of those the command acts on).
    public var states: [JobState]?
    /// With `all`: only the jobs of this batch.
    public var batch: JobID?

    /// `{id}` alone: answered with the job itself, or the error.
    public var isSingle: Bool { id != nil && ids == nil && all != true }

    public init(
        id: JobID? = nil, ids: [JobID]? = nil, all: Bool? = nil, states: [JobState]? = nil, batch: JobID? = nil
    ) {
        self.id = id
        self.ids = ids
        self.all = all
        self.states = states
        self.batch = batch
    }

    public static let knownKeys: Set<String> = ["id", "ids", "all", "states", "batch"]

    /// The IDs named, in order, without duplicates.
    public var namedIDs: [JobID] {
        var seen = Set<JobID>()
        return ((id.map { [$0] } ?? []) + (ids ?? [])).filter { seen.insert($0).inserted }
    }
}

/// `job.priority` params: the job and its new priority (higher starts first, -1000 to 1000).
public struct PriorityParams: Codable, Sendable, StrictParams {
    public var id: JobID
    public var priority: Int

    public init(id: JobID, priority: Int) {
        self.id = id
        self.priority = priority
    }

    public static let knownKeys: Set<String> = ["id", "priority"]
}

/// `job.move` params: the job, and exactly one of `top`, `bottom`, `before` (an ID) or `after`.
public struct MoveParams: Codable, Sendable, Equatable, StrictParams {
    public var id: JobID
    public var top: Bool?
    public var bottom: Bool?
    public var before: JobID?
    public var after: JobID?

    public init(id: JobID, top: Bool? = nil, bottom: Bool? = nil, before: JobID? = nil, after: JobID? = nil) {
        self.id = id
        self.top = top
        self.bottom = bottom
        self.before = before
        self.after = after
    }

    public static let knownKeys: Set<String> = ["id", "top", "bottom", "before", "after"]
}

/// `job.list` params.
public struct ListParams: Codable, Sendable, StrictParams {
    public var states: [JobState]?
    public var ids: [JobID]?
    /// Only the jobs of this batch.
    public var batch: JobID?
    /// At most this many jobs in the answer (and never more than `maxLimit`); the answer's `next`
    /// says where the next page starts. Nil: every job, in one answer. Older daemons refuse the key
    /// ("unknown key 'limit'").
    public var limit: Int?
    /// Only jobs with a greater ID: the `next` of the page before.
    public var after: JobID?
    /// Only these keys of each job (`id` and `state` always come), as in `events.subscribe`.
    public var jobFields: [String]?

    /// The most jobs one page holds, whatever `limit` asks: what one answer may cost the daemon.
    public static let maxLimit = 10_000

    enum CodingKeys: String, CodingKey {
        case states, ids, batch, limit, after
        case jobFields = "job_fields"
    }

    public init(
        states: [JobState]? = nil, ids: [JobID]? = nil, batch: JobID? = nil, limit: Int? = nil, after: JobID? = nil,
        jobFields: [String]? = nil
    ) {
        self.states = states
        self.ids = ids
        self.batch = batch
        self.limit = limit
        self.after = after
        self.jobFields = jobFields
    }

    public static let knownKeys: Set<String> = ["states", "ids", "batch", "limit", "after", "job_fields"]

    /// Pages are of jobs by ID, which `ids` does not list in (it names its jobs, in its order).
    public func checked() throws(RPCError) -> ListParams {
        if let limit, limit < 1 {
            throw RPCError.invalidParams("'limit' must be 1 or more (a page holds at most \(Self.maxLimit) jobs)")
        }
        if ids != nil && (limit != nil || after != nil) {
            throw RPCError.invalidParams(
                "'ids' names the jobs to list; 'limit' and 'after' page through the others, not those")
        }
        return self
    }
}

/// `job.clear` params.
public struct ClearParams: Codable, Sendable, StrictParams {
    /// Only these keys of each job cleared (`id` and `state` always come): a client that counts
    /// them, or needs their IDs, does not need a hundred megabytes for a million. Older daemons
    /// refuse the key ("unknown key 'job_fields'").
    public var jobFields: [String]?

    enum CodingKeys: String, CodingKey {
        case jobFields = "job_fields"
    }

    public init(jobFields: [String]? = nil) { self.jobFields = jobFields }

    public static let knownKeys: Set<String> = ["job_fields"]
}

/// `events.subscribe` params: each given filter narrows what is sent (no ids: every job).
public struct SubscribeParams: Codable, Sendable, StrictParams {
    public var ids: [JobID]?
    public var batch: JobID?
    public var kinds: [ControlEvent]?
    /// `job.state` only when a job enters one of these states (a waiter needs the ends, and
    /// `queued` for a job retried after it ended); other kinds are not narrowed. Older daemons
    /// refuse the key ("unknown key 'states'"): subscribe again without it.
    public var states: [JobState]?
    /// Answer with the current state of the jobs the filters match, taken once the subscription
    /// is in place: nothing that happens in between is missed. `states` does not narrow it.
    public var snapshot: Bool?
    /// Only these keys of each job, in `job.state` events and in the snapshot (`id` and `state`
    /// always come): a waiter needs a few of a job's thirty. Nil: all. Older daemons refuse the
    /// key ("unknown key 'job_fields'").
    public var jobFields: [String]?

    enum CodingKeys: String, CodingKey {
        case ids, batch, kinds, states, snapshot
        case jobFields = "job_fields"
    }

    public init(
        ids: [JobID]? = nil, batch: JobID? = nil, kinds: [ControlEvent]? = nil, states: [JobState]? = nil,
        snapshot: Bool? = nil, jobFields: [String]? = nil
    ) {
        self.ids = ids
        self.batch = batch
        self.kinds = kinds
        self.states = states
        self.snapshot = snapshot
        self.jobFields = jobFields
    }

    public static let knownKeys: Set<String> = ["ids", "batch", "kinds", "states", "snapshot", "job_fields"]
}

/// `remote.test` params: the remote to check.
public struct RemoteParams: Codable, Sendable, StrictParams {
    public var name: String

    public init(name: String) { self.name = name }

    public static let knownKeys: Set<String> = ["name"]
}

/// A configured remote as `daemon.remotes` lists it: never a secret.
public struct RemoteInfo: Codable, Sendable, Equatable {
    public var name: String
    /// An open set, as `JobInfo.protocolName`.
    public var protocolName: String
    /// nil when this client does not know `protocolName`.
    public var `protocol`: UploadProtocol? { UploadProtocol(rawValue: protocolName) }
    /// With any password in it redacted.
    public var url: String
    public var user: String?
    /// Where its secret is read from (`password_file`, a credential), not the secret.
    public var secretSource: String?

    public init(name: String, protocol: UploadProtocol, url: String, user: String?, secretSource: String?) {
        self.name = name
        self.protocolName = `protocol`.rawValue
        self.url = url
        self.user = user
        self.secretSource = secretSource
    }

    enum CodingKeys: String, CodingKey {
        case name, url, user
        case protocolName = "protocol"
        case secretSource = "secret_source"
    }
}

/// `daemon.remotes`' answer.
public struct RemoteList: Codable, Sendable, Equatable {
    public var remotes: [RemoteInfo]

    public init(remotes: [RemoteInfo]) { self.remotes = remotes }
}

/// `remote.test`'s answer: whether uploads to the remote can work, and what was found.
public struct RemoteTestResult: Codable, Sendable, Equatable {
    public var name: String
    public var ok: Bool
    public var message: String
    /// The HTTP status the check got, when it asked a server.
    public var status: Int?

    public init(name: String, ok: Bool, message: String, status: Int? = nil) {
        self.name = name
        self.ok = ok
        self.message = message
        self.status = status
    }
}

/// Params of methods that take none.
public struct NoParams: Codable, Sendable, StrictParams {
    public init() {}
    public static let knownKeys: Set<String> = []
}

/// Answers and notifications put together around a result already encoded from its own type: a
/// list of 10,000 jobs is encoded once, not first into a `JSONValue` tree and then again.
public enum RPCLine {
    /// `{"id":…,"jsonrpc":"2.0","result":…}` without the newline, with room for it, so the newline
    /// goes in place. A result with room to spare (`JSONWriter.reserveLineRoom`) becomes the line
    /// where it is: a page of `job.list` is megabytes, and each copy of it counted in the daemon's
    /// peak memory.
    public static func result(id: JSONValue, encodedResult: consuming [UInt8]) throws -> [UInt8] {
        var head = Array(#"{"id":"#.utf8)
        head += try id.jsonBytes()
        head += #","jsonrpc":"2.0","result":"#.utf8
        var line = consume encodedResult
        if line.capacity >= line.count + head.count + 2 {
            line.insert(contentsOf: head, at: 0)  // moves the bytes within their buffer
        } else {
            var whole: [UInt8] = []
            whole.reserveCapacity(head.count + line.count + 2)
            whole += head
            whole += line
            line = whole
        }
        line.append(UInt8(ascii: "}"))
        return line
    }

    /// `{"jsonrpc":"2.0","method":…,"params":…}` without the newline.
    public static func notification(method: String, encodedParams: [UInt8]) throws -> [UInt8] {
        var line = Array(#"{"jsonrpc":"2.0","method":"#.utf8)
        var name = JSONWriter()
        name.string(method)
        line += name.bytes
        line += Array(#","params":"#.utf8)
        line += encodedParams
        line.append(UInt8(ascii: "}"))
        return line
    }
}
