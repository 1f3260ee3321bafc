/// One uploadctl subcommand: how it is named and described, how it reads its arguments, and what it does.
///
/// Shaped like swift-argument-parser's `ParsableCommand`. `CommandTable.all` lists every command;
/// dispatch and `--help` both come from there.
protocol ControlCommand: Sendable {
    /// The word after `uploadctl`.
    static var name: String { get }
    /// One line for the command list.
    static var abstract: String { get }
    /// The arguments after the name, e.g. `ID...|--all`.
    static var synopsis: String { get }
    /// Lines explaining the arguments and options, for `--help`; may be empty.
    static var details: String { get }
    /// The options the command accepts (global options and `--help` are added by the caller).
    static var options: [OptionSpec] { get }

    /// Builds the command from its own arguments. Pure: no files, no daemon.
    init(parsed: ParsedArguments) throws(UsageError)

    /// Talks to the daemon and prints the outcome.
    func run(_ context: CommandContext) throws -> ExitCode

    /// Secrets given on the command line, hidden from `ps` before the command runs.
    var secretsOnCommandLine: [CommandLineSecret] { get }
}

extension ControlCommand {
    static var details: String { "" }

    var secretsOnCommandLine: [CommandLineSecret] { [] }

    /// Parses the command's own arguments (no global options), as the tests do.
    init(arguments: [String]) throws(UsageError) {
        do {
            self = try Self(parsed: ArgumentParser.parse(arguments, options: Self.options))
        } catch {
            throw UsageError(error.message, command: Self.name)
        }
    }

    /// The `--help` text, ending with the command's examples (`CommandExamples`).
    static var help: String {
        var text = "Usage: uploadctl [--socket PATH] [--json] \(name)\(synopsis.isEmpty ? "" : " \(synopsis)")\n\n"
        text += "\(abstract).\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        return text + CommandExamples.section(forCommand: name)
    }
}

/// Fails with a usage error unless no positional arguments were given.
func requireNoPositionals(_ parsed: ParsedArguments) throws(UsageError) {
    if let first = parsed.positionals.first { throw UsageError("unexpected argument '\(first)'") }
}
