import UploadWire

/// `uploadctl wait ID... [--timeout SECONDS]`: blocks until the jobs end.
struct WaitCommand: ControlCommand {
    static let name = "wait"
    static let abstract = "Wait until jobs have ended; exit 0 when all completed, 1 otherwise"
    static let synopsis = "ID...|--batch N [--timeout SECONDS]"
    static let details = """
        Options:
          --batch N           every job of batch N (one add's jobs) instead of IDs
          --timeout SECONDS   give up after this long (exit 1); fractions allowed

        Prints nothing when every job completed; each failed or canceled job is named on stderr.
        With --json, prints {"jobs": [...]} with each job's last state.
        """
    static let options: [OptionSpec] = [.value("--timeout", "SECONDS"), .value("--batch", "N")]

    var ids: [JobID]
    var batch: JobID?
    var timeout: Double?

    init(parsed: ParsedArguments) throws(UsageError) {
        ids = try ArgumentValues.jobIDs(parsed.positionals)
        batch = try ArgumentValues.batch(parsed)
        guard ids.isEmpty || batch == nil else { throw UsageError("give job IDs or --batch N, not both") }
        guard !ids.isEmpty || batch != nil else {
            throw UsageError("missing ID: name the jobs to wait for, or --batch N")
        }
        timeout = try parsed.value("--timeout").map { (text) throws(UsageError) in
            try ArgumentValues.seconds(text, option: "--timeout")
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let deadline = JobWaiter.deadline(after: timeout)
        return try JobWaiter.waitAndReport(
            batch.map { .batch($0) } ?? .ids(ids), on: context.connect(), until: deadline, timeout: timeout,
            context: context)
    }
}

/// `uploadctl watch [ID...]`: prints events as they happen.
struct WatchCommand: ControlCommand {
    static let name = "watch"
    static let abstract = "Print job events as they happen, one line each"
    static let synopsis = "[ID...]"
    static let details = """
        Without IDs, follows every job until interrupted. With IDs, stops once all of them have
        ended: exit 0 when all completed, 1 otherwise. With --json, prints each notification's
        params (a job object for state changes, a progress object for progress, {"id": N} when a job is
        removed) as one JSON line.
        """
    static let options: [OptionSpec] = []

    var ids: [JobID]

    init(parsed: ParsedArguments) throws(UsageError) {
        ids = try ArgumentValues.jobIDs(parsed.positionals)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        guard !ids.isEmpty else {
            _ = try connection.call(.subscribe, JSONValue(encoding: SubscribeParams()))
            if let bars = LiveBars.forPeople(context) {
                // The jobs already sending get their names now: progress events carry none.
                for job in try connection.listJobs(ListParams(states: [.running])) { bars.know(job) }
                while let notification = try connection.nextNotification(until: nil) { bars.follow(notification) }
                return .success
            }
            var states: [JobID: JobState] = [:]
            while let notification = try connection.nextNotification(until: nil) {
                if notification.method == ControlEvent.state.rawValue,
                    let job = try? notification.params.decode(JobInfo.self)
                {
                    // An end is said once (a hook's run changes the job again after it).
                    let endedAlready = states[job.id] == job.state && job.state.isTerminal
                    states[job.id] = job.state
                    if endedAlready && !context.json { continue }
                }
                try Self.print(notification, stateOf: { states[$0] }, context: context)
            }
            return .success
        }
        let bars = LiveBars.forPeople(context)
        let tracker = try JobWaiter.follow(
            .ids(ids), as: JobInfo.self, on: connection, until: nil, progress: true,
            onStart: { tracker in
                // For people, the state each job was in when watching began (as bars on a terminal).
                if let bars {
                    tracker.latestJobs.forEach { bars.know($0) }
                } else if !context.json {
                    context.print(lines: tracker.latestJobs.map { JobFormatting.stateLine($0) })
                }
            },
            onNotification: { notification, tracker in
                if let bars {
                    bars.follow(notification)
                } else {
                    try? Self.print(notification, stateOf: { tracker.jobs[$0]?.state }, context: context)
                }
            })
        bars?.finish()
        return tracker.removed.isEmpty && tracker.latestJobs.allSatisfy({ $0.state == .completed })
            ? .success : .failure
    }

    /// One line per notification: the params as JSON, or a line for people.
    static func print(
        _ notification: RPCNotification, stateOf: (JobID) -> JobState?, context: CommandContext
    ) throws {
        if context.json {
            try context.printJSON(notification.params)
        } else if notification.method == ControlEvent.state.rawValue,
            let job = try? notification.params.decode(JobInfo.self)
        {
            context.print(JobFormatting.stateLine(job))
        } else if notification.method == ControlEvent.progress.rawValue,
            let event = try? notification.params.decode(JobProgressEvent.self)
        {
            context.print(JobFormatting.progressLine(event, state: stateOf(event.id) ?? .running))
        } else if notification.method == ControlEvent.removed.rawValue,
            let id = try? notification.params.decode(JobSelection.self).id
        {
            context.print("\(id) removed")
        }
    }
}
