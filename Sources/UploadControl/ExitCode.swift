import UploadClient

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

extension ControlClientError {
    var exitCode: ExitCode {
        switch self {
        case .unreachable, .untrusted, .connectionLost: return .unavailable
        case .unexpectedAnswer: return .failure
        }
    }
}
