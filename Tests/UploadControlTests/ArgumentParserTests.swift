import Glibc
import Testing
import UploadWire

@testable import UploadControl

@Suite struct ArgumentParserTests {
    private let options: [OptionSpec] = [
        .value("--to", "DEST"), .value("--header", "H"), .flag("--wait"), .flag("--help"),
    ]

    @Test func optionValueAsNextArgumentOrAfterEquals() throws {
        let separate = try ArgumentParser.parse(["a", "--to", "http://x/"], options: options)
        let joined = try ArgumentParser.parse(["a", "--to=http://x/"], options: options)
        #expect(separate == joined)
        #expect(joined.value("--to") == "http://x/")
        #expect(joined.positionals == ["a"])
    }

    @Test func equalsInsideAValueIsKept() throws {
        let parsed = try ArgumentParser.parse(["--to=http://x/?a=b"], options: options)
        #expect(parsed.value("--to") == "http://x/?a=b")
    }

    @Test func valueMayLookLikeAnOption() throws {
        let parsed = try ArgumentParser.parse(["--header", "--wait"], options: options)
        #expect(parsed.values("--header") == ["--wait"])
        #expect(!parsed.contains("--wait"))
    }

    @Test func repeatedOptionsKeepEveryValueInOrder() throws {
        let parsed = try ArgumentParser.parse(
            ["--header", "A: 1", "x", "--header=B: 2", "--to", "a", "--to", "b"], options: options)
        #expect(parsed.values("--header") == ["A: 1", "B: 2"])
        #expect(parsed.value("--to") == "b")
        #expect(parsed.positionals == ["x"])
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try ArgumentParser.parse(["--wait", "--", "--to", "-h", "-"], options: options)
        #expect(parsed.contains("--wait"))
        #expect(parsed.positionals == ["--to", "-h", "-"])
        #expect(!parsed.contains("--help"))
    }

    @Test func singleDashIsAPositional() throws {
        #expect(try ArgumentParser.parse(["-"], options: options).positionals == ["-"])
    }

    @Test func shortHelpMeansHelp() throws {
        #expect(try ArgumentParser.parse(["-h"], options: options).contains("--help"))
    }

    @Test(arguments: [
        (["--bogus"], "unknown option '--bogus'"),
        (["-x"], "unknown option '-x'"),
        (["--wait=yes"], "option '--wait' takes no value"),
        (["a", "--to"], "option '--to' needs a value (DEST)"),
    ])
    func mistakesAreUsageErrors(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try ArgumentParser.parse(arguments, options: options) }
    }
}

@Suite struct SocketLocationTests {
    let everyFolderExists: (String) -> Bool = { _ in true }

    @Test func optionWinsOverEverything() {
        let environment = ["UPLOADD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/5"]
        #expect(SocketLocation.resolve(option: "/opt.sock", environment: environment, userID: 5) == "/opt.sock")
    }

    @Test func environmentVariableWinsOverRuntimeDirectory() {
        let environment = ["UPLOADD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/5"]
        #expect(SocketLocation.resolve(option: nil, environment: environment, userID: 5) == "/env.sock")
    }

    @Test func runtimeDirectoryWhenItExists() {
        #expect(
            SocketLocation.resolve(
                option: nil, environment: ["XDG_RUNTIME_DIR": "/rt/"], userID: 5, isDirectory: everyFolderExists)
                == "/rt/uploadd/control.sock")
        #expect(
            SocketLocation.resolve(
                option: nil, environment: ["XDG_RUNTIME_DIR": "/rt"], userID: 5, isDirectory: everyFolderExists)
                == "/rt/uploadd/control.sock")
    }

    @Test func withoutAUsableRuntimeDirectoryTheFallbackInTmp() {
        #expect(SocketLocation.resolve(option: nil, environment: [:], userID: 1234) == "/tmp/uploadd-1234/control.sock")
        #expect(
            SocketLocation.resolve(
                option: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1234"], userID: 1234,
                isDirectory: { _ in false })
                == "/tmp/uploadd-1234/control.sock")
        #expect(
            SocketLocation.resolve(
                option: nil, environment: ["XDG_RUNTIME_DIR": "relative"], userID: 9, isDirectory: everyFolderExists)
                == "/tmp/uploadd-9/control.sock")
    }

    @Test func emptyValuesCountAsUnset() {
        let environment = ["UPLOADD_SOCKET": "", "XDG_RUNTIME_DIR": ""]
        #expect(
            SocketLocation.resolve(option: "", environment: environment, userID: 7) == "/tmp/uploadd-7/control.sock")
    }

    @Test func aFolderOfOthersOrOpenToOthersIsAProblem() throws {
        let root = "/tmp/socket-location-test-\(getpid())"
        mkdir(root, 0o700)
        defer { rmdir(root + "/open"); unlink(root + "/link"); rmdir(root) }
        #expect(SocketLocation.problem(withFolder: root) == nil)
        #expect(SocketLocation.problem(withFolder: root + "/missing") == nil)
        mkdir(root + "/open", 0o700)
        chmod(root + "/open", 0o755)
        #expect(SocketLocation.problem(withFolder: root + "/open")?.contains("mode 755") == true)
        symlink(root, root + "/link")
        #expect(SocketLocation.problem(withFolder: root + "/link")?.contains("symlink") == true)
        #expect(SocketLocation.problem(withFolder: root, userID: getuid() + 1)?.contains("belongs to uid") == true)
    }
}
