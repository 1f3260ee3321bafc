import UploadWire

/// A command that applies one job method to the jobs named (or, where allowed, to all jobs) and
/// prints `ID VERB` for each job the daemon returns.
protocol JobActionCommand: ControlCommand {
    static var method: ControlMethod { get }
    /// The past participle printed per job: `paused`.
    static var verb: String { get }
    /// Whether `--all` (or `allFlag`) may replace the IDs.
    static var acceptsAll: Bool { get }
    /// The flag that means every job it applies to: `--all`, or `--failed` for retry.
    static var allFlag: String { get }
    /// What `allFlag` selects, for the help.
    static var allHelp: String { get }
    /// What happened to one job, for people (`verb` unless a command says more).
    static func describe(_ job: JobInfo) -> String
    /// The jobs `allFlag` acts on, as in "nothing to pause: no job is queued or running".
    static var nothingToDoStates: String { get }

    var selection: JobSelection { get }
    init(selection: JobSelection)
}

extension JobActionCommand {
    static var allFlag: String { "--all" }
    /// `--state` narrows `--all`; retry's `--failed` is narrow already.
    static var filtersByState: Bool { acceptsAll && allFlag == "--all" }
    static var synopsis: String {
        acceptsAll ? "ID...|\(allFlag)|--batch N\(filtersByState ? " [--state STATE]..." : "")" : "ID...|--batch N"
    }
    static var options: [OptionSpec] {
        (acceptsAll ? [.flag(allFlag)] : []) + (filtersByState ? [.value("--state", "STATE")] : [])
            + [.value("--batch", "N")]
    }
    static var allHelp: String { "every job it applies to instead of the IDs named" }
    static var details: String {
        (acceptsAll ? "Options:\n  \(allFlag.padding(toLength: 15, withPad: " ", startingAt: 0))\(allHelp)\n" : "")
            + (filtersByState
                ? "  --state STATE  with \(allFlag) or --batch: only jobs in this state; repeatable\n" : "")
            + (acceptsAll ? "" : "Options:\n")
            + "  --batch N      every job of batch N (one add's jobs) it applies to\n\n"
            + "Prints '\(verb)' after each job's ID; with --json, {\"jobs\": [...]} as the daemon answered."
    }

    init(parsed: ParsedArguments) throws(UsageError) {
        let ids = try ArgumentValues.jobIDs(parsed.positionals)
        let states = try parsed.values("--state").map { (text) throws(UsageError) in
            try ArgumentValues.choice(text, option: "--state", as: JobState.self)
        }
        if let batch = try ArgumentValues.batch(parsed) {
            guard ids.isEmpty, !parsed.contains(Self.allFlag) else {
                throw UsageError("give job IDs, \(Self.acceptsAll ? "\(Self.allFlag) " : "")or --batch N, not several")
            }
            let narrowed = Self.filtersByState && !states.isEmpty ? states : nil
            if !Self.filtersByState && !states.isEmpty { throw UsageError("--state goes with --all") }
            self.init(selection: JobSelection(states: narrowed, batch: batch))
            return
        }
        if Self.acceptsAll, parsed.contains(Self.allFlag) {
            guard ids.isEmpty else { throw UsageError("give job IDs or \(Self.allFlag), not both") }
            self.init(selection: JobSelection(all: true, states: states.isEmpty ? nil : states))
            return
        }
        guard states.isEmpty else { throw UsageError("--state goes with \(Self.allFlag)") }
        guard !ids.isEmpty else {
            throw UsageError(
                "missing ID: name the jobs to \(Self.name)\(Self.acceptsAll ? ", or \(Self.allFlag)" : "")")
        }
        self.init(selection: JobSelection(ids: ids))
    }

    /// Acts on each job that can be and says so; each one that cannot is named with its reason
    /// on stderr, and the exit status is then 1 (as `kill` does with several PIDs).
    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        let result = try connection.call(Self.method, JSONValue(encoding: selection))
        let list = try result.decode(JobList.self)
        let errors = list.errors ?? []
        if list.jobs.isEmpty && errors.isEmpty, let batch = selection.batch {
            try Self.checkBatchExists(batch, on: connection)
        }
        if context.json {
            try context.printJSON(result)
        } else if list.jobs.isEmpty && errors.isEmpty {
            context.printError(nothingToDo)
        } else {
            context.print(lines: list.jobs.map { "\($0.id) \(Self.describe($0))" })
        }
        for failure in errors { context.printError(Self.text(of: failure)) }
        return errors.isEmpty ? .success : .failure
    }

    /// What happened to one job, for people: `paused`.
    static func describe(_ job: JobInfo) -> String { verb }
}

/// `uploadctl pause ID...|--all`.
struct PauseCommand: JobActionCommand {
    static let name = "pause"
    static let abstract = "Pause jobs; a running transfer stops and keeps what the server committed"
    static let method = ControlMethod.pause
    static let verb = "paused"
    static let acceptsAll = true
    static let nothingToDoStates = "is queued or running"
    var selection: JobSelection
}

/// `uploadctl resume ID...|--all`.
struct ResumeCommand: JobActionCommand {
    static let name = "resume"
    static let abstract = "Resume paused jobs (and failed ones, as retry does)"
    static let method = ControlMethod.resume
    static let verb = "resumed"
    static let acceptsAll = true
    static let nothingToDoStates = "is paused or failed"
    var selection: JobSelection
}

/// `uploadctl retry ID...|--failed`.
struct RetryCommand: JobActionCommand {
    static let name = "retry"
    static let abstract = "Restart failed jobs with a fresh attempt budget (resume is for paused ones)"
    static let method = ControlMethod.retry
    static let verb = "retrying"
    static let acceptsAll = true
    static let allFlag = "--failed"
    static let allHelp = "every failed job"
    static let nothingToDoStates = "has failed"
    var selection: JobSelection
}

/// `uploadctl cancel ID...|--all`.
struct CancelCommand: JobActionCommand {
    static let name = "cancel"
    static let abstract = "Cancel jobs; they stay listed as canceled until cleared"
    static let method = ControlMethod.cancel
    static let verb = "canceled"
    static let acceptsAll = true
    static let nothingToDoStates = "is queued, running, paused or failed"
    var selection: JobSelection
}

/// `uploadctl remove ID...|--all`: `remove --all` empties the whole list.
struct RemoveCommand: JobActionCommand {
    static let name = "remove"
    static let abstract = "Cancel jobs if needed and forget them, with their cached files"
    static let method = ControlMethod.remove
    static let verb = "removed"
    static let acceptsAll = true
    static let nothingToDoStates = "is listed"
    var selection: JobSelection
}

/// `uploadctl delete ID...`.
struct DeleteCommand: JobActionCommand {
    static let name = "delete"
    static let abstract = "Remove jobs and also delete what they uploaded from the server"
    static let method = ControlMethod.delete
    static let verb = "deleted"
    static let acceptsAll = false
    static let nothingToDoStates = "is listed"
    var selection: JobSelection

    /// A job that had not completed had nothing on the server: it was only removed. The daemon
    /// ends a deleted job's history with what the server said: `it was not on the server (404)`.
    static func describe(_ job: JobInfo) -> String {
        guard job.state == .completed else {
            return "removed (it had not uploaded anything, so nothing was on the server to delete)"
        }
        if let last = job.history?.last?.message, last.hasPrefix("it was not on the server") { return last }
        return verb
    }
}

/// `uploadctl priority ID N`: a queued job takes its new place in the queue at once.
struct PriorityCommand: ControlCommand {
    static let name = "priority"
    static let abstract = "Set a job's priority: higher starts first (-1000 to 1000; add's default is 0)"
    static let synopsis = "ID N"
    static let details = "Prints 'ID priority N'; with --json, the job object. The order survives a restart."
    static let options: [OptionSpec] = []

    var id: JobID
    var priority: Int

    init(parsed: ParsedArguments) throws(UsageError) {
        guard parsed.positionals.count == 2 else {
            throw UsageError("priority takes a job ID and a number: uploadctl priority 7 10")
        }
        id = try ArgumentValues.jobID(parsed.positionals[0])
        priority = try ArgumentValues.integer(parsed.positionals[1], option: "priority")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(
            .priority, JSONValue(encoding: PriorityParams(id: id, priority: priority)))
        if context.json {
            try context.printJSON(result)
        } else {
            let job = try result.decode(JobInfo.self)
            context.print(lines: ["\(job.id) priority \(job.priority)"])
        }
        return .success
    }
}

/// `uploadctl move ID --top|--bottom|--before ID|--after ID`.
struct MoveCommand: ControlCommand {
    static let name = "move"
    static let abstract = "Move a queued or paused job in the queue"
    static let synopsis = "ID --top|--bottom|--before ID|--after ID"
    static let details = """
        Options:
          --top          start it next
          --bottom       after every other waiting job
          --before ID    right before job ID (taking its priority)
          --after ID     right after job ID (taking its priority)

        Prints 'ID moved'; with --json, the job object. The order survives a restart.
        """
    static let options: [OptionSpec] = [
        .flag("--top"), .flag("--bottom"), .value("--before", "ID"), .value("--after", "ID"),
    ]

    var params: MoveParams

    init(parsed: ParsedArguments) throws(UsageError) {
        guard parsed.positionals.count == 1 else { throw UsageError("move takes one job ID and where to move it") }
        params = MoveParams(id: try ArgumentValues.jobID(parsed.positionals[0]))
        if parsed.contains("--top") { params.top = true }
        if parsed.contains("--bottom") { params.bottom = true }
        if let before = parsed.value("--before") { params.before = try ArgumentValues.jobID(before) }
        if let after = parsed.value("--after") { params.after = try ArgumentValues.jobID(after) }
        let chosen =
            [params.top, params.bottom].compactMap { $0 }.count + [params.before, params.after].compactMap { $0 }.count
        guard chosen == 1 else { throw UsageError("say where: one of --top, --bottom, --before ID or --after ID") }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result = try context.connect().call(.move, JSONValue(encoding: params))
        if context.json {
            try context.printJSON(result)
        } else {
            context.print(lines: ["\(try result.decode(JobInfo.self).id) moved"])
        }
        return .success
    }
}
