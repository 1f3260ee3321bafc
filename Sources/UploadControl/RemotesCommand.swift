import UploadWire

/// `uploadctl remotes [--test NAME]`: the configured remotes, or a check of one.
struct RemotesCommand: ControlCommand {
    static let name = "remotes"
    static let abstract = "List the configured remotes, or check that uploads to one can work"
    static let synopsis = "[--test NAME]"
    static let details = """
        Options:
          --test NAME   connect to remote NAME with its credentials and say what is wrong, if
                        anything: an OPTIONS request to an HTTP server, HeadBucket for S3, a
                        writable folder for file://. Exit status 0 when it works, 1 when not.

        Secrets are never shown: only where they are read from. With --json, prints
        {"remotes": [...]}, or the check's {"name", "ok", "message", "status"}.
        """
    static let options: [OptionSpec] = [.value("--test", "NAME")]

    var test: String?

    init(parsed: ParsedArguments) throws(UsageError) {
        try requireNoPositionals(parsed)
        test = parsed.value("--test")
        if test?.isEmpty == true { throw UsageError("--test needs a remote's name") }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let connection = try context.connect()
        if let test {
            let result = try connection.call(.testRemote, params: RemoteParams(name: test), as: RemoteTestResult.self)
            if context.json {
                try context.printJSON(result)
            } else if result.ok {
                context.print("\(result.name): ok: \(result.message)")
            } else {
                context.printError("\(result.name): \(result.message)")
            }
            return result.ok ? .success : .failure
        }
        let list = try connection.call(.remotes, params: NoParams(), as: RemoteList.self)
        if context.json {
            try context.printJSON(list)
            return .success
        }
        guard !list.remotes.isEmpty else {
            context.printError("no remotes: add a [remote NAME] section to uploadd.conf (see uploadd.conf(5))")
            return .success
        }
        let rows =
            [["NAME", "PROTOCOL", "URL", "USER", "SECRET FROM"]]
            + list.remotes.map { [$0.name, $0.protocolName, $0.url, $0.user ?? "-", $0.secretSource ?? "-"] }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        context.print(
            lines: rows.map { row in
                zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                    .trimmingTrailingSpaces()
            })
        return .success
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
