import Foundation
import TestSupport
import Testing
import UploadWire

@testable import UploadControl

/// contrib/man/uploadctl.1 against `CommandTable`, so that the page cannot drift from the code.
@Suite struct ManPageTests {
    private let page: ManPageSource
    private let commands: [(name: String, lines: [String])]

    init() throws {
        page = try ManPageSource("contrib/man/uploadctl.1")
        commands = ManPageSource.subsections(page.section("COMMANDS"))
    }

    private func commandSection(_ name: String) -> [String]? {
        commands.first { $0.name == name }?.lines
    }

    @Test(arguments: CommandTable.all.map { $0.name })
    func everyCommandHasASection(name: String) {
        #expect(commandSection(name) != nil, "contrib/man/uploadctl.1 has no '.SS \(name)' under COMMANDS")
    }

    @Test(arguments: CommandTable.all.map { $0.name })
    func everyOptionOfACommandIsAnItemOfItsSection(name: String) throws {
        let command = try #require(CommandTable.command(named: name))
        let documented = Set(ManPageSource.itemNames(commandSection(name) ?? []))
        for option in command.options.map(\.name) {
            #expect(documented.contains(option), "uploadctl.1 does not document \(name) \(option)")
        }
    }

    @Test(arguments: CommandTable.all.map { $0.name })
    func everyOptionTheSectionDocumentsIsTakenByTheCommand(name: String) throws {
        let command = try #require(CommandTable.command(named: name))
        let taken = Set(command.options.map(\.name))
        for option in ManPageSource.itemNames(commandSection(name) ?? []) where option.hasPrefix("-") {
            #expect(taken.contains(option), "uploadctl.1 documents \(name) \(option), which \(name) does not take")
        }
    }

    @Test func everySectionNamesACommand() {
        #expect(!commands.isEmpty)
        let known = Set(CommandTable.all.map { $0.name })
        for section in commands {
            #expect(known.contains(section.name), "uploadctl.1 has a section for '\(section.name)', no such command")
        }
    }

    @Test func globalOptionsAreTheItemsOfOptions() {
        let documented = ManPageSource.itemNames(page.section("OPTIONS"))
        // `-h` is read as `--help` by the parser itself.
        #expect(Set(documented) == Set(GlobalOptions.specs.map(\.name) + ["-h"]))
    }

    @Test func exitStatusesAreTheExitCodes() {
        let codes = ManPageSource.itemTags(page.section("EXIT STATUS")).map {
            Int32($0.replacingOccurrences(of: ".B ", with: ""))
        }
        #expect(codes == [ExitCode.success, .failure, .usage, .unavailable].map(\.rawValue))
    }

    @Test func statesAndProtocolsAreNamed() {
        let text = ManPageSource.plain(page.lines.joined(separator: "\n"))
        for state in JobState.allCases { #expect(text.contains(state.rawValue)) }
        let protocolItem = ManPageSource.plain((commandSection("add") ?? []).joined(separator: "\n"))
        for uploadProtocol in UploadProtocol.allCases {
            #expect(protocolItem.contains(uploadProtocol.rawValue), "add's --protocol lacks \(uploadProtocol)")
        }
    }

    @Test func theSocketsPlacesAreSocketLocations() {
        let environment = ManPageSource.itemTags(page.section("ENVIRONMENT")).map(ManPageSource.plain)
        #expect(environment.contains(".B UPLOADD_SOCKET") && environment.contains(".B XDG_RUNTIME_DIR"))
        let text = ManPageSource.plain(page.lines.joined(separator: "\n"))
        let fallback = SocketLocation.fallbackDirectory(userID: 4321).replacingOccurrences(of: "4321", with: "UID")
        #expect(text.contains(fallback + "/" + SocketLocation.fileName))
        let runtime = SocketLocation.resolve(
            option: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/4321"], isDirectory: { _ in true })
        #expect(text.contains(runtime.replacingOccurrences(of: "/run/user/4321", with: "$XDG_RUNTIME_DIR")))
    }
}

/// Every `--help` ends with examples, and every example is a command line uploadctl accepts.
@Suite struct HelpExampleTests {
    /// The words of the `uploadctl ...` part of an example (`find ... | uploadctl add - -0 ...`),
    /// split as a shell would for the quoting the examples use.
    static func uploadctlWords(_ commandLine: String) -> [String]? {
        var words: [String] = []
        var word: String?
        var quote: Character?
        for character in commandLine {
            if let open = quote {
                if character == open { quote = nil } else { word?.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                word = word ?? ""
            } else if character == " " {
                if let finished = word { words.append(finished) }
                word = nil
            } else {
                word = (word ?? "") + String(character)
            }
        }
        if let finished = word { words.append(finished) }
        // The commands of the line, split at `|`, `&&` and `;`.
        let commands = words.split { ["|", "&&", ";"].contains($0) }
        return commands.first { $0.first == "uploadctl" }.map { Array($0.dropFirst()) }
    }

    /// The examples at the end of a help text: the lines after `Examples:` that are not `#` lines.
    static func exampleLines(_ help: String) -> [String] {
        guard let range = help.range(of: "\nExamples:\n") else { return [] }
        return help[range.upperBound...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("#") }
    }

    @Test(arguments: CommandTable.all.map { $0.name })
    func everyCommandsHelpEndsWithTwoOrThreeExamplesOfIt(name: String) throws {
        let command = try #require(CommandTable.command(named: name))
        let help = command.help
        let examples = Self.exampleLines(help)
        #expect((2...3).contains(examples.count), "\(name) --help has \(examples.count) examples")
        #expect(help.hasSuffix(CommandExamples.section(forCommand: name)))
        for example in examples {
            let words = try #require(Self.uploadctlWords(example), "'\(example)' does not run uploadctl")
            guard case .run(let parsed, _) = try Invocation.parse(words) else {
                Issue.record("'\(example)' asks for help")
                continue
            }
            #expect(type(of: parsed).name == name, "'\(example)' is listed under \(name)")
        }
    }

    @Test func theOverviewEndsWithExamplesThatParse() throws {
        let examples = Self.exampleLines(CommandTable.help)
        #expect((2...3).contains(examples.count))
        #expect(CommandTable.help.hasSuffix(CommandExamples.section(CommandExamples.overview)))
        for example in examples {
            let words = try #require(Self.uploadctlWords(example))
            guard case .run = try Invocation.parse(words) else {
                Issue.record("'\(example)' asks for help")
                continue
            }
        }
    }

    @Test func everyExampleIsListedUnderACommand() {
        let known = Set(CommandTable.all.map { $0.name })
        for name in CommandExamples.byCommand.keys {
            #expect(known.contains(name), "examples for '\(name)', which is no command")
        }
    }

    @Test func theWordsOfAnExample() {
        #expect(
            Self.uploadctlWords("find . -print0 | uploadctl add - -0 --to 'a b:' --exclude \"*.x\"")
                == ["add", "-", "-0", "--to", "a b:", "--exclude", "*.x"])
        #expect(Self.uploadctlWords("uploadd --check-config && uploadctl reload") == ["reload"])
        #expect(Self.uploadctlWords("systemctl --user reload uploadd") == nil)
    }
}

/// The shell completions name every command and every option, so that they cannot fall behind.
@Suite struct CompletionScriptTests {
    @Test(arguments: ["uploadctl.bash", "_uploadctl", "uploadctl.fish"])
    func everyCommandAndOptionIsCompleted(file: String) throws {
        let text = try String(
            contentsOf: repositoryRoot.appendingPathComponent("contrib/completions/\(file)"), encoding: .utf8)
        let words = Set(text.split { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }.map(String.init))
        for command in CommandTable.all {
            #expect(words.contains(command.name), "\(file) does not complete the command \(command.name)")
            for option in command.options.map(\.name) {
                // fish names `--header-file` as `-l header-file`, and `-0` as `-s 0`.
                let found =
                    if file.hasSuffix(".fish") {
                        text.contains(option.hasPrefix("--") ? "-l \(option.dropFirst(2))" : "-s \(option.dropFirst())")
                    } else {
                        words.contains(option)
                    }
                #expect(found, "\(file) does not complete \(command.name) \(option)")
            }
        }
        for name in JobState.allCases.map(\.rawValue) + UploadProtocol.allCases.map(\.rawValue) {
            #expect(words.contains(name), "\(file) does not complete \(name)")
        }
    }
}
