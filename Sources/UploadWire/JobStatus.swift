import Foundation

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
