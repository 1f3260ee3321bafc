import Foundation
import Glibc
import Testing

@testable import UploadDaemon

@Suite("DaemonOptions: uploadd's command line")
struct DaemonOptionsTests {
    let home = ["HOME": "/home/u"]

    func usageError(_ arguments: [String]) -> String {
        let error = #expect(throws: DaemonOptions.UsageError.self) {
            try DaemonOptions.parse(arguments, environment: home)
        }
        return error?.message ?? ""
    }

    @Test func everyFlagWithSeparateValues() throws {
        let options = try DaemonOptions.parse(
            [
                "--config", "/etc/u.conf", "--state-dir", "/s", "--cache-dir", "/c", "--socket", "/run/s.sock",
                "--log-level", "debug",
            ],
            environment: home)
        #expect(options.configPath == "/etc/u.conf")
        #expect(options.stateDirectory == "/s")
        #expect(options.cacheDirectory == "/c")
        #expect(options.socketPath == "/run/s.sock")
        #expect(options.logLevel == .debug)
        #expect(!options.showHelp && !options.showVersion)
    }

    @Test func inlineValues() throws {
        let options = try DaemonOptions.parse(
            ["--config=/etc/u.conf", "--state-dir=/s", "--cache-dir=/c=d", "--socket=/x.sock", "--log-level=warning"],
            environment: home)
        #expect(options.configPath == "/etc/u.conf")
        #expect(options.stateDirectory == "/s")
        #expect(options.cacheDirectory == "/c=d")
        #expect(options.socketPath == "/x.sock")
        #expect(options.logLevel == .warning)
    }

    @Test func relativePathsBecomeAbsolute() throws {
        let options = try DaemonOptions.parse(["--state-dir", "state"], environment: home)
        #expect(options.stateDirectory == FileManager.default.currentDirectoryPath + "/state")
    }

    @Test func xdgDefaults() throws {
        let plain = try DaemonOptions.parse([], environment: home)
        #expect(plain.stateDirectory == "/home/u/.local/state/uploadd")
        #expect(plain.cacheDirectory == "/home/u/.cache/uploadd")
        #expect(plain.configPath == "/home/u/.config/uploadd/uploadd.conf")
        #expect(plain.socketPath == nil)
        #expect(plain.logLevel == .info)

        let xdg = try DaemonOptions.parse(
            [],
            environment: [
                "HOME": "/home/u", "XDG_STATE_HOME": "/x/state", "XDG_CACHE_HOME": "/x/cache",
                "XDG_CONFIG_HOME": "/x/config",
            ])
        #expect(xdg.stateDirectory == "/x/state/uploadd")
        #expect(xdg.cacheDirectory == "/x/cache/uploadd")
        #expect(xdg.configPath == "/x/config/uploadd/uploadd.conf")
    }

    @Test func relativeXDGValuesAreIgnoredAsTheSpecSays() throws {
        let options = try DaemonOptions.parse([], environment: ["HOME": "/home/u", "XDG_STATE_HOME": "rel/state"])
        #expect(options.stateDirectory == "/home/u/.local/state/uploadd")
    }

    @Test func systemdDirectoriesWin() throws {
        let options = try DaemonOptions.parse(
            [],
            environment: [
                "HOME": "/home/u", "XDG_STATE_HOME": "/x/state", "STATE_DIRECTORY": "/var/lib/uploadd:/var/lib/other",
                "CACHE_DIRECTORY": "/var/cache/uploadd",
            ])
        #expect(options.stateDirectory == "/var/lib/uploadd")
        #expect(options.cacheDirectory == "/var/cache/uploadd")
        let given = try DaemonOptions.parse(
            ["--state-dir", "/mine"], environment: ["STATE_DIRECTORY": "/var/lib/uploadd"])
        #expect(given.stateDirectory == "/mine")
    }

    @Test func socketFromTheEnvironmentUnlessGiven() throws {
        let environment = ["HOME": "/home/u", "UPLOADD_SOCKET": "/tmp/env.sock"]
        #expect(try DaemonOptions.parse([], environment: environment).socketPath == "/tmp/env.sock")
        #expect(try DaemonOptions.parse(["--socket", "/a.sock"], environment: environment).socketPath == "/a.sock")
    }

    @Test func defaultSocketPathFollowsTheSharedRules() {
        #expect(DaemonOptions.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "/"]) == "/uploadd/control.sock")
        #expect(
            DaemonOptions.defaultSocketPath(environment: ["XDG_RUNTIME_DIR": "/nonexistent-runtime-dir"])
                == "/tmp/uploadd-\(getuid())/control.sock")
        #expect(DaemonOptions.defaultSocketPath(environment: [:]) == "/tmp/uploadd-\(getuid())/control.sock")
    }

    @Test func helpAndVersion() throws {
        #expect(try DaemonOptions.parse(["-h"], environment: home).showHelp)
        #expect(try DaemonOptions.parse(["--help"], environment: home).showHelp)
        #expect(try DaemonOptions.parse(["--version"], environment: home).showVersion)
        #expect(DaemonOptions.usage.contains("--state-dir DIR"))
    }

    @Test func badOptions() {
        #expect(usageError(["--bogus"]) == "unknown option '--bogus'")
        #expect(usageError(["--bogus=1"]) == "unknown option '--bogus=1'")
        #expect(usageError(["state"]) == "unknown option 'state'")
        #expect(usageError(["--config"]) == "--config needs a value")
        #expect(usageError(["--log-level", "loud"]).contains("unknown log level 'loud'"))
    }
}
