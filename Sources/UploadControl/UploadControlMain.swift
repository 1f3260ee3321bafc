import Foundation
import UploadCore

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
            output.standardError("uploadctl: \(error.message)\n\(error.hint)\n")
            return .usage
        }
        switch invocation {
        case .help(let text):
            output.standardOutput(text)
            return .success
        case .run(let command, let globals):
            let context = CommandContext(
                socketPath: SocketPath.resolve(option: globals.socketPath, environment: environment),
                json: globals.json, workingDirectory: workingDirectory, output: output)
            do {
                return try command.run(context)
            } catch let error as ControlClientError {
                context.printError(error.message)
                return error.exitCode
            } catch let error as RPCError {
                context.printError(error.message)
                return .failure
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
