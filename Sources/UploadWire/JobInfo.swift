import Foundation

/// A job as clients see it (`--json`, `job.get`, events). Secrets are never part of it.
public struct JobInfo: Codable, Sendable, Equatable {
    public var id: JobID
    public var state: JobState
    public var source: String
    public var destination: String
    /// The upload protocol's name as the daemon sent it: an open set, so a newer daemon's may be
    /// one this client does not know (PROTOCOL.md: clients never fail on those).
    public var protocolName: String
    /// The upload protocol, nil when this client does not know `protocolName`.
    public var `protocol`: UploadProtocol? { UploadProtocol(rawValue: protocolName) }
    public var bytesTotal: Int64
    /// Bytes sent on the wire during this attempt.
    public var bytesSent: Int64
    /// Bytes committed by the server; never goes backwards.
    public var bytesAcked: Int64
    /// Bytes per second over the last few seconds of this attempt.
    public var speed: Double
    /// Seconds left at the current speed, or null when unknown.
    public var eta: Double?
    public var attempts: Int
    public var priority: Int
    public var error: JobError?
    public var result: JobResult?
    public var createdAt: Date
    public var updatedAt: Date
    public var nextAttemptAt: Date?
    public var snapshot: String?
    public var user: String?
    public var history: [JobEvent]?
    /// What a queued job waits for before it can start: `network` (no route to its destination),
    /// `metered` (a metered connection the config says to spare) or `battery`; null otherwise.
    public var waiting: String?
    /// What the job is doing or waiting for, for people, when its state alone does not say:
    /// "retrying in 43s: HTTP 500 ...", "preparing the image", "waiting for the network",
    /// "sending again: ...", "waiting for the server's answer". Absent otherwise.
    public var activity: String?
    /// A queued or paused job's place in the queue's order, 1 for the next to start (paused jobs
    /// keep their place and count too); absent for other states, and in events, which would
    /// otherwise change every waiting job at each start. `job.list` and `job.get` give it.
    public var position: Int?
    /// `--image SPEC` as given, when the job asked for image preparation.
    public var image: String?
    /// What preparation made, once it ran.
    public var prepared: PreparedInfo?
    /// The batch the job was added in (every job of one `uploadctl add` shares one), if any.
    public var batch: JobID?
    /// Grows with every change of the job, across restarts too: of two views of one job, the
    /// one with the higher revision is the newer.
    public var revision: UInt64
    /// The token the adding app gave (`client_token`), if any.
    public var clientToken: String?
    /// The adding app's own data, as given.
    public var metadata: [String: String]?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, state, source, destination, `protocol`, speed, eta, attempts, priority, error, result, snapshot, user,
            history, waiting, activity, position, image, prepared, batch, revision, metadata
        case bytesTotal = "bytes_total"
        case bytesSent = "bytes_sent"
        case bytesAcked = "bytes_acked"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case nextAttemptAt = "next_attempt_at"
        case clientToken = "client_token"
    }

    /// The keys of a job object, for `events.subscribe`'s `job_fields`.
    public static let fieldNames: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))

    public init(
        id: JobID, state: JobState, source: String, destination: String, protocol: UploadProtocol,
        bytesTotal: Int64, bytesSent: Int64, bytesAcked: Int64, speed: Double, eta: Double?, attempts: Int,
        priority: Int, error: JobError?, result: JobResult?, createdAt: Date, updatedAt: Date, nextAttemptAt: Date?,
        snapshot: String?, user: String?, history: [JobEvent]?, waiting: String?, image: String? = nil,
        prepared: PreparedInfo? = nil, batch: JobID? = nil, revision: UInt64 = 0, clientToken: String? = nil,
        metadata: [String: String]? = nil, activity: String? = nil
    ) {
        self.id = id
        self.state = state
        self.source = source
        self.destination = destination
        self.protocolName = `protocol`.rawValue
        self.bytesTotal = bytesTotal
        self.bytesSent = bytesSent
        self.bytesAcked = bytesAcked
        self.speed = speed
        self.eta = eta
        self.attempts = attempts
        self.priority = priority
        self.error = error
        self.result = result
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.nextAttemptAt = nextAttemptAt
        self.snapshot = snapshot
        self.user = user
        self.history = history
        self.waiting = waiting
        self.image = image
        self.prepared = prepared
        self.batch = batch
        self.revision = revision
        self.clientToken = clientToken
        self.metadata = metadata
        self.activity = activity
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(JobID.self, forKey: .id)
        state = try container.decode(JobState.self, forKey: .state)
        source = try container.decode(String.self, forKey: .source)
        destination = try container.decode(String.self, forKey: .destination)
        protocolName = try container.decode(String.self, forKey: .protocol)
        bytesTotal = try container.decode(Int64.self, forKey: .bytesTotal)
        bytesSent = try container.decode(Int64.self, forKey: .bytesSent)
        bytesAcked = try container.decode(Int64.self, forKey: .bytesAcked)
        speed = try container.decode(Double.self, forKey: .speed)
        eta = try container.decodeIfPresent(Double.self, forKey: .eta)
        attempts = try container.decode(Int.self, forKey: .attempts)
        priority = try container.decode(Int.self, forKey: .priority)
        error = try container.decodeIfPresent(JobError.self, forKey: .error)
        result = try container.decodeIfPresent(JobResult.self, forKey: .result)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        nextAttemptAt = try container.decodeIfPresent(Date.self, forKey: .nextAttemptAt)
        snapshot = try container.decodeIfPresent(String.self, forKey: .snapshot)
        user = try container.decodeIfPresent(String.self, forKey: .user)
        history = try container.decodeIfPresent([JobEvent].self, forKey: .history)
        waiting = try container.decodeIfPresent(String.self, forKey: .waiting)
        activity = try container.decodeIfPresent(String.self, forKey: .activity)
        position = try container.decodeIfPresent(Int.self, forKey: .position)
        image = try container.decodeIfPresent(String.self, forKey: .image)
        prepared = try container.decodeIfPresent(PreparedInfo.self, forKey: .prepared)
        batch = try container.decodeIfPresent(JobID.self, forKey: .batch)
        // Absent from daemons before revisions: 0, older than any.
        revision = try container.decodeIfPresent(UInt64.self, forKey: .revision) ?? 0
        clientToken = try container.decodeIfPresent(String.self, forKey: .clientToken)
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(state, forKey: .state)
        try container.encode(source, forKey: .source)
        try container.encode(destination, forKey: .destination)
        try container.encode(protocolName, forKey: .protocol)
        try container.encode(bytesTotal, forKey: .bytesTotal)
        try container.encode(bytesSent, forKey: .bytesSent)
        try container.encode(bytesAcked, forKey: .bytesAcked)
        try container.encode(speed, forKey: .speed)
        try container.encode(eta, forKey: .eta)  // null when unknown, as the contract says
        try container.encode(attempts, forKey: .attempts)
        try container.encode(priority, forKey: .priority)
        try container.encode(error, forKey: .error)
        try container.encode(result, forKey: .result)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encodeIfPresent(snapshot, forKey: .snapshot)
        try container.encodeIfPresent(user, forKey: .user)
        try container.encodeIfPresent(history, forKey: .history)
        try container.encode(waiting, forKey: .waiting)
        try container.encodeIfPresent(activity, forKey: .activity)
        try container.encodeIfPresent(position, forKey: .position)
        try container.encodeIfPresent(image, forKey: .image)
        try container.encodeIfPresent(prepared, forKey: .prepared)
        try container.encodeIfPresent(batch, forKey: .batch)
        try container.encode(revision, forKey: .revision)
        try container.encodeIfPresent(clientToken, forKey: .clientToken)
        try container.encodeIfPresent(metadata, forKey: .metadata)
    }
}

/// The `job.progress` notification's params.
public struct JobProgressEvent: Codable, Sendable, Equatable {
    public var id: JobID
    public var bytesTotal: Int64
    public var bytesSent: Int64
    public var bytesAcked: Int64
    public var speed: Double
    public var eta: Double?
    /// The job's revision when this was measured (progress does not change it).
    public var revision: UInt64

    public init(
        id: JobID, bytesTotal: Int64, bytesSent: Int64, bytesAcked: Int64, speed: Double, eta: Double?,
        revision: UInt64 = 0
    ) {
        self.id = id
        self.revision = revision
        self.bytesTotal = bytesTotal
        self.bytesSent = bytesSent
        self.bytesAcked = bytesAcked
        self.speed = speed
        self.eta = eta
    }

    enum CodingKeys: String, CodingKey {
        case id, speed, eta, revision
        case bytesTotal = "bytes_total"
        case bytesSent = "bytes_sent"
        case bytesAcked = "bytes_acked"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(JobID.self, forKey: .id)
        bytesTotal = try container.decode(Int64.self, forKey: .bytesTotal)
        bytesSent = try container.decode(Int64.self, forKey: .bytesSent)
        bytesAcked = try container.decode(Int64.self, forKey: .bytesAcked)
        speed = try container.decode(Double.self, forKey: .speed)
        eta = try container.decodeIfPresent(Double.self, forKey: .eta)
        revision = try container.decodeIfPresent(UInt64.self, forKey: .revision) ?? 0
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(bytesTotal, forKey: .bytesTotal)
        try container.encode(bytesSent, forKey: .bytesSent)
        try container.encode(bytesAcked, forKey: .bytesAcked)
        try container.encode(speed, forKey: .speed)
        try container.encode(eta, forKey: .eta)  // null when unknown, as in the job object
        try container.encode(revision, forKey: .revision)
    }
}

/// `job.list`, and job methods given `{ids}` or `{all}`, answer `{jobs: [...]}`.
public struct JobList: Codable, Sendable {
    public var jobs: [JobInfo]
    /// For methods given several IDs: each job that could not be acted on, and why (the others
    /// were); absent when there were none.
    public var errors: [JobFailure]?
    /// For a page of `job.list`: the `after` of the next page; absent on the last one.
    public var next: JobID?

    public init(jobs: [JobInfo], errors: [JobFailure]? = nil, next: JobID? = nil) {
        self.jobs = jobs
        self.errors = errors?.isEmpty == true ? nil : errors
        self.next = next
    }
}

/// One job a method could not act on (by `id`), or one file `add` could not queue (by `source`),
/// with the JSON-RPC error it would have answered alone.
public struct JobFailure: Codable, Sendable, Equatable {
    public var id: JobID?
    public var source: String?
    public var code: Int
    public var message: String

    public init(id: JobID? = nil, source: String? = nil, error: RPCError) {
        self.id = id
        self.source = source
        self.code = error.code
        self.message = error.message
    }
}

/// `daemon.hello`'s answer.
public struct HelloInfo: Codable, Sendable {
    public var name: String
    public var version: String
    public var protocolVersion: Int
    public var methods: [String]
    public var protocols: [String]
    public var pid: Int32
    /// What this daemon can do beyond protocol version 1's first release (`Capability`); a client
    /// checks for a name before using what it stands for.
    public var capabilities: [String]?
    /// The preparation steps `job.add` takes (`image`).
    public var preparationSteps: [String]?

    public init(
        name: String, version: String, protocolVersion: Int, methods: [String], protocols: [String], pid: Int32,
        capabilities: [String]? = nil, preparationSteps: [String]? = nil
    ) {
        self.name = name
        self.version = version
        self.protocolVersion = protocolVersion
        self.methods = methods
        self.protocols = protocols
        self.pid = pid
        self.capabilities = capabilities
        self.preparationSteps = preparationSteps
    }

    /// The names in `capabilities`.
    public enum Capability: String, CaseIterable, Sendable {
        case batches, revisions, metadata, hooks, notifications, remotes, image
        case eventFilters = "events.filters"
        case eventSnapshot = "events.snapshot"
        case eventOverflow = "events.overflow"
        case eventStates = "events.states"
        case eventJobFields = "events.job_fields"
        case clientToken = "client_token"
        case listPages = "list.pages"
        case listJobFields = "list.job_fields"
        case clearJobFields = "clear.job_fields"
        case sourceIdentity = "source_identity"
        case fileField = "file_field"
        /// `position` in the job objects of `job.list` and `job.get`.
        case position
    }

    enum CodingKeys: String, CodingKey {
        case name, version, methods, protocols, pid, capabilities
        case protocolVersion = "protocol_version"
        case preparationSteps = "preparation_steps"
    }
}

/// `daemon.status`'s answer.
public struct DaemonStatus: Codable, Sendable {
    public var version: String
    public var pid: Int32
    public var uptime: Double
    /// Number of jobs in each state (every state present, zero or not).
    public var jobs: [String: Int]
    /// Sum of the running jobs' speeds, bytes/s.
    public var speed: Double
    public var maxTransfers: Int
    public var stateDirectory: String
    public var cacheDirectory: String
    public var socket: String
    public var journalBytes: Int64
    /// Damage found and set aside at start-up, if any.
    public var journalDamage: String?
    public var configWarnings: [String]
    /// The errors of the last reload that failed: that file was not applied, and the config
    /// loaded before it (with `configWarnings`) is still in use. Empty once a reload succeeds.
    public var configErrors: [String]?
    /// All uploads together, bytes per second (`uploadctl limit`); null: none.
    public var bandwidthLimit: Int64?
    /// The connection, the power, and the jobs held back for them; absent from daemons before it.
    public var conditions: DaemonConditions?

    public init(
        version: String, pid: Int32, uptime: Double, jobs: [String: Int], speed: Double, maxTransfers: Int,
        stateDirectory: String, cacheDirectory: String, socket: String, journalBytes: Int64, journalDamage: String?,
        configWarnings: [String], configErrors: [String] = [], bandwidthLimit: Int64? = nil,
        conditions: DaemonConditions? = nil
    ) {
        self.bandwidthLimit = bandwidthLimit
        self.conditions = conditions
        self.configErrors = configErrors.isEmpty ? nil : configErrors
        self.version = version
        self.pid = pid
        self.uptime = uptime
        self.jobs = jobs
        self.speed = speed
        self.maxTransfers = maxTransfers
        self.stateDirectory = stateDirectory
        self.cacheDirectory = cacheDirectory
        self.socket = socket
        self.journalBytes = journalBytes
        self.journalDamage = journalDamage
        self.configWarnings = configWarnings
    }

    enum CodingKeys: String, CodingKey {
        case version, pid, uptime, jobs, speed, socket
        case maxTransfers = "max_transfers"
        case stateDirectory = "state_directory"
        case cacheDirectory = "cache_directory"
        case journalBytes = "journal_bytes"
        case journalDamage = "journal_damage"
        case configWarnings = "config_warnings"
        case configErrors = "config_errors"
        case bandwidthLimit = "bandwidth_limit"
        case conditions
    }
}

/// `daemon.limit` params and answer: bytes per second for all uploads together, or null for none.
/// The params may also spell it as people do (`"5M"`, `"off"`).
public struct LimitParams: Codable, Sendable, Equatable, StrictParams {
    public var rate: JSONValue?

    public init(rate: JSONValue?) { self.rate = rate }

    public static let knownKeys: Set<String> = ["rate"]

    /// The lowest limit taken, 1 KiB/s: slower, a transfer's packets come so seldom that the
    /// upload looks stalled to the server and to people (`limit 1` meant 1 byte a second).
    public static let minimumRate: Int64 = 1024

    /// Why `bytes` a second is refused as a limit, or nil when it is fine.
    public static func problem(withRate bytes: Int64) -> String? {
        guard bytes < minimumRate else { return nil }
        return "a limit of \(ByteSize.format(bytes))/s is below the lowest, 1 KiB/s: uploads that slow look stalled; "
            + "give at least 1K, or off for no limit"
    }

    /// The limit asked for: nil for none.
    public func bytesPerSecond() throws(RPCError) -> Int64? {
        let bytes = try askedBytesPerSecond()
        if let bytes, let problem = Self.problem(withRate: bytes) { throw RPCError.invalidParams(problem) }
        return bytes
    }

    private func askedBytesPerSecond() throws(RPCError) -> Int64? {
        switch rate {
        case nil, .null?: return nil
        case .number(let number)?:
            guard number > 0, number < 1e15, number == number.rounded() else {
                throw RPCError.invalidParams(
                    "rate must be a whole number of bytes per second above 0, or null for none")
            }
            return Int64(number)
        case .string(let text)?:
            if ["off", "none", "0"].contains(text.lowercased()) { return nil }
            guard let bytes = try? ByteSize.parse(text), bytes > 0 else {
                throw RPCError.invalidParams("rate '\(text)' is not a size like 5M (bytes per second), or off")
            }
            return bytes
        default:
            throw RPCError.invalidParams("rate is a number of bytes per second, a size like \"5M\", or off")
        }
    }
}

/// `daemon.limit`'s answer.
public struct LimitResult: Codable, Sendable, Equatable {
    public var bandwidthLimit: Int64?

    public init(bandwidthLimit: Int64?) { self.bandwidthLimit = bandwidthLimit }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bandwidthLimit, forKey: .bandwidthLimit)  // null when none
    }

    enum CodingKeys: String, CodingKey {
        case bandwidthLimit = "bandwidth_limit"
    }
}

/// `daemon.reload`'s answer: the new config's warnings (unknown keys, secrets others can read).
public struct ReloadResult: Codable, Sendable {
    public var warnings: [String]
    public init(warnings: [String]) { self.warnings = warnings }
}

/// What preparation (`--image`) made of a job's source: `bytes_total` is `size` from then on.
public struct PreparedInfo: Codable, Sendable, Equatable {
    /// The bytes sent.
    public var size: Int64
    /// The source's size before preparation.
    public var originalSize: Int64
    /// SHA-256 of what is sent, lowercase hex: what the server must end up with.
    public var sha256: String
    /// The name on the server, when preparation changed it (`IMG_0001.HEIC` → `IMG_0001.jpg`).
    public var fileName: String?
    public var contentType: String?
    /// What the steps report: `width`, `height`, `original_width`, `original_height`, `format`,
    /// `quality`; `image` or `image_error` when the source went out as it was.
    public var details: [String: String]

    public init(
        size: Int64, originalSize: Int64, sha256: String, fileName: String?, contentType: String?,
        details: [String: String]
    ) {
        self.size = size
        self.originalSize = originalSize
        self.sha256 = sha256
        self.fileName = fileName
        self.contentType = contentType
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case size, sha256, details
        case originalSize = "original_size"
        case fileName = "file_name"
        case contentType = "content_type"
    }
}

/// What a waiter needs of a job: a `job.state` event or snapshot narrowed with `job_fields`
/// (`JobStatus.fields`) carries only this, and decodes as this.
public struct JobStatus: Decodable, Sendable, Equatable {
    public var id: JobID
    public var state: JobState
    public var revision: UInt64
    public var updatedAt: Date
    public var error: JobError?
    public var waiting: String?
    public var nextAttemptAt: Date?

    /// The `job_fields` that make a `JobStatus`.
    public static let fields = ["id", "state", "revision", "updated_at", "error", "waiting", "next_attempt_at"]

    enum CodingKeys: String, CodingKey {
        case id, state, revision, error, waiting
        case updatedAt = "updated_at"
        case nextAttemptAt = "next_attempt_at"
    }

    public init(_ job: JobInfo) {
        id = job.id
        state = job.state
        revision = job.revision
        updatedAt = job.updatedAt
        error = job.error
        waiting = job.waiting
        nextAttemptAt = job.nextAttemptAt
    }

    /// Reads a job from its parsed JSON as `init(from:)` does, without a `Decoder`: nil where that
    /// throws. A waiter reads each job it follows twice (the subscription's snapshot, then its end);
    /// through the generic decoders that was ~30% of `uploadctl wait`'s CPU for 20,000 small files.
    public init?(json: JSONValue) {
        guard case .object(let object) = json, case .number(let idNumber)? = object["id"],
            let id = UInt64(exactly: idNumber), case .string(let stateName)? = object["state"],
            let state = JobState(rawValue: stateName), case .string(let updated)? = object["updated_at"],
            let updatedAt = JSONCoding.date(from: updated)
        else { return nil }
        self.id = JobID(rawValue: id)
        self.state = state
        self.updatedAt = updatedAt
        switch object["revision"] {
        case nil, .null?: revision = 0
        case .number(let number)?:
            guard let revision = UInt64(exactly: number) else { return nil }
            self.revision = revision
        default: return nil
        }
        switch object["error"] {
        case nil, .null?: error = nil
        case let value?:
            guard let error = try? value.decode(JobError.self) else { return nil }
            self.error = error
        }
        switch object["waiting"] {
        case nil, .null?: waiting = nil
        case .string(let text)?: waiting = text
        default: return nil
        }
        switch object["next_attempt_at"] {
        case nil, .null?: nextAttemptAt = nil
        case .string(let text)?:
            guard let date = JSONCoding.date(from: text) else { return nil }
            nextAttemptAt = date
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(JobID.self, forKey: .id)
        state = try container.decode(JobState.self, forKey: .state)
        revision = try container.decodeIfPresent(UInt64.self, forKey: .revision) ?? 0
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        error = try container.decodeIfPresent(JobError.self, forKey: .error)
        waiting = try container.decodeIfPresent(String.self, forKey: .waiting)
        nextAttemptAt = try container.decodeIfPresent(Date.self, forKey: .nextAttemptAt)
    }
}
