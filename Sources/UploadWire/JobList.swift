import Foundation

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
    /// For a `job.add` of `sources`: the file's place in them, from 0.
    public var index: Int?
    public var code: Int
    public var message: String

    public init(id: JobID? = nil, source: String? = nil, index: Int? = nil, error: RPCError) {
        self.id = id
        self.source = source
        self.index = index
        self.code = error.code
        self.message = error.message
    }
}
