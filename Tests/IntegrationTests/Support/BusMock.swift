import Foundation
import Glibc

/// contrib/test/busmock.py, started by a test and stopped with it: private D-Bus buses (never the
/// machine's own) with python-dbusmock's NetworkManager and UPower on a system bus, and its
/// notification daemon on a session bus. Give `environment` to the daemon under test; then flip
/// NetworkManager's `Metered` and UPower's `OnBattery` while it runs (each flip emits
/// org.freedesktop.DBus.Properties.PropertiesChanged), take a service off the bus, or read the
/// notifications it got. Needs Debian's python3-dbusmock (with python3-dbus and dbus-daemon).
final class BusMock: @unchecked Sendable {
    // Invariant: used from one test at a time (the suites are serialized); stop() may run more than once.
    /// Holds bus.env, the buses' sockets and configs, and the logs: busmock.out (the script's own),
    /// system-bus.log, session-bus.log, nm.log, upower.log, notifications.log (every call a mock got).
    let directory: URL
    /// The private buses' addresses as in bus.env: `DBUS_SYSTEM_BUS_ADDRESS` and/or `DBUS_SESSION_BUS_ADDRESS`.
    let addresses: [String: String]
    private var process: ChildProcess?

    /// NetworkManager's NMMetered values, as busmock.py names them.
    enum Metered: String, Sendable, CaseIterable {
        case unknown, yes, no
        case guessYes = "guess-yes"
        case guessNo = "guess-no"
    }

    /// One Notify call the notification daemon mock got (org.freedesktop.Notifications.Notify's arguments).
    struct Notification: Decodable, Sendable, Equatable {
        /// Unix seconds, when the mock got it.
        var time: Int
        var appName: String
        var replacesID: UInt32
        var appIcon: String
        var summary: String
        var body: String
        /// Identifier and label, alternating.
        var actions: [String]
        var hints: [String: Hint]
        var expireTimeout: Int32

        /// A hint's value (`urgency` is a byte, so an int here; `category` a string).
        enum Hint: Decodable, Sendable, Equatable {
            case bool(Bool)
            case int(Int)
            case double(Double)
            case string(String)
            case other

            init(from decoder: Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let value = try? container.decode(Bool.self) {
                    self = .bool(value)
                } else if let value = try? container.decode(Int.self) {
                    self = .int(value)
                } else if let value = try? container.decode(Double.self) {
                    self = .double(value)
                } else if let value = try? container.decode(String.self) {
                    self = .string(value)
                } else {
                    self = .other
                }
            }
        }

        var urgency: Int? {
            guard case .int(let value)? = hints["urgency"] else { return nil }
            return value
        }
        var category: String? {
            guard case .string(let value)? = hints["category"] else { return nil }
            return value
        }

        enum CodingKeys: String, CodingKey {
            case time, summary, body, actions, hints
            case appName = "app_name"
            case replacesID = "replaces_id"
            case appIcon = "app_icon"
            case expireTimeout = "expire_timeout"
        }
    }

    /// Starts the buses and the mocks and waits until they answer. `system`: a system bus with
    /// NetworkManager (unless `!networkManager`; `Metered` starts at `metered`) and UPower (unless
    /// `!upower`; `OnBattery` starts at `onBattery`). `session`: a session bus with the notification daemon.
    init(
        system: Bool = true, session: Bool = false, networkManager: Bool = true, upower: Bool = true,
        metered: Metered = .no, onBattery: Bool = false
    ) throws {
        guard system || session else { throw TestFailure("BusMock needs a system or a session bus") }
        let directory = try TestPaths.scratch("busmock")
        self.directory = directory
        let output = directory.appendingPathComponent("busmock.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        var arguments = [BusMock.script, "start", "--dir", directory.path, "--metered", metered.rawValue]
        arguments += ["--battery", onBattery ? "on" : "off"]
        if system { arguments.append("--system") }
        if session { arguments.append("--session") }
        if !networkManager { arguments.append("--no-nm") }
        if !upower { arguments.append("--no-upower") }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        // busmock.py writes bus.env (atomically) only once every bus and mock answers.
        let envFile = directory.appendingPathComponent("bus.env")
        var addresses: [String: String]?
        _ = eventually(timeout: 30) {
            if let text = try? String(contentsOf: envFile, encoding: .utf8) {
                var values: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    guard let equals = line.firstIndex(of: "=") else { continue }
                    values[String(line[..<equals])] = String(line[line.index(after: equals)...])
                }
                addresses = values
            }
            return addresses != nil || !process.isRunning
        }
        guard let addresses, !addresses.isEmpty else {
            BusMock.end(process)
            self.process = nil
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw TestFailure("busmock.py did not start (on Debian: apt-get install python3-dbusmock):\n\(text)")
        }
        self.addresses = addresses
    }

    deinit { stop() }

    private static var script: String { TestPaths.repository.appendingPathComponent("contrib/test/busmock.py").path }

    var systemBusAddress: String? { addresses["DBUS_SYSTEM_BUS_ADDRESS"] }
    var sessionBusAddress: String? { addresses["DBUS_SESSION_BUS_ADDRESS"] }

    /// For the daemon's environment: both bus variables, the private buses' addresses, and for a bus
    /// this mock does not run an address where nothing listens, so the test's own buses are never reached.
    var environment: [String: String] {
        var environment: [String: String] = [:]
        for (key, name) in [("DBUS_SYSTEM_BUS_ADDRESS", "system"), ("DBUS_SESSION_BUS_ADDRESS", "session")] {
            environment[key] = addresses[key] ?? "unix:path=\(directory.appendingPathComponent("no-\(name)-bus").path)"
        }
        return environment
    }

    /// Stops the mocks and the buses (SIGTERM; SIGKILL to the process group after 10 s).
    func stop() {
        guard let process else { return }
        BusMock.end(process)
        self.process = nil
    }

    private static func end(_ process: ChildProcess) {
        let pid = process.processIdentifier
        if process.isRunning {
            // busmock.py unblocks SIGTERM itself, and stops its children before it exits.
            kill(pid, SIGTERM)
            if !eventually(timeout: 10, { !process.isRunning }) {
                // It leads its own process group; its children also die with it (PR_SET_PDEATHSIG).
                if getpgid(pid) == pid { kill(-pid, SIGKILL) } else { kill(pid, SIGKILL) }
            }
        }
        process.waitUntilExit()
    }

    /// Sets NetworkManager's `Metered`: "yes", "no", "guess-yes", "guess-no" or "unknown".
    func setMetered(_ value: String) throws {
        guard let metered = Metered(rawValue: value) else {
            throw TestFailure("Metered is one of \(Metered.allCases.map(\.rawValue)), not \(value)")
        }
        try setMetered(metered)
    }

    func setMetered(_ value: Metered) throws { _ = try run(["metered", "--dir", directory.path, value.rawValue]) }

    /// Sets UPower's `OnBattery`.
    func setOnBattery(_ on: Bool) throws { _ = try run(["battery", "--dir", directory.path, on ? "on" : "off"]) }

    /// Every notification the notification daemon mock got so far, oldest first (needs `session: true`).
    func notifications() throws -> [Notification] {
        let output = try run(["notifications", "--dir", directory.path])
        return try output.split(separator: "\n").map { line in
            try JSONDecoder().decode(Notification.self, from: Data(line.utf8))
        }
    }

    /// Forgets the notifications received so far.
    func clearNotifications() throws { _ = try run(["notifications", "--dir", directory.path, "--clear"]) }

    /// Takes NetworkManager off the bus, as when it is not running: its name goes (NameOwnerChanged),
    /// and calls to it fail with org.freedesktop.DBus.Error.ServiceUnknown.
    func removeNetworkManager() throws { _ = try run(["remove", "--dir", directory.path, "nm"]) }

    /// Puts a fresh NetworkManager back on the bus.
    func addNetworkManager(metered: Metered = .no) throws {
        _ = try run(["add", "--dir", directory.path, "nm", "--metered", metered.rawValue])
    }

    /// Takes UPower off the bus.
    func removeUPower() throws { _ = try run(["remove", "--dir", directory.path, "upower"]) }

    /// Takes the notification daemon off the session bus, as on a machine without one.
    func removeNotifications() throws { _ = try run(["remove", "--dir", directory.path, "notifications"]) }

    /// Puts a fresh UPower back on the bus.
    func addUPower(onBattery: Bool = false) throws {
        _ = try run(["add", "--dir", directory.path, "upower", "--battery", onBattery ? "on" : "off"])
    }

    /// What busmock.py and its mocks logged, for a failure message.
    func log(tail lines: Int = 40) -> String {
        var text = ""
        for name in ["busmock.out", "nm.log", "upower.log", "notifications.log"] {
            guard let content = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            else { continue }
            text += "== \(name)\n" + content.split(separator: "\n").suffix(lines).joined(separator: "\n") + "\n"
        }
        return text
    }

    private func run(_ arguments: [String]) throws -> String {
        guard process != nil else { throw TestFailure("the bus mock is stopped") }
        let result = try Command.run("/usr/bin/python3", [BusMock.script] + arguments, timeout: 30)
        guard result.status == 0 else {
            throw TestFailure("busmock.py \(arguments.joined(separator: " ")) failed: \(result)")
        }
        return result.stdout
    }
}
