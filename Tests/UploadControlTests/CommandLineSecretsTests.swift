import Testing
import UploadWire

@testable import UploadControl

@Suite("Secrets on the command line: hidden from ps, and warned about")
struct CommandLineSecretsTests {
    @Test func addFindsEachSecretAndWhatToShowInstead() throws {
        let add = try AddCommand(arguments: [
            "a", "--to", "https://u:pw@h/d/?X-Amz-Signature=sig", "--user=bob:hunter2", "--header",
            "Authorization: Bearer X", "--header", "Content-Type: image/png", "--header", "X-Api-Key:k",
            "--header", "X-Album:  trip",
        ])
        #expect(
            add.secretsOnCommandLine == [
                CommandLineSecret(option: "--user", value: "bob:hunter2", shown: "bob:*", warns: true),
                CommandLineSecret(
                    option: "--header", value: "Authorization: Bearer X", shown: "Authorization: *", warns: true),
                CommandLineSecret(
                    option: "--header", value: "Content-Type: image/png", shown: "Content-Type: *", warns: false),
                CommandLineSecret(option: "--header", value: "X-Api-Key:k", shown: "X-Api-Key:*", warns: true),
                CommandLineSecret(option: "--header", value: "X-Album:  trip", shown: "X-Album:  *", warns: false),
                CommandLineSecret(
                    option: "--to", value: "https://u:pw@h/d/?X-Amz-Signature=sig",
                    shown: "https://h/d/?X-Amz-Signature=*", warns: true),
            ])
        #expect(add.secretsOnCommandLine[0].replacement(for: "--user=bob:hunter2") == "--user=bob:*")
        #expect(add.secretsOnCommandLine[0].replacement(for: "bob:hunter2") == "bob:*")
        #expect(add.secretsOnCommandLine[0].replacement(for: "bob") == nil)
    }

    @Test func whatIsShownIsNeverLonger() throws {
        let add = try AddCommand(arguments: [
            "a", "--to", "http://h/x?t=1", "--user", "b:p", "--header", "X-T:v",
        ])
        #expect(add.secretsOnCommandLine.allSatisfy { $0.shown.utf8.count <= $0.value.utf8.count })
        // A presigned URL has no better way in: hidden, but no warning.
        #expect(add.secretsOnCommandLine.last?.warns == false)
    }

    @Test(arguments: [["a", "--to", "https://h/d/", "--user", "bob"], ["a", "--to", "nas:x", "--header", "X-Empty:"]])
    func noSecretNothingHidden(arguments: [String]) throws {
        #expect(try AddCommand(arguments: arguments).secretsOnCommandLine.isEmpty)
    }

    /// A user name alone has a prompt to go with it, not a secret: hidden (`list` does not show
    /// it either), but not warned about.
    @Test func aUserNameInTheURLIsHiddenWithoutAWarning() throws {
        let secrets = try AddCommand(arguments: ["a", "--to", "https://bob@h/d/"]).secretsOnCommandLine
        #expect(secrets.map(\.shown) == ["https://h/d/"] && secrets.allSatisfy { !$0.warns })
    }

    @Test func theWarningIsOneLineAndTheArgumentsAreHiddenBeforeTheCommandRuns() {
        var hidden: [CommandLineSecret] = []
        var errors = ""
        var output = OutputStreams(standardOutput: { _ in }, standardError: { errors += $0 })
        output.hideArguments = { hidden += $0 }
        _ = UploadControlMain.run(
            arguments: [
                "--socket", "/nonexistent/uploadd.sock", "add", "/etc/hostname", "--to", "https://h/", "--user",
                "bob:hunter2",
            ],
            environment: [:], workingDirectory: "/", output: output)
        #expect(hidden.map(\.value) == ["bob:hunter2"])
        let lines = errors.split(separator: "\n")
        #expect(lines.first == "uploadctl: \(CommandLineSecret.warning)", "\(errors)")
        #expect(lines.first?.contains("--password-file") == true && !errors.contains("hunter2"))
    }
}
