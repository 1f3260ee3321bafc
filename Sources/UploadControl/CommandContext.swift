import Foundation
import Glibc
import UploadClient
import UploadWire

/// Where output goes. Commands write whole strings; each call is one write, so lines are never torn.
struct OutputStreams {
    var standardOutput: (String) -> Void
    var standardError: (String) -> Void
    /// Whether standard output is a terminal (tests capture output: it is not).
    var isTerminal = false
    /// Hides secrets from what `ps` shows of the command line (tests keep them).
    var hideArguments: ([CommandLineSecret]) -> Void = { _ in }

    /// The process's stdout and stderr, and its arguments.
    static var process: OutputStreams {
        OutputStreams(
            standardOutput: { writeAll($0, to: STDOUT_FILENO) }, standardError: { writeAll($0, to: STDERR_FILENO) },
            isTerminal: isatty(STDOUT_FILENO) == 1, hideArguments: ProcessArguments.hide)
    }

    /// Writes without buffering, so `watch` lines reach a pipe as they happen.
    private static func writeAll(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { buffer in
                try? syscall("write") { Glibc.write(descriptor, buffer.baseAddress, buffer.count) }
            }
            guard let written, written > 0 else { return }  // a closed pipe: nothing more to say
            bytes = bytes.dropFirst(written)
        }
    }
}

/// What a command needs to run: the global options, the working directory, and where to print.
struct CommandContext {
    var socketPath: String
    /// `--json`: print JSON documents for programs instead of text for people.
    var json: Bool
    /// For making `add`'s relative paths absolute.
    var workingDirectory: String
    var output: OutputStreams
    /// Columns of the terminal stdout is, or nil when it is not one (then whole values are printed).
    var terminalWidth: Int? = nil

    /// Opens a connection to the daemon; fails with `ControlClientError.unreachable`.
    func connect() throws(ControlClientError) -> DaemonConnection {
        try DaemonConnection(socketPath: socketPath)
    }

    /// Prints a line for people (a newline is added); control characters in it are shown escaped.
    func print(_ line: String) { output.standardOutput(TerminalText.escaped(line) + "\n") }

    /// Prints several lines for people in one write.
    func print(lines: [String]) {
        if !lines.isEmpty {
            output.standardOutput(lines.map { TerminalText.escaped($0) }.joined(separator: "\n") + "\n")
        }
    }

    /// Prints `uploadctl: MESSAGE` on stderr, control characters escaped; a message of several
    /// lines (the daemon's, say) gets the prefix on each.
    func printError(_ message: String) {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        output.standardError(lines.map { "uploadctl: \(TerminalText.escaped(String($0)))\n" }.joined())
    }

    /// Prints a value as one JSON document on one line, with the protocol's encoder.
    func printJSON<Value: Encodable>(_ value: Value) throws {
        let data = try JSONCoding.encoder.encode(value)
        output.standardOutput(String(decoding: data, as: UTF8.self) + "\n")
    }

    /// The daemon's answer as it came (it uses the same encoder settings).
    func printJSON(_ result: RPCResult) throws {
        output.standardOutput(String(decoding: result.json, as: UTF8.self) + "\n")
    }
}
