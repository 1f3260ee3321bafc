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
        /// Watched folders: `folder.list`, `folder.pause`, `folder.resume`, and `folder` in the
        /// job objects of their jobs.
        case folders
        /// `job.add` takes `sources`: many files in one request (`AddParams.readSources`).
        case sources
    }

    enum CodingKeys: String, CodingKey {
        case name, version, methods, protocols, pid, capabilities
        case protocolVersion = "protocol_version"
        case preparationSteps = "preparation_steps"
    }
}
