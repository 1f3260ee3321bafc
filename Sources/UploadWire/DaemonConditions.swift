/// The connection and the power as the daemon sees them (`daemon.status`'s `conditions`), and the
/// queued jobs held back for them or for the network.
public struct DaemonConditions: Codable, Sendable, Equatable {
    /// Whether the connection is metered, as NetworkManager says. Nil: not known (no system bus,
    /// or NetworkManager does not answer on it), which counts as not metered.
    public var metered: Bool?
    /// Whether the machine runs on battery, as UPower says. Nil: not known, which counts as on
    /// mains power.
    public var onBattery: Bool?
    /// Queued jobs held back, by what they wait for (the values of `JobInfo.waiting`: `network`,
    /// `metered`, `battery`); every reason is a key, zero or not.
    public var waiting: [String: Int]

    public init(metered: Bool?, onBattery: Bool?, waiting: [String: Int]) {
        self.metered = metered
        self.onBattery = onBattery
        self.waiting = waiting
    }

    enum CodingKeys: String, CodingKey {
        case metered, waiting
        case onBattery = "on_battery"
    }

    /// As the synthesized encoding, but a value not known is there as null: a script finds out
    /// that it is not known without knowing that a missing key means so.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(metered, forKey: .metered)
        try container.encode(onBattery, forKey: .onBattery)
        try container.encode(waiting, forKey: .waiting)
    }

    /// The connection, for people and the log: "metered", "not metered", or why it is not known.
    public static func connectionText(_ metered: Bool?) -> String {
        switch metered {
        case true?: return "metered"
        case false?: return "not metered"
        case nil: return "not known (NetworkManager does not answer on the system bus), counted as not metered"
        }
    }

    /// The power, for people and the log: "on battery", "on mains", or why it is not known.
    public static func powerText(_ onBattery: Bool?) -> String {
        switch onBattery {
        case true?: return "on battery"
        case false?: return "on mains"
        case nil: return "not known (UPower does not answer on the system bus), counted as on mains"
        }
    }
}
