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
    /// Watched folders that are not watched, each with why and what to do (`[folder NAME] ...`);
    /// absent when every folder is watched.
    public var folderProblems: [String]?

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
        case folderProblems = "folder_problems"
    }
}
