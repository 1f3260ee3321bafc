/// What a queued job waits for before it may start; the raw value is `JobInfo.waiting`.
enum WaitReason: String, CaseIterable, Sendable {
    case network, metered, battery

    var description: String {
        switch self {
        case .network: return "waiting for the network"
        case .metered: return "waiting for an unmetered connection"
        case .battery: return "waiting for mains power"
        }
    }
}
