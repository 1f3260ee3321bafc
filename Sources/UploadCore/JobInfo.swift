import Foundation

/// A job as clients see it (`--json`, `job.get`, events). Secrets are never part of it.
public struct JobInfo: Codable, Sendable, Equatable {
    public var id: JobID
    public var state: JobState
    public var source: String
    public var destination: String
    public var `protocol`: UploadProtocol
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

    enum CodingKeys: String, CodingKey {
        case id, state, source, destination, `protocol`, speed, eta, attempts, priority, error, result, snapshot, user,
            history
        case bytesTotal = "bytes_total"
        case bytesSent = "bytes_sent"
        case bytesAcked = "bytes_acked"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case nextAttemptAt = "next_attempt_at"
    }

    public init(
        job: Job, bytesSent: Int64 = 0, speed: Double = 0, includeHistory: Bool = false
    ) {
        id = job.id
        state = job.state
        source = job.spec.source
        destination = Redaction.redactURL(job.spec.destination)
        `protocol` = job.effectiveProtocol
        bytesTotal = job.bytesTotal
        self.bytesSent = bytesSent
        bytesAcked = job.bytesAcked
        self.speed = speed
        let remaining = Double(max(job.bytesTotal - job.bytesAcked, 0))
        eta = speed > 0 && job.state == .running ? (remaining / speed).rounded() : nil
        attempts = job.attempts
        priority = job.spec.priority
        error = job.error
        result = job.result
        createdAt = job.createdAt
        updatedAt = job.updatedAt
        nextAttemptAt = job.nextAttemptAt
        snapshot = job.snapshot?.kind.rawValue
        user = job.spec.userName
        history = includeHistory ? job.history : nil
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(state, forKey: .state)
        try container.encode(source, forKey: .source)
        try container.encode(destination, forKey: .destination)
        try container.encode(`protocol`, forKey: .protocol)
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

    public init(id: JobID, bytesTotal: Int64, bytesSent: Int64, bytesAcked: Int64, speed: Double, eta: Double?) {
        self.id = id
        self.bytesTotal = bytesTotal
        self.bytesSent = bytesSent
        self.bytesAcked = bytesAcked
        self.speed = speed
        self.eta = eta
    }

    enum CodingKeys: String, CodingKey {
        case id, speed, eta
        case bytesTotal = "bytes_total"
        case bytesSent = "bytes_sent"
        case bytesAcked = "bytes_acked"
    }
}

/// `job.list`, and job methods given `{ids}` or `{all}`, answer `{jobs: [...]}`.
public struct JobList: Codable, Sendable {
    public var jobs: [JobInfo]
    public init(jobs: [JobInfo]) { self.jobs = jobs }
}

/// `daemon.hello`'s answer.
public struct HelloInfo: Codable, Sendable {
    public var name: String
    public var version: String
    public var protocolVersion: Int
    public var methods: [String]
    public var protocols: [String]
    public var pid: Int32

    public init(name: String, version: String, protocolVersion: Int, methods: [String], protocols: [String], pid: Int32)
    {
        self.name = name
        self.version = version
        self.protocolVersion = protocolVersion
        self.methods = methods
        self.protocols = protocols
        self.pid = pid
    }

    enum CodingKeys: String, CodingKey {
        case name, version, methods, protocols, pid
        case protocolVersion = "protocol_version"
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

    public init(
        version: String, pid: Int32, uptime: Double, jobs: [String: Int], speed: Double, maxTransfers: Int,
        stateDirectory: String, cacheDirectory: String, socket: String, journalBytes: Int64, journalDamage: String?,
        configWarnings: [String]
    ) {
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
    }
}
