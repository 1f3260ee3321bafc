import UploadCore

/// `uploadctl status`: the daemon's version, uptime, job counts and directories.
struct StatusCommand: ControlCommand {
    static let name = "status"
    static let abstract = "Show the daemon's state: version, uptime, jobs per state, speed, paths"
    static let synopsis = ""
    static let options: [OptionSpec] = []

    init(parsed: ParsedArguments) throws(UsageError) { try requireNoPositionals(parsed) }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(.status)
        if context.json {
            try context.printJSON(result)
        } else {
            context.print(lines: DetailFormatting.statusLines(try result.decode(DaemonStatus.self)))
        }
        return .success
    }
}

/// `uploadctl reload`: the daemon reads its configuration again.
struct ReloadCommand: ControlCommand {
    static let name = "reload"
    static let abstract = "Make the daemon read its configuration again"
    static let synopsis = ""
    static let options: [OptionSpec] = []

    init(parsed: ParsedArguments) throws(UsageError) { try requireNoPositionals(parsed) }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(.reload)
        if context.json { try context.printJSON(result) } else { context.print("reloaded") }
        return .success
    }
}

/// `uploadctl clear`: drops every completed, failed and canceled job.
struct ClearCommand: ControlCommand {
    static let name = "clear"
    static let abstract = "Drop completed, failed and canceled jobs and their cached files"
    static let synopsis = ""
    static let details = "With --json, prints {\"jobs\": [...]} with the jobs cleared."
    static let options: [OptionSpec] = []

    init(parsed: ParsedArguments) throws(UsageError) { try requireNoPositionals(parsed) }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(.clear)
        if context.json {
            try context.printJSON(result)
        } else {
            let count = try result.decode(JobList.self).jobs.count
            context.print("cleared \(count) job\(count == 1 ? "" : "s")")
        }
        return .success
    }
}
