/// uploadctl's exit statuses, from sysexits(3) where one fits.
public enum ExitCode: Int32, Sendable {
    case success = 0
    /// The daemon refused or failed the request, or a job did not complete.
    case failure = 1
    /// Bad command line (EX_USAGE).
    case usage = 64
    /// The daemon cannot be reached or the connection dropped (EX_UNAVAILABLE).
    case unavailable = 69
}

/// A mistake in the command line. Printed with a hint to the command's `--help`; exits 64.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var message: String
    /// The command whose help the hint points to, or nil for the top-level help.
    var command: String?

    init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }

    var description: String { message }

    /// The line that follows the message: `Try 'uploadctl add --help'.`
    var hint: String {
        if let command { return "Try 'uploadctl \(command) --help'." }
        return "Try 'uploadctl --help'."
    }
}

/// What went wrong talking to the daemon, apart from the daemon's own JSON-RPC errors.
enum ControlClientError: Error, Equatable {
    /// Connecting failed: no daemon, no socket, no permission.
    case unreachable(socketPath: String, reason: String)
    /// Something answers there that is not the user's own daemon (another user's socket or folder).
    case untrusted(socketPath: String, reason: String)
    /// The daemon closed the connection, or the connection failed, before the conversation ended.
    case connectionLost(socketPath: String, reason: String)
    /// The daemon sent something that is not the protocol.
    case unexpectedAnswer(String)

    /// The message printed after `uploadctl: `.
    var message: String {
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

    var exitCode: ExitCode {
        switch self {
        case .unreachable, .untrusted, .connectionLost: return .unavailable
        case .unexpectedAnswer: return .failure
        }
    }
}
