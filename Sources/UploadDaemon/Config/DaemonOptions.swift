import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// uploadd's command line and the directories it resolves to.
struct DaemonOptions: Equatable {
    var configPath: String
    var stateDirectory: String
    var cacheDirectory: String
    /// Nil means: socket activation if systemd passed one, else the default path.
    var socketPath: String?
    var logLevel: LogLevel = .info
    var showHelp = false
    var showVersion = false
    /// `--check-config`: read the config, report, and exit without starting.
    var checkConfig = false
    /// `--config` named the file: it must exist (only the default may be missing, for the defaults).
    var configNamed = false

    struct UsageError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static let usage = """
        Usage: uploadd [--config FILE] [--state-dir DIR] [--cache-dir DIR] [--socket PATH] [--log-level LEVEL]

        The uploadd daemon: a durable queue of file uploads, driven with uploadctl.

        Options:
          --config FILE      settings ([daemon], [remote NAME]); default $CONFIGURATION_DIRECTORY or
                             $XDG_CONFIG_HOME/uploadd, file uploadd.conf
          --state-dir DIR    where the journal lives; default $STATE_DIRECTORY or $XDG_STATE_HOME/uploadd
          --cache-dir DIR    where snapshots live; default $CACHE_DIRECTORY or $XDG_CACHE_HOME/uploadd
          --socket PATH      control socket; default $UPLOADD_SOCKET, else $XDG_RUNTIME_DIR/uploadd/control.sock,
                             else /tmp/uploadd-UID/control.sock
          --log-level LEVEL  error, warning, notice, info (default) or debug
          --check-config     check the config file and exit, without starting: 0 when it is valid,
                             else 1 with each error (file, line and key)
          --version          print the version and exit
          -h, --help         print this help and exit

        Signals: SIGTERM/SIGINT stop cleanly, SIGHUP reloads the config.

        Examples:
          # Check the config after editing it, then apply it to the running daemon
          uploadd --check-config && uploadctl reload
          # Run in the foreground with debug logging, on a socket of its own
          uploadd --socket /tmp/ud/control.sock --log-level debug
          # Try another config without touching the usual journal and cache
          uploadd --config ./test.conf --state-dir /tmp/ud-state --cache-dir /tmp/ud-cache
        """

    /// Parses arguments and fills in the defaults from the environment (XDG and systemd's variables).
    static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> DaemonOptions {
        var config: String?
        var state: String?
        var cache: String?
        var socket: String?
        var level = LogLevel.info
        var help = false
        var version = false
        var check = false
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                inlineValue = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func value() throws(UsageError) -> String {
                if let inlineValue { return inlineValue }
                index += 1
                guard index < arguments.count else { throw UsageError(message: "\(argument) needs a value") }
                return arguments[index]
            }
            switch argument {
            case "--config": config = try value()
            case "--state-dir": state = try value()
            case "--cache-dir": cache = try value()
            case "--socket": socket = try value()
            case "--log-level":
                let name = try value()
                guard let parsed = LogLevel(name: name) else {
                    throw UsageError(message: "unknown log level '\(name)'; use error, warning, notice, info or debug")
                }
                level = parsed
            case "-h", "--help": help = true
            case "--version": version = true
            case "--check-config": check = true
            default: throw UsageError(message: "unknown option '\(arguments[index])'")
            }
            index += 1
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        func xdg(_ variable: String, _ fallback: String) -> String {
            if let value = environment[variable], value.hasPrefix("/") { return value }
            return home + "/" + fallback
        }
        // systemd sets STATE_DIRECTORY/CACHE_DIRECTORY from StateDirectory=/CacheDirectory=; a list
        // is colon-separated and the first entry is ours.
        func systemdDirectory(_ variable: String) -> String? {
            environment[variable].flatMap { $0.split(separator: ":").first.map(String.init) }
        }
        let stateDefault = systemdDirectory("STATE_DIRECTORY") ?? xdg("XDG_STATE_HOME", ".local/state") + "/uploadd"
        let cacheDefault = systemdDirectory("CACHE_DIRECTORY") ?? xdg("XDG_CACHE_HOME", ".cache") + "/uploadd"
        let configDefault =
            (systemdDirectory("CONFIGURATION_DIRECTORY") ?? xdg("XDG_CONFIG_HOME", ".config") + "/uploadd")
            + "/uploadd.conf"
        return DaemonOptions(
            configPath: absolute(config ?? configDefault), stateDirectory: absolute(state ?? stateDefault),
            cacheDirectory: absolute(cache ?? cacheDefault),
            socketPath: (socket ?? environment["UPLOADD_SOCKET"]).map(absolute), logLevel: level, showHelp: help,
            showVersion: version, checkConfig: check, configNamed: config != nil)
    }

    /// Why the config cannot be read as named, or nil: a file named with `--config` that does
    /// not exist is a mistake (a typo would silently run on the defaults); the default file may
    /// be missing.
    var missingConfig: String? {
        guard configNamed, !FileManager.default.fileExists(atPath: configPath) else { return nil }
        return "--config \(configPath): no such file; create it, or leave --config out for the default config"
    }

    /// The socket path when not socket-activated and none was given.
    static func defaultSocketPath(environment: [String: String]) -> String {
        SocketLocation.resolve(option: nil, environment: environment)
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
