import Foundation

/// `folder.pause` and `folder.resume` params: the `[folder NAME]` section's name.
public struct FolderParams: Codable, Sendable, Equatable, StrictParams {
    public var name: String

    public init(name: String) { self.name = name }

    public static let knownKeys: Set<String> = ["name"]
}

/// A watched folder (`[folder NAME]`) as `folder.list` shows it: its rule, its state, and what
/// it took.
public struct FolderInfo: Codable, Sendable, Equatable {
    /// What the folder is doing. An open set, as a job's state is not: clients show a state they
    /// do not know as it is.
    public enum State: String, Sendable {
        /// Watched: files that appear are taken once quiet.
        case watching
        /// Paused with `folder.pause`: nothing is taken, and its jobs are paused, until resumed.
        case paused
        /// Its folder is missing: it is watched once it is there (`reason` says which).
        case waiting
        /// It cannot be watched, or not wholly (`reason` says why and what to do).
        case failing
        /// Not scanned yet: uploadd started or the rule was reloaded a moment ago.
        case starting
    }

    /// The last file the folder uploaded that is still in the queue.
    public struct LastUpload: Codable, Sendable, Equatable {
        public var id: JobID
        public var source: String
        /// When its upload completed.
        public var at: Date

        public init(id: JobID, source: String, at: Date) {
            self.id = id
            self.source = source
            self.at = at
        }
    }

    public var name: String
    public var path: String
    /// `to`, as written in the config (a URL, redacted, or `remote:path`).
    public var destination: String
    /// An open set: see `State`.
    public var stateName: String
    public var state: State? { State(rawValue: stateName) }
    public var reason: String?
    /// Files (versions of files) the folder took, whatever became of them.
    public var taken: Int
    /// Of those, waiting or being uploaded (queued, running or paused).
    public var queued: Int
    public var uploaded: Int
    /// Failed or canceled: not taken again until they change.
    public var failed: Int
    public var lastUpload: LastUpload?

    public init(
        name: String, path: String, destination: String, state: State, reason: String?, taken: Int, queued: Int,
        uploaded: Int, failed: Int, lastUpload: LastUpload?
    ) {
        self.name = name
        self.path = path
        self.destination = destination
        self.stateName = state.rawValue
        self.reason = reason
        self.taken = taken
        self.queued = queued
        self.uploaded = uploaded
        self.failed = failed
        self.lastUpload = lastUpload
    }

    enum CodingKeys: String, CodingKey {
        case name, path, reason, taken, queued, uploaded, failed
        case destination = "to"
        case stateName = "state"
        case lastUpload = "last_upload"
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(path, forKey: .path)
        try container.encode(destination, forKey: .destination)
        try container.encode(stateName, forKey: .stateName)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(taken, forKey: .taken)
        try container.encode(queued, forKey: .queued)
        try container.encode(uploaded, forKey: .uploaded)
        try container.encode(failed, forKey: .failed)
        try container.encode(lastUpload, forKey: .lastUpload)  // null when none
    }
}

/// `folder.list`'s answer: every `[folder NAME]` of the config, in the order of its sections.
public struct FolderList: Codable, Sendable, Equatable {
    public var folders: [FolderInfo]

    public init(folders: [FolderInfo]) { self.folders = folders }
}
