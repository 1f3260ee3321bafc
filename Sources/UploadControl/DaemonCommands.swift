import UploadWire

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
        if context.json {
            try context.printJSON(result)
        } else {
            context.print("reloaded")
            for warning in (try? result.decode(ReloadResult.self))?.warnings ?? [] {
                context.printError("warning: \(warning)")
            }
        }
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
        if context.json {
            try context.printJSON(try context.connect().call(.clear))
        } else {
            let count = try context.connect().clearJobs().count
            context.print("cleared \(count) job\(count == 1 ? "" : "s")")
        }
        return .success
    }
}

/// `uploadctl limit [RATE|off]`: all uploads together, shared equally among the running ones.
struct LimitCommand: ControlCommand {
    static let name = "limit"
    static let abstract = "Limit all uploads together to RATE per second (5M, 800K), or off"
    static let synopsis = "[RATE|off]"
    static let details = """
        Running uploads follow within a second; the limit holds across restarts until changed, and
        [daemon] rate_limit in the config still caps each upload. Without RATE, prints the
        limit in force. With --json, prints {"bandwidth_limit": BYTES or null}.
        """
    static let options: [OptionSpec] = []

    /// nil: only show it.
    var rate: String?

    init(parsed: ParsedArguments) throws(UsageError) {
        guard parsed.positionals.count <= 1 else { throw UsageError("limit takes one RATE, or off") }
        rate = parsed.positionals.first
        if let rate, !["off", "none"].contains(rate.lowercased()) {
            guard let bytes = try? ByteSize.parse(rate), bytes > 0 else {
                throw UsageError("'\(rate)' is not a rate: write bytes per second like 5M or 800K, or off")
            }
            if let problem = LimitParams.problem(withRate: bytes) { throw UsageError(problem) }
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        let limit: Int64?
        if let rate {
            let result = try connection.call(.limit, JSONValue(encoding: LimitParams(rate: .string(rate))))
            if context.json {
                try context.printJSON(result)
                return .success
            }
            limit = try result.decode(LimitResult.self).bandwidthLimit
        } else {
            let status = try connection.call(.status).decode(DaemonStatus.self)
            if context.json {
                try context.printJSON(LimitResult(bandwidthLimit: status.bandwidthLimit))
                return .success
            }
            limit = status.bandwidthLimit
        }
        context.print(lines: [
            limit.map { "bandwidth limit: \(ByteSize.formatRate(Double($0)))" } ?? "no bandwidth limit"
        ])
        return .success
    }
}
