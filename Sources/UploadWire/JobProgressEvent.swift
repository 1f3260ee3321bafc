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
