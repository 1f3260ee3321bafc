import UploadWire

/// Every command, in the order `--help` lists them. Dispatch and help both read this table.
enum CommandTable {
    static let all: [any ControlCommand.Type] = [
        AddCommand.self, ListCommand.self, ShowCommand.self, StatusCommand.self, ReloadCommand.self,
        PauseCommand.self, ResumeCommand.self, RetryCommand.self, CancelCommand.self, RemoveCommand.self,
        PriorityCommand.self, MoveCommand.self, LimitCommand.self, ClearCommand.self, TopCommand.self,
        DeleteCommand.self, WaitCommand.self, WatchCommand.self, RemotesCommand.self, FoldersCommand.self,
    ]

    static func command(named name: String) -> (any ControlCommand.Type)? {
        all.first { $0.name == name }
    }

    /// `uploadctl --help`, ending with a few examples (`CommandExamples.overview`).
    static var help: String {
        let width = all.map { command in command.name.count }.max() ?? 0
        let commands = all.map { command in
            "  " + command.name + String(repeating: " ", count: width - command.name.count) + "  " + command.abstract
        }
        return """
            Usage: uploadctl [--socket PATH] [--json] COMMAND ...

            Controls uploadd, the background upload daemon, through its control socket.

            Commands:
            \(commands.joined(separator: "\n"))

            Global options (before or after the command):
              --socket PATH   the daemon's socket; default $UPLOADD_SOCKET, else
                              $XDG_RUNTIME_DIR/uploadd/control.sock, else /tmp/uploadd-UID/control.sock
              --json          print JSON for programs instead of text for people
              -h, --help      show help; 'uploadctl help COMMAND' or 'uploadctl COMMAND --help'
                              show a command's options
              --version       print uploadctl's version

            Exit status: 0 success, 1 failure, 64 usage error, 69 daemon unreachable.

            """ + CommandExamples.section(CommandExamples.overview)
    }
}

/// The options every command takes, wherever they appear.
struct GlobalOptions: Sendable, Equatable {
    /// `--socket PATH`, if given.
    var socketPath: String?
    /// `--json`.
    var json = false

    static let specs: [OptionSpec] = [
        .value("--socket", "PATH"), .flag("--json"), .flag("--help"), .flag("--version"),
    ]
    static let names: Set<String> = Set(specs.map(\.name))

    mutating func take(_ parsed: ParsedArguments) {
        if let socket = parsed.value("--socket") { socketPath = socket }
        if parsed.contains("--json") { json = true }
    }
}

/// What a command line asks for: some help text, or a command to run.
enum Invocation {
    /// Help to print on stdout, exit 0.
    case help(String)
    case run(any ControlCommand, GlobalOptions)

    /// Reads a command line (without the program name). Pure: no environment, no files.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        // Global options before the command: stop at the first word that is not an option.
        var globals = GlobalOptions()
        var leading: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex, arguments[index].hasPrefix("-"), arguments[index] != "-" {
            if arguments[index] == "--" {
                index += 1
                break
            }
            leading.append(arguments[index])
            if arguments[index] == "--socket" && index + 1 < arguments.endIndex {
                leading.append(arguments[index + 1])
                index += 1
            }
            index += 1
        }
        let before = try ArgumentParser.parse(leading, options: GlobalOptions.specs)
        if before.contains("--help") { return .help(CommandTable.help) }
        if before.contains("--version") { return .help("uploadctl \(UploaddVersion.string)\n") }
        globals.take(before)

        guard index < arguments.endIndex else { throw UsageError("missing command") }
        let name = arguments[index]
        let rest = Array(arguments[(index + 1)...])
        if name == "help" { return try help(for: rest) }
        guard let command = CommandTable.command(named: name) else {
            throw UsageError("unknown command '\(name)'")
        }
        do {
            let parsed = try ArgumentParser.parse(rest, options: command.options + GlobalOptions.specs)
            if parsed.contains("--help") { return .help(command.help) }
            if parsed.contains("--version") { return .help("uploadctl \(UploaddVersion.string)\n") }
            globals.take(parsed)
            return .run(try command.init(parsed: parsed.removing(GlobalOptions.names)), globals)
        } catch {
            throw UsageError(error.message, command: name)
        }
    }

    /// `uploadctl help [COMMAND]`.
    private static func help(for arguments: [String]) throws(UsageError) -> Invocation {
        guard let name = arguments.first else { return .help(CommandTable.help) }
        guard arguments.count == 1 else { throw UsageError("help takes one command name") }
        guard let command = CommandTable.command(named: name) else { throw UsageError("unknown command '\(name)'") }
        return .help(command.help)
    }
}
