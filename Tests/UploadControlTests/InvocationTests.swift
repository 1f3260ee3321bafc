import Testing
import UploadWire

@testable import UploadControl

@Suite struct InvocationTests {
    /// The command and global options a command line runs, or nil when it asks for help.
    private func command(_ arguments: [String]) throws -> (any ControlCommand, GlobalOptions)? {
        guard case .run(let command, let globals) = try Invocation.parse(arguments) else { return nil }
        return (command, globals)
    }

    private func helpText(_ arguments: [String]) throws -> String? {
        guard case .help(let text) = try Invocation.parse(arguments) else { return nil }
        return text
    }

    @Test func globalOptionsBeforeTheCommand() throws {
        let (command, globals) = try #require(try command(["--socket", "/s", "--json", "show", "7"]))
        #expect(globals == GlobalOptions(socketPath: "/s", json: true))
        #expect((command as? ShowCommand)?.id == JobID(7))
    }

    @Test func globalOptionsAfterTheCommand() throws {
        let (command, globals) = try #require(try command(["pause", "3", "--json", "--socket=/s", "4"]))
        #expect(globals == GlobalOptions(socketPath: "/s", json: true))
        #expect((command as? PauseCommand)?.selection.ids == [JobID(3), JobID(4)])
    }

    @Test func globalOptionsWithEqualsBeforeTheCommand() throws {
        let (_, globals) = try #require(try command(["--socket=/a", "list", "--socket", "/b"]))
        #expect(globals.socketPath == "/b")
        let (_, defaults) = try #require(try command(["list"]))
        #expect(defaults == GlobalOptions())
    }

    @Test func globalOptionsAfterDoubleDashArePaths() throws {
        let (command, globals) = try #require(try command(["add", "--to", "file:///d/", "--", "--json"]))
        #expect(!globals.json)
        #expect((command as? AddCommand)?.paths == ["--json"])
    }

    @Test func everyFormOfHelp() throws {
        let top = try #require(try helpText(["--help"]))
        #expect(top.contains("Usage: uploadctl [--socket PATH] [--json] COMMAND"))
        for name in CommandTable.all.map({ $0.name }) { #expect(top.contains("  \(name) ")) }
        #expect(try helpText(["-h"]) == top)
        #expect(try helpText(["help"]) == top)
        #expect(try helpText(["--json", "--help"]) == top)

        let add = try #require(try helpText(["help", "add"]))
        #expect(add.contains("add PATH...|- --to DEST"))
        #expect(add.contains("--chunk-size SIZE"))
        #expect(try helpText(["add", "--help"]) == add)
        #expect(try helpText(["add", "x", "-h"]) == add)
        #expect(try helpText(["--json", "add", "--help"]) == add)
        #expect(try helpText(["wait", "--help"])?.contains("wait ID...|--batch N [--timeout SECONDS]") == true)
    }

    @Test func helpWinsOverOtherMistakes() throws {
        #expect(try helpText(["show", "--help"]) != nil)  // the missing ID is not an error then
    }

    @Test func everyCommandIsReachableByName() throws {
        for command in CommandTable.all {
            #expect(CommandTable.command(named: command.name) != nil)
            #expect(
                try helpText([command.name, "--help"])?.contains("uploadctl [--socket PATH] [--json] \(command.name)")
                    == true)
        }
        #expect(CommandTable.all.count == 20)
    }

    @Test(arguments: [
        ([], UsageError("missing command")),
        (["frob"], UsageError("unknown command 'frob'")),
        (["--bogus", "list"], UsageError("unknown option '--bogus'")),
        (["--socket"], UsageError("option '--socket' needs a value (PATH)")),
        (["help", "frob"], UsageError("unknown command 'frob'")),
        (["list", "--bogus"], UsageError("unknown option '--bogus'", command: "list")),
        (["show"], UsageError("missing ID: name the job to show", command: "show")),
        (["list", "--socket"], UsageError("option '--socket' needs a value (PATH)", command: "list")),
    ])
    func usageErrorsNameTheCommandForTheHint(arguments: [String], expected: UsageError) {
        #expect(throws: expected) { try Invocation.parse(arguments) }
    }

    @Test func hintPointsToTheRightHelp() {
        #expect(UsageError("x", command: "add").hint == "Try 'uploadctl add --help'.")
        #expect(UsageError("x").hint == "Try 'uploadctl --help'.")
    }
}
