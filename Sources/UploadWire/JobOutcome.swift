import Foundation

/// A classified error, as shown in a job's `error` field.
public struct JobError: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// A stable, machine-readable class: `network`, `timeout`, `stalled`, `http`, `tls`, `source`,
    /// `config`, `protocol`, `io`, `no_space`, `canceled`.
    public var code: String
    /// What happened and, where it helps, what to do about it.
    public var message: String
    /// The HTTP status, when the server answered.
    public var status: Int?

    public init(code: String, message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { message }
}

/// What the server said when the upload finished.
public struct JobResult: Codable, Sendable, Equatable {
    /// Where the uploaded file can be found, when known.
    public var url: String?
    /// The final HTTP status, when HTTP was used.
    public var status: Int?
    /// The start of the final response body (capped), for post and block uploads.
    public var body: String?

    public init(url: String? = nil, status: Int? = nil, body: String? = nil) {
        self.url = url
        self.status = status
        self.body = body
    }
}

/// One line of a job's history: what happened and when.
public struct JobEvent: Codable, Sendable, Equatable {
    public var at: Date
    public var message: String

    public init(at: Date, message: String) {
        self.at = at
        self.message = message
    }
}
