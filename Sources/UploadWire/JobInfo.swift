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
    /// The watched folder (`[folder NAME]`) that took the file, if one did.
    public var folder: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, state, source, destination, `protocol`, speed, eta, attempts, priority, error, result, snapshot, user,
            history, waiting, activity, position, image, prepared, batch, revision, metadata,
            folder
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
        metadata: [String: String]? = nil, activity: String? = nil, folder: String? = nil
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
        self.folder = folder
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
        folder = try container.decodeIfPresent(String.self, forKey: .folder)
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
        try container.encodeIfPresent(folder, forKey: .folder)
    }
}
