import Testing
import UploadWire

@testable import UploadControl

@Suite struct AddCommandParsingTests {
    @Test func everyOption() throws {
        let add = try AddCommand(arguments: [
            "a.mp4", "--to", "https://h/d/", "b.jpg", "--protocol=tus", "--header", "X-A: 1", "--header=X-B: 2",
            "--field", "k=v", "--field=token=a=b", "--user", "bob:pw", "--chunk-size", "8M", "--priority=-3",
            "--snapshot", "copy", "--image", "max=1280,q=75", "--wait",
        ])
        #expect(add.paths == ["a.mp4", "b.jpg"])
        #expect(add.destination == "https://h/d/")
        #expect(add.uploadProtocol == .tus)
        #expect(add.headers == ["X-A: 1", "X-B: 2"])
        #expect(add.fields == ["k=v", "token=a=b"])
        #expect(add.user == "bob:pw")
        #expect(add.chunkSize == "8M")
        #expect(add.priority == -3)
        #expect(add.snapshot == .copy)
        #expect(add.image == "max=1280,q=75")
        #expect(add.wait)
    }

    @Test func defaultsLeaveEverythingToTheDaemon() throws {
        let add = try AddCommand(arguments: ["a", "--to", "file:///d/"])
        #expect(add.uploadProtocol == nil && add.chunkSize == nil && add.priority == nil && add.snapshot == nil)
        #expect(!add.wait)
        let params = add.requests(workingDirectory: "/w")[0]
        #expect(params.headers == nil && params.fields == nil && params.user == nil)
    }

    @Test func userWithoutPasswordIsSentAsGiven() throws {
        #expect(try AddCommand(arguments: ["a", "--to", "x", "--user", "bob"]).user == "bob")
    }

    @Test func requestsMakePathsAbsoluteAndKeepTheirOrder() throws {
        let add = try AddCommand(arguments: ["b/c.mp4", "/abs/x", "./d", "--to", "s3://bkt/p/", "--chunk-size", "5M"])
        let params = add.requests(workingDirectory: "/home/u")
        #expect(params.map(\.source) == ["/home/u/b/c.mp4", "/abs/x", "/home/u/d"])
        #expect(params.allSatisfy { $0.destination == "s3://bkt/p/" && $0.chunkSize == "5M" })
    }

    @Test(arguments: [
        ("a", "/w", "/w/a"), ("./a", "/w/", "/w/a"), ("a//b/./c", "/w", "/w/a/b/c"), ("/x/./y", "/w", "/x/y"),
        ("../a", "/w/v", "/w/v/../a"),
    ])
    func absolutePath(path: String, workingDirectory: String, expected: String) {
        #expect(AddCommand.absolutePath(path, workingDirectory: workingDirectory) == expected)
    }

    /// Paths that need no change are returned as they are, without splitting: the answer must be
    /// the split's for every path, whichever way it is found.
    @Test func anAbsolutePathIsTheSplitsWhateverItsDotsAndSlashes() {
        let parts = ["", ".", "..", "a", ".b", "c.", "...", "é", "/"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let count = Int.random(in: 1...6, using: &generator)
            let path = (0..<count).map { _ in parts.randomElement(using: &generator)! }.joined(separator: "/")
            for candidate in [path, "/" + path] {
                let joined = candidate.hasPrefix("/") ? candidate : "/w/" + candidate
                let split = "/" + joined.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
                #expect(AddCommand.absolutePath(candidate, workingDirectory: "/w") == split, "\(candidate)")
            }
        }
    }

    @Test(arguments: [
        (["--to", "x"], "missing PATH: name at least one file or folder to upload, or - to read them from stdin"),
        (["a"], "missing --to DEST: say where to upload"),
        (["a", "--to="], "--to needs a destination, not an empty string"),
        (
            ["a", "--to", "x", "--header", "NoColon"],
            "--header needs 'Name: value' (a name without spaces, no line breaks), not 'NoColon'"
        ),
        (
            ["a", "--to", "x", "--header", ": v"],
            "--header needs 'Name: value' (a name without spaces, no line breaks), not ': v'"
        ),
        (
            ["a", "--to", "x", "--header", "Bad Name: v"],
            "--header needs 'Name: value' (a name without spaces, no line breaks), not 'Bad Name: v'"
        ),
        (
            ["a", "--to", "x", "--header", "Content-Length: 0"],
            "--header: Content-Length cannot be set: uploadd sets it, as it frames the request's body; leave it out"
        ),
        (
            ["a", "--to", "x", "--header", "host: other.example"],
            "--header: host cannot be set: uploadd takes it from the destination URL; leave it out"
        ),
        (
            ["a", "--to", "x", "--password-file", "f"],
            "--password-file goes with --user USER (a name without :PASSWORD)"
        ),
        (
            ["a", "--to", "x", "--user", "u:p", "--password-file", "f"],
            "--password-file goes with --user USER (a name without :PASSWORD)"
        ),
        (["a", "--to", "x", "--field", "novalue"], "--field needs 'name=value', not 'novalue'"),
        (["a", "--to", "x", "--field", "=v"], "--field needs 'name=value', not '=v'"),
        (["a", "--to", "x", "--priority", "high"], "--priority needs a whole number, not 'high'"),
        (["a", "--to", "x", "--user="], "--user needs a user name"),
        (["a", "--to", "x", "--bogus"], "unknown option '--bogus'"),
    ])
    func mistakes(arguments: [String], message: String) {
        #expect(throws: UsageError(message, command: "add")) { try AddCommand(arguments: arguments) }
    }

    @Test(arguments: [
        ["--protocol", "ftp"], ["--snapshot", "maybe"], ["--chunk-size", "8Q"], ["--chunk-size", "-1"],
    ])
    func badChoicesAndSizes(extra: [String]) {
        #expect(throws: UsageError.self) { try AddCommand(arguments: ["a", "--to", "x"] + extra) }
    }
}

@Suite struct JobCommandParsingTests {
    @Test func listStates() throws {
        let list = try ListCommand(arguments: ["--state", "failed", "--state=canceled"])
        #expect(list.states == [.failed, .canceled])
        #expect(try ListCommand(arguments: []).params.states == nil)
        #expect(throws: UsageError.self) { try ListCommand(arguments: ["--state", "done"]) }
        #expect(throws: UsageError.self) { try ListCommand(arguments: ["7"]) }
    }

    @Test func showTakesExactlyOneID() throws {
        #expect(try ShowCommand(arguments: ["42"]).id == JobID(42))
        #expect(throws: UsageError.self) { try ShowCommand(arguments: []) }
        #expect(throws: UsageError.self) { try ShowCommand(arguments: ["1", "2"]) }
    }

    @Test(arguments: ["0", "-1", "+5", "abc", "7a", "1.5", "", "99999999999999999999999"])
    func badIDs(text: String) {
        #expect(throws: UsageError.self) { try ArgumentValues.jobID(text) }
        #expect(throws: UsageError.self) { try CancelCommand(arguments: ["--", text]) }
    }

    @Test func actionsTakeIDsWithoutDuplicates() throws {
        #expect(try CancelCommand(arguments: ["3", "1", "3"]).selection.ids == [JobID(3), JobID(1)])
        #expect(try RemoveCommand(arguments: ["5"]).selection.ids == [JobID(5)])
        #expect(try DeleteCommand(arguments: ["6"]).selection.ids == [JobID(6)])
        #expect(try ResumeCommand(arguments: ["2"]).selection.ids == [JobID(2)])
    }

    @Test func pauseAndResumeTakeAll() throws {
        let pause = try PauseCommand(arguments: ["--all"])
        #expect(pause.selection.all == true && pause.selection.ids == nil)
        #expect(try ResumeCommand(arguments: ["--all"]).selection.all == true)
        #expect(throws: UsageError("give job IDs or --all, not both", command: "pause")) {
            try PauseCommand(arguments: ["1", "--all"])
        }
        #expect(throws: UsageError("missing ID: name the jobs to pause, or --all", command: "pause")) {
            try PauseCommand(arguments: [])
        }
    }

    /// cancel and remove take --all with --state filters ("clear the whole list" is one command);
    /// retry takes --failed; delete always names its jobs.
    @Test func allAndItsStatesWhereTheyApply() throws {
        let cancel = try CancelCommand(arguments: ["--all", "--state", "queued", "--state", "paused"])
        #expect(cancel.selection.all == true && cancel.selection.states == [.queued, .paused])
        #expect(try RemoveCommand(arguments: ["--all"]).selection == JobSelection(all: true))
        #expect(try RetryCommand(arguments: ["--failed"]).selection == JobSelection(all: true))
        #expect(try RetryCommand(arguments: ["3", "4"]).selection == JobSelection(ids: [JobID(3), JobID(4)]))
        #expect(throws: UsageError("unknown option '--all'", command: "retry")) {
            try RetryCommand(arguments: ["--all"])
        }
        #expect(throws: UsageError.self) { try DeleteCommand(arguments: ["--all"]) }
        #expect(throws: UsageError("--state goes with --all", command: "cancel")) {
            try CancelCommand(arguments: ["3", "--state", "queued"])
        }
        #expect(throws: UsageError.self) { try CancelCommand(arguments: ["--all", "--state", "sleeping"]) }
        #expect(throws: UsageError("missing ID: name the jobs to cancel, or --all", command: "cancel")) {
            try CancelCommand(arguments: [])
        }
    }

    @Test func moveTakesOnePlace() throws {
        #expect(try MoveCommand(arguments: ["4", "--top"]).params == MoveParams(id: JobID(4), top: true))
        #expect(
            try MoveCommand(arguments: ["4", "--before", "2"]).params == MoveParams(id: JobID(4), before: JobID(2)))
        #expect(throws: UsageError.self) { try MoveCommand(arguments: ["4"]) }
        #expect(throws: UsageError.self) { try MoveCommand(arguments: ["4", "--top", "--after", "2"]) }
    }

    @Test func priorityTakesAnIDAndANumber() throws {
        let command = try PriorityCommand(arguments: ["7", "-5"])
        #expect(command.id == JobID(7) && command.priority == -5)
        #expect(throws: UsageError.self) { try PriorityCommand(arguments: ["7"]) }
        #expect(throws: UsageError.self) { try PriorityCommand(arguments: ["7", "high"]) }
    }

    @Test func commandsWithoutArguments() throws {
        _ = try StatusCommand(arguments: [])
        _ = try ReloadCommand(arguments: [])
        _ = try ClearCommand(arguments: [])
        #expect(throws: UsageError("unexpected argument 'now'", command: "clear")) {
            try ClearCommand(arguments: ["now"])
        }
        #expect(throws: UsageError.self) { try StatusCommand(arguments: ["--all"]) }
        #expect(throws: UsageError.self) { try ReloadCommand(arguments: ["x"]) }
    }

    @Test func waitIDsAndTimeout() throws {
        let wait = try WaitCommand(arguments: ["1", "--timeout", "2.5", "2"])
        #expect(wait.ids == [JobID(1), JobID(2)])
        #expect(wait.timeout == 2.5)
        #expect(try WaitCommand(arguments: ["1", "--timeout=0"]).timeout == 0)
        #expect(try WaitCommand(arguments: ["1"]).timeout == nil)
        #expect(throws: UsageError.self) { try WaitCommand(arguments: ["--timeout", "5"]) }
        for bad in ["-1", "soon", "inf", "nan"] {
            #expect(throws: UsageError.self) { try WaitCommand(arguments: ["1", "--timeout", bad]) }
        }
    }

    @Test func waitScalesToThousandsOfIDs() throws {
        let texts = (1...2000).map(String.init)
        #expect(try WaitCommand(arguments: texts).ids.count == 2000)
    }

    @Test func watchIDsAreOptional() throws {
        #expect(try WatchCommand(arguments: []).ids.isEmpty)
        #expect(try WatchCommand(arguments: ["4", "5"]).ids == [JobID(4), JobID(5)])
        #expect(throws: UsageError.self) { try WatchCommand(arguments: ["x"]) }
    }
}

@Suite struct JobTrackerTests {
    @Test func terminalStatesFinishAndResumedJobsAreWaitedForAgain() {
        var tracker = JobTracker<JobInfo>(ids: [JobID(1), JobID(2)])
        tracker.update(sampleJob(id: 1, state: .completed))
        #expect(!tracker.isFinished)
        #expect(tracker.unfinishedIDs == [JobID(2)])
        tracker.update(sampleJob(id: 2, state: .failed))
        #expect(tracker.isFinished)
        tracker.update(sampleJob(id: 2, state: .queued))
        #expect(tracker.unfinishedIDs == [JobID(2)])
        tracker.update(sampleJob(id: 3, state: .running))  // not followed
        #expect(tracker.latestJobs.map(\.id) == [JobID(1), JobID(2)])
    }

    @Test func earlyEventsCountOnlyWhenNewer() {
        var tracker = JobTracker<JobInfo>(ids: [JobID(1)])
        tracker.update(sampleJob(id: 1, state: .running, updatedAt: 100))
        let older = tracker.updateIfNewer(sampleJob(id: 1, state: .completed, updatedAt: 99))
        let sameSecondBehind = tracker.updateIfNewer(sampleJob(id: 1, state: .queued, updatedAt: 100))
        #expect(!older && !sameSecondBehind)
        #expect(!tracker.isFinished)
        let sameSecondFurther = tracker.updateIfNewer(sampleJob(id: 1, state: .completed, updatedAt: 100))
        #expect(sameSecondFurther && tracker.isFinished)
        let later = tracker.updateIfNewer(sampleJob(id: 1, state: .queued, updatedAt: 101))
        #expect(later && !tracker.isFinished)
    }
}
