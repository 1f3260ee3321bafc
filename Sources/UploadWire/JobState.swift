/// Where a job is in its life. The names are part of the public protocol.
public enum JobState: String, Codable, Sendable, CaseIterable {
    case queued
    case running
    case paused
    case completed
    case failed
    case canceled

    /// A job in a terminal state does nothing more until it is resumed (failed) or removed.
    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .canceled: return true
        case .queued, .running, .paused: return false
        }
    }

    /// A job that has a place in the queue (a position, a rank to move to or next to): queued, or
    /// paused where it stood.
    public var waitsItsTurn: Bool { self == .queued || self == .paused }
}
