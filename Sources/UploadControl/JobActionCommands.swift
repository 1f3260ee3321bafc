import UploadCore

/// A command that applies one job method to the jobs named (or, where allowed, to all jobs) and
/// prints `ID VERB` for each job the daemon returns.
protocol JobActionCommand: ControlCommand {
    static var method: ControlMethod { get }
    /// The past participle printed per job: `paused`.
    static var verb: String { get }
    /// Whether `--all` may replace the IDs.
    static var acceptsAll: Bool { get }

    var selection: JobSelection { get }
    init(selection: JobSelection)
}

extension JobActionCommand {
    static var synopsis: String { acceptsAll ? "ID...|--all" : "ID..." }
    static var options: [OptionSpec] { acceptsAll ? [.flag("--all")] : [] }
    static var details: String {
        (acceptsAll ? "Options:\n  --all   every job instead of the IDs named\n\n" : "")
            + "Prints '\(verb)' after each job's ID; with --json, {\"jobs\": [...]} as the daemon answered."
    }

    init(parsed: ParsedArguments) throws(UsageError) {
        let ids = try ArgumentValues.jobIDs(parsed.positionals)
        if Self.acceptsAll, parsed.contains("--all") {
            guard ids.isEmpty else { throw UsageError("give job IDs or --all, not both") }
            self.init(selection: JobSelection(all: true))
            return
        }
        guard !ids.isEmpty else {
            throw UsageError("missing ID: name the jobs to \(Self.name)\(Self.acceptsAll ? ", or --all" : "")")
        }
        self.init(selection: JobSelection(ids: ids))
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(Self.method, JSONValue(encoding: selection))
        if context.json {
            try context.printJSON(result)
        } else {
            context.print(lines: try result.decode(JobList.self).jobs.map { "\($0.id) \(Self.verb)" })
        }
        return .success
    }
}

/// `uploadctl pause ID...|--all`.
struct PauseCommand: JobActionCommand {
    static let name = "pause"
    static let abstract = "Pause jobs; a running transfer stops and keeps what the server committed"
    static let method = ControlMethod.pause
    static let verb = "paused"
    static let acceptsAll = true
    var selection: JobSelection
}

/// `uploadctl resume ID...|--all`.
struct ResumeCommand: JobActionCommand {
    static let name = "resume"
    static let abstract = "Resume paused or failed jobs"
    static let method = ControlMethod.resume
    static let verb = "resumed"
    static let acceptsAll = true
    var selection: JobSelection
}

/// `uploadctl cancel ID...`.
struct CancelCommand: JobActionCommand {
    static let name = "cancel"
    static let abstract = "Cancel jobs; they stay listed as canceled until cleared"
    static let method = ControlMethod.cancel
    static let verb = "canceled"
    static let acceptsAll = false
    var selection: JobSelection
}

/// `uploadctl remove ID...`.
struct RemoveCommand: JobActionCommand {
    static let name = "remove"
    static let abstract = "Cancel jobs if needed and forget them, with their cached files"
    static let method = ControlMethod.remove
    static let verb = "removed"
    static let acceptsAll = false
    var selection: JobSelection
}

/// `uploadctl delete ID...`.
struct DeleteCommand: JobActionCommand {
    static let name = "delete"
    static let abstract = "Remove jobs and also delete what they uploaded from the server"
    static let method = ControlMethod.delete
    static let verb = "deleted"
    static let acceptsAll = false
    var selection: JobSelection
}
