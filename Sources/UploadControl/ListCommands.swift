import UploadClient
import UploadWire

/// `uploadctl list [--state STATE]...`: every job, or those in the given states, as a table.
struct ListCommand: ControlCommand {
    static let name = "list"
    static let abstract = "List jobs with their state and progress"
    static let synopsis = "[--state STATE]... [--batch N]"
    static let details = """
        Options:
          --state STATE   only jobs in this state (queued, running, paused, completed, failed,
                          canceled); repeatable
          --batch N       only the jobs of batch N (one add's jobs)

        With --json, prints {"jobs": [...]}, each job as the daemon wrote it.
        """
    static let options: [OptionSpec] = [.value("--state", "STATE"), .value("--batch", "N")]

    var states: [JobState]
    var batch: JobID?

    init(parsed: ParsedArguments) throws(UsageError) {
        try requireNoPositionals(parsed)
        states = try parsed.values("--state").map { (text) throws(UsageError) in
            try ArgumentValues.choice(text, option: "--state", as: JobState.self)
        }
        batch = try ArgumentValues.batch(parsed)
    }

    /// The `job.list` params.
    var params: ListParams { ListParams(states: states.isEmpty ? nil : states, batch: batch) }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        if context.json {
            try context.printJSON(RPCResult(json: try connection.listJobsJSON(params)))
        } else {
            let jobs = try connection.listJobs(params)
            context.print(lines: JobFormatting.listLines(jobs, width: context.terminalWidth))
        }
        return .success
    }
}

/// `uploadctl show ID`: everything about one job.
struct ShowCommand: ControlCommand {
    static let name = "show"
    static let abstract = "Show one job in detail, with its error, result and history"
    static let synopsis = "ID"
    static let details = "With --json, prints the job object."
    static let options: [OptionSpec] = []

    var id: JobID

    init(parsed: ParsedArguments) throws(UsageError) {
        guard let text = parsed.positionals.first else { throw UsageError("missing ID: name the job to show") }
        guard parsed.positionals.count == 1 else {
            throw UsageError("show takes one ID; 'uploadctl list' shows several")
        }
        id = try ArgumentValues.jobID(text)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(.get, JSONValue(encoding: JobSelection(id: id)))
        if context.json {
            try context.printJSON(result)
        } else {
            context.print(lines: DetailFormatting.jobLines(try result.decode(JobInfo.self)))
        }
        return .success
    }
}
