import Testing
import UploadWire

@testable import UploadControl

@Suite("TerminalText: what servers and file names say is shown, never obeyed")
struct TerminalTextTests {
    @Test(arguments: [
        ("plain name.txt", "plain name.txt"),
        ("esc\u{1b}[31mRED\u{1b}[0m.txt", "esc\\x1b[31mRED\\x1b[0m.txt"),
        ("new\nline", "new\\nline"), ("tab\there", "tab\\there"), ("cr\r", "cr\\r"),
        ("\u{1b}]0;pwned\u{07}", "\\x1b]0;pwned\\x07"), ("c1 \u{9b}31m", "c1 \\x9b31m"), ("del\u{7f}", "del\\x7f"),
        ("bidi \u{202e}txt.exe", "bidi \\u{202e}txt.exe"), ("日本語 ✓", "日本語 ✓"),
    ])
    func controlCharactersAreEscaped(text: String, shown: String) {
        #expect(TerminalText.escaped(text) == shown)
    }

    @Test func printedLinesAndErrorsAreEscaped() {
        var out = ""
        var err = ""
        let context = CommandContext(
            socketPath: "/s", json: false, workingDirectory: "/",
            output: OutputStreams(standardOutput: { out += $0 }, standardError: { err += $0 }))
        context.print(lines: ["a\u{1b}[2J", "b"])
        context.printError("server said \u{1b}]0;x\u{07}")
        #expect(out == "a\\x1b[2J\nb\n")
        #expect(err == "uploadctl: server said \\x1b]0;x\\x07\n")
    }
}
