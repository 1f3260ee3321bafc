import Foundation
import Glibc
import Testing

@testable import UploadControl

@Suite("SecretInput: passwords and headers from files, not from the command line")
struct SecretInputTests {
    let directory: String
    var errors: [String] = []

    init() throws {
        directory = NSTemporaryDirectory() + "uploadctl-secrets-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func context(_ collect: @escaping (String) -> Void) -> CommandContext {
        CommandContext(
            socketPath: "/s", json: false, workingDirectory: directory,
            output: OutputStreams(standardOutput: { _ in }, standardError: collect))
    }

    func write(_ name: String, _ text: String, mode: mode_t) throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    @Test func thePasswordIsTheFirstLine() throws {
        _ = try write("pw", "s3cret pass\r\nignored\n", mode: 0o600)
        var warned = ""
        #expect(try SecretInput.password(fromFile: "pw", context: context { warned += $0 }) == "s3cret pass")
        #expect(warned.isEmpty)
    }

    @Test func aFileOthersCanReadIsWarnedAbout() throws {
        let path = try write("loose", "pw\n", mode: 0o644)
        var warned = ""
        _ = try SecretInput.password(fromFile: path, context: context { warned += $0 })
        #expect(warned.contains("readable by others (mode 644)"))
        #expect(warned.contains("chmod 600 \(path)"))
    }

    @Test func headersAreLinesWithCommentsAndBlanksSkipped() throws {
        let path = try write("headers", "# tokens\nAuthorization: Bearer abc\n\nX-Api-Key: k\r\n", mode: 0o600)
        let headers = try SecretInput.headers(fromFile: path, context: context { _ in })
        #expect(headers == ["Authorization: Bearer abc", "X-Api-Key: k"])
    }

    @Test func aBadHeaderLineIsAUsageErrorWithItsLineNumber() throws {
        let path = try write("bad", "X-Ok: 1\nnot a header\n", mode: 0o600)
        let error = #expect(throws: UsageError.self) {
            try SecretInput.headers(fromFile: path, context: context { _ in })
        }
        #expect(error?.message == "\(path), line 2: a header must look like 'Name: value'")
    }

    @Test func aFramingHeaderInTheFileIsRefused() throws {
        let path = try write("framing", "X-Ok: 1\nContent-Length: 0\n", mode: 0o600)
        let error = #expect(throws: UsageError.self) {
            try SecretInput.headers(fromFile: path, context: context { _ in })
        }
        #expect(
            error?.message.hasPrefix("\(path), line 2: Content-Length cannot be set") == true,
            "\(String(describing: error))")
    }

    @Test func aMissingFileIsAUsageError() {
        #expect(throws: UsageError.self) {
            try SecretInput.password(fromFile: "/nonexistent/pw", context: context { _ in })
        }
    }

    @Test func addReadsItsSecretsWhenItRuns() throws {
        _ = try write("pw2", "hunter2\n", mode: 0o600)
        _ = try write("h2", "X-Token: t\n", mode: 0o600)
        var add = try AddCommand(arguments: [
            "a", "--to", "x", "--user", "bob", "--password-file", "pw2", "--header-file", "h2",
        ])
        #expect(add.user == "bob", "parsing reads no file")
        try add.readSecrets(context { _ in })
        #expect(add.user == "bob:hunter2")
        #expect(add.headers == ["X-Token: t"])
    }
}
