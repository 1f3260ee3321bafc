/// The examples that end every `--help`: two or three per command, and three for `uploadctl --help`.
///
/// One table, keyed by the command's `name`, so that a command gets its examples without its own
/// file changing; `ControlCommand.help` and `CommandTable.help` append them. The tests check that
/// every command has some and that each one parses as the command it is listed under.
enum CommandExamples {
    /// One example: what it does, then the command line, ready to paste.
    struct Example: Sendable, Equatable {
        var purpose: String
        var commandLine: String

        init(_ purpose: String, _ commandLine: String) {
            self.purpose = purpose
            self.commandLine = commandLine
        }
    }

    /// The examples of `uploadctl --help`.
    static let overview: [Example] = [
        Example(
            "Upload a folder to the remote 'nas' (see 'uploadctl remotes'), keeping its structure under 2026/",
            "uploadctl add ~/Pictures/trip --to nas:2026/"),
        Example(
            "Upload a file to a WebDAV folder, asking for the password, and wait until it is there",
            "uploadctl add report.pdf --to https://dav.example.org/docs/ --user me --wait"),
        Example(
            "List the uploads that failed; 'uploadctl show ID' says why", "uploadctl list --state failed"),
    ]

    /// Each command's examples, by `ControlCommand.name`.
    static let byCommand: [String: [Example]] = [
        "add": [
            Example(
                "Upload a folder: trip/day1/a.jpg goes to 2026/trip/day1/a.jpg on the remote 'nas'",
                "uploadctl add ~/Pictures/trip --to nas:2026/ --exclude '*.tmp'"),
            Example(
                "Upload the files find names (NUL-separated) to an S3 bucket",
                "find . -name '*.mp4' -print0 | uploadctl add - -0 --to s3://my-bucket/videos/"),
            Example(
                "Send photos shrunk to 2048 pixels, without their location, to the remote 'photos'",
                "uploadctl add *.HEIC --to photos: --image max=2048,strip-gps"),
        ],
        "list": [
            Example("What is running or waiting", "uploadctl list --state running --state queued"),
            Example("The jobs of one add (add prints their batch ID)", "uploadctl list --batch 12"),
            Example("The failed jobs as JSON, for a script", "uploadctl --json list --state failed"),
        ],
        "show": [
            Example("A job's details, its last error and its history", "uploadctl show 7"),
            Example("The same as JSON", "uploadctl --json show 7"),
        ],
        "status": [
            Example("Version, jobs per state, speed, paths, and what is wrong with the config", "uploadctl status"),
            Example("Ask a daemon that listens on another socket", "uploadctl --socket /tmp/ud/control.sock status"),
        ],
        "reload": [
            Example("Read uploadd.conf again after editing it", "uploadctl reload"),
            Example(
                "Check the file first, and apply it only when it is valid", "uploadd --check-config && uploadctl reload"
            ),
        ],
        "pause": [
            Example("Pause two jobs; they keep what the server has committed", "uploadctl pause 7 8"),
            Example("Pause everything, say for a video call", "uploadctl pause --all"),
            Example("Pause every job of one add", "uploadctl pause --batch 12"),
        ],
        "resume": [
            Example("Resume a paused job", "uploadctl resume 7"),
            Example("Resume every paused job", "uploadctl resume --all --state paused"),
            Example("Resume every job of one add", "uploadctl resume --batch 12"),
        ],
        "retry": [
            Example("Retry every failed job, once the server is back", "uploadctl retry --failed"),
            Example("Retry one job with a fresh attempt budget", "uploadctl retry 7"),
            Example("Retry the jobs of one add", "uploadctl retry --batch 12"),
        ],
        "cancel": [
            Example("Cancel a job; it stays listed as canceled", "uploadctl cancel 7"),
            Example("Cancel everything that has not started", "uploadctl cancel --all --state queued"),
            Example("Cancel every job of one add", "uploadctl cancel --batch 12"),
        ],
        "remove": [
            Example("Forget the completed jobs", "uploadctl remove --all --state completed"),
            Example("Cancel and forget two jobs", "uploadctl remove 7 8"),
            Example("Forget every job of one add", "uploadctl remove --batch 12"),
        ],
        "priority": [
            Example("Let job 7 start before the jobs of the default priority 0", "uploadctl priority 7 100"),
            Example("Let the others go first", "uploadctl priority 7 -10"),
        ],
        "move": [
            Example("Start job 7 next", "uploadctl move 7 --top"),
            Example("Put job 7 right before job 3", "uploadctl move 7 --before 3"),
        ],
        "limit": [
            Example("Cap all uploads together at 5 MiB/s", "uploadctl limit 5M"),
            Example("Lift the cap", "uploadctl limit off"),
            Example("Show the limit in force", "uploadctl limit"),
        ],
        "clear": [
            Example("Drop the completed, failed and canceled jobs", "uploadctl clear"),
            Example("The same, printing the jobs dropped as JSON", "uploadctl --json clear"),
        ],
        "top": [
            Example("Watch and steer the uploads live (? lists the keys)", "uploadctl top"),
            Example("The same for a daemon on another socket", "uploadctl --socket /tmp/ud/control.sock top"),
        ],
        "delete": [
            Example("Remove job 7 and delete its file from the server", "uploadctl delete 7"),
            Example("Take back everything one add uploaded", "uploadctl delete --batch 12"),
        ],
        "wait": [
            Example("Wait for two jobs; exit 0 only when both completed", "uploadctl wait 7 8 && echo uploaded"),
            Example("Wait at most an hour for a whole batch", "uploadctl wait --batch 12 --timeout 3600"),
        ],
        "watch": [
            Example("Follow every job's events until Ctrl-C", "uploadctl watch"),
            Example("Follow one job until it ends", "uploadctl watch 7"),
            Example("The events as JSON lines, for a program", "uploadctl --json watch"),
        ],
        "remotes": [
            Example("The remotes of uploadd.conf, without their secrets", "uploadctl remotes"),
            Example("Check that the remote 'nas' answers and accepts its credentials", "uploadctl remotes --test nas"),
        ],
        "folders": [
            Example("The watched folders, their state and what each took", "uploadctl folders"),
            Example(
                "Stop taking and uploading files of [folder screenshots] for now", "uploadctl folders pause screenshots"
            ),
            Example("Take them again, with what came meanwhile", "uploadctl folders resume screenshots"),
        ],
    ]

    /// The section that ends a command's `--help`; empty for a command without examples.
    static func section(forCommand name: String) -> String {
        section(byCommand[name] ?? [])
    }

    /// `Examples:` and each example, a `#` line saying what it does above the line to paste, after a
    /// blank line; empty without examples.
    static func section(_ examples: [Example]) -> String {
        guard !examples.isEmpty else { return "" }
        return "\nExamples:\n" + examples.map { "  # \($0.purpose)\n  \($0.commandLine)\n" }.joined()
    }
}
