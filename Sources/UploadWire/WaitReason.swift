/// What a queued job waits for before it may start: `JobInfo.waiting`'s values, in the order
/// `status` lists them, and how people read them. The daemon and uploadctl share this one list.
public enum WaitReason: String, CaseIterable, Sendable {
    case network, metered, battery

    public var description: String {
        switch self {
        case .network: return "waiting for the network"
        case .metered: return "waiting for an unmetered connection"
        case .battery: return "waiting for mains power"
        }
    }

    /// How many of `reasons` are each reason; every reason is a key, zero or not.
    public static func counts(of reasons: some Sequence<WaitReason>) -> [WaitReason: Int] {
        var counts = Dictionary(uniqueKeysWithValues: allCases.map { ($0, 0) })
        for reason in reasons { counts[reason, default: 0] += 1 }
        return counts
    }
}
