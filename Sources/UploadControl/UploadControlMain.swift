import Foundation
import UploadClient
import UploadWire

/// uploadctl's entry point, kept out of `main.swift` so that it can be tested.
public enum UploadControlMain {
    /// Runs one command line and returns the exit status.
    ///
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - environment: read for `UPLOADD_SOCKET` and `XDG_RUNTIME_DIR`; the process's by default.
    public static func run(
        arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        run(
            arguments: arguments, environment: environment,
            workingDirectory: FileManager.default.currentDirectoryPath, output: .process
        ).rawValue
    }

    static func run(
        arguments: [String], environment: [String: String], workingDirectory: String, output: OutputStreams
    ) -> ExitCode {
        let invocation: Invocation
        do {
            invocation = try Invocation.parse(arguments)
        } catch {
            output.standardError("uploadctl: \(TerminalText.escaped(error.message))\n\(error.hint)\n")
            return .usage
        }
        switch invocation {
        case .help(let text):
            // 80 columns, or the terminal's when narrower.
            let terminal = output.isTerminal ? Self.terminalWidth(environment: environment) : HelpText.width
            output.standardOutput(HelpText.wrapped(text, width: min(terminal, HelpText.width)))
            return .success
        case .run(let command, let globals):
            let context = CommandContext(
                socketPath: SocketLocation.resolve(option: globals.socketPath, environment: environment),
                json: globals.json, workingDirectory: workingDirectory, output: output,
                terminalWidth: output.isTerminal ? Self.terminalWidth(environment: environment) : nil)
            if let notice = SocketLocation.foreignRuntimeDirectory(option: globals.socketPath, environment: environment)
            {
                context.printError(notice)
            }
            let secrets = command.secretsOnCommandLine
            if !secrets.isEmpty { output.hideArguments(secrets) }
            if secrets.contains(where: \.warns) { context.printError(CommandLineSecret.warning) }
            do {
                return try command.run(context)
            } catch let error as ControlClientError {
                context.printError(error.message)
                return error.exitCode
            } catch let error as UsageError {
                context.printError(error.message)
                return .usage
            } catch let error as RPCError {
                context.printError(error.messageForPeople)
                if context.json { try? context.printJSON(ErrorOutcome(error: error)) }
                return error.code == RPCError.invalidParamsCode ? .usage : .failure
            } catch is DecodingError {
                context.printError(ControlClientError.unexpectedAnswer("an answer of the wrong shape").message)
                return .failure
            } catch {
                context.printError("\(error)")
                return .failure
            }
        }
    }
}

extension UploadControlMain {
    /// The terminal's columns (TIOCGWINSZ on stdout), else `COLUMNS`, else 80.
    static func terminalWidth(environment: [String: String]) -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return environment["COLUMNS"].flatMap(Int.init) ?? 80
    }
}

/// `--json` output of a command the daemon refused: `{"error": {"code", "message"}}`.
struct ErrorOutcome: Encodable {
    var error: RPCError
}
