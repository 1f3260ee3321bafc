/// What went wrong talking to the daemon, apart from the daemon's own JSON-RPC errors.
public enum ControlClientError: Error, Equatable {
    /// Connecting failed: no daemon, no socket, no permission.
    case unreachable(socketPath: String, reason: String)
    /// Something answers there that is not the user's own daemon (another user's socket or folder).
    case untrusted(socketPath: String, reason: String)
    /// The daemon closed the connection, or the connection failed, before the conversation ended.
    case connectionLost(socketPath: String, reason: String)
    /// The daemon sent something that is not the protocol.
    case unexpectedAnswer(String)

    /// The message printed after `uploadctl: `.
    public var message: String {
        switch self {
        case .unreachable(let path, let reason):
            return "cannot reach uploadd at \(path): \(reason); is it running? (systemctl --user start uploadd.socket)"
        case .untrusted(let path, let reason):
            return "refusing to talk to \(path): \(reason); remove it, or pass --socket with your own daemon's socket"
        case .connectionLost(let path, let reason):
            return "lost the connection to uploadd at \(path): \(reason)"
        case .unexpectedAnswer(let detail):
            return "unexpected answer from uploadd: \(detail)"
        }
    }
}
