/// `daemon.reload`'s answer: the new config's warnings (unknown keys, secrets others can read).
public struct ReloadResult: Codable, Sendable {
    public var warnings: [String]
    public init(warnings: [String]) { self.warnings = warnings }
}
