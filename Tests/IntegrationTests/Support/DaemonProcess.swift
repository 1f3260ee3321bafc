import Foundation
import Glibc
import UploadCore
import UploadWire

/// A real uploadd process with its own state, cache, config and socket, driven through uploadctl.
final class DaemonProcess: @unchecked Sendable {
    // Invariant: used from one test at a time (the suites are serialized).
    let root: URL
    let socket: String
    let configPath: String
    private(set) var process: ChildProcess?
    private var logHandle: FileHandle?
    /// Put before the uploadd command line (for example `nsenter --net=...` to run it in a test's
    /// network namespace); the daemon's pid is then the wrapper's, which must exec it.
    var launcher: [String] = []
    /// Added to the daemon's environment (a private D-Bus, say).
    var extraEnvironment: [String: String] = [:]

    /// Where the state and cache folders go: `root`, unless a test puts them elsewhere (on a
    /// lossy file system, say).
    var dataRoot: URL?
    var stateDirectory: String { (dataRoot ?? root).appendingPathComponent("state").path }
    var cacheDirectory: String { (dataRoot ?? root).appendingPathComponent("cache").path }
    var logPath: String { root.appendingPathComponent("uploadd.log").path }
    var pid: Int32 { process?.processIdentifier ?? 0 }

    init(name: String, config: String = "") throws {
        root = try TestPaths.scratch(name)
        socket = root.appendingPathComponent("run/control.sock").path
        configPath = root.appendingPathComponent("uploadd.conf").path
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("run"), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Starts uploadd and waits until it answers on its socket.
    func start() throws {
        let process = ChildProcess()
        let uploadd = TestPaths.binaries.appendingPathComponent("uploadd")
        process.executableURL = launcher.first.map { URL(fileURLWithPath: $0) } ?? uploadd
        process.arguments =
            launcher.dropFirst() + (launcher.isEmpty ? [] : [uploadd.path]) + [
                "--state-dir", stateDirectory, "--cache-dir", cacheDirectory, "--socket", socket, "--config",
                configPath,
                "--log-level", "debug",
            ]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        environment["LISTEN_FDS"] = nil
        environment["LISTEN_PID"] = nil
        // No desktop notifications on the session bus of whoever runs the tests (notify = all is
        // the default); a test that wants them gives a private bus (BusMock) in extraEnvironment.
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(root.path)/no-session-bus"
        environment.merge(extraEnvironment) { _, new in new }
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let logFile = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        logFile.seekToEndOfFile()
        process.standardError = logFile
        process.standardOutput = logFile
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        self.logHandle = logFile
        // Up, or gone: a daemon that exits while starting fails at once, not after the timeout.
        _ = eventually(timeout: 20) { !process.isRunning || ((try? ctl(["status"]))?.status == 0) }
        guard process.isRunning, (try? ctl(["status"]))?.status == 0 else {
            let how =
                process.isRunning ? "did not come up" : "exited while starting (status \(process.terminationStatus))"
            throw TestFailure("uploadd \(how); log:\n\(log(tail: 30))")
        }
    }

    /// Whether the daemon is gone, killed by SIGKILL (its own, at a crash point, say).
    var diedOfSIGKILL: Bool {
        guard let process else { return false }
        if process.isRunning { usleep(100_000) }
        return !process.isRunning && process.terminationReason == .uncaughtSignal
            && process.terminationStatus == SIGKILL
    }

    /// Kills the daemon with SIGKILL, as a crash would.
    func crash() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard let process else { return -1 }
        kill(process.processIdentifier, SIGTERM)
        let exited = eventually(timeout: 30) { !process.isRunning }
        if !exited { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    /// Runs uploadctl against this daemon. When the daemon turns out to have died of a crash (a
    /// signal other than the SIGKILL of the tests and of crash points), the result's stderr says so
    /// and carries the daemon's crash report from its log: the daemon's folder is gone once CI ends.
    func ctl(_ arguments: [String], timeout: Double = 120) throws -> CommandResult {
        var result = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadctl").path, ["--socket", socket] + arguments,
            timeout: timeout)
        if result.status != 0, let crash = crashReport() { result.stderr += "\n" + crash }
        return result
    }

    /// What the log says of the daemon's crash, if it died of a signal other than SIGKILL.
    func crashReport() -> String? {
        guard let process, !process.isRunning, process.terminationReason == .uncaughtSignal,
            process.terminationStatus != SIGKILL
        else { return nil }
        let lines = ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n")
        // From the runtime's first words of the crash ("Fatal error", "Program crashed"), or the end.
        let start =
            lines.firstIndex { $0.contains("Fatal error") || $0.contains("Program crashed") }
            ?? max(lines.count - 30, 0)
        let report = lines[start...].prefix(80).joined(separator: "\n")
        return "uploadd died of signal \(process.terminationStatus); its log from the crash:\n\(report)"
    }

    /// Runs `uploadctl --json ...` and decodes the output.
    func ctlJSON<T: Decodable>(_ type: T.Type, _ arguments: [String]) throws -> T {
        let result = try ctl(["--json"] + arguments)
        guard result.status == 0 else { throw TestFailure("uploadctl \(arguments) failed: \(result)") }
        return try JSONCoding.decoder.decode(T.self, from: Data(result.stdout.utf8))
    }

    /// `uploadctl --json status` as a JSON object: what is there, and what is null.
    func statusJSON() throws -> [String: Any] {
        let result = try ctl(["--json", "status"])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        else { throw TestFailure("uploadctl --json status failed: \(result)") }
        return object
    }

    /// Adds files and returns their job IDs (uploadctl prints one per line).
    func add(_ paths: [String], to destination: String, _ options: [String] = []) throws -> [JobID] {
        let result = try ctl(["add"] + paths + ["--to", destination] + options)
        guard result.status == 0 else { throw TestFailure("uploadctl add failed: \(result)") }
        let ids = result.stdout.split(separator: "\n").compactMap {
            JobID(String($0).trimmingCharacters(in: .whitespaces))
        }
        guard ids.count == paths.count else { throw TestFailure("expected \(paths.count) IDs from add: \(result)") }
        return ids
    }

    func job(_ id: JobID) throws -> JobInfo { try ctlJSON(JobInfo.self, ["show", "\(id)"]) }

    /// Waits until the job reaches `state` (or any terminal state when nil); returns the job.
    func waitFor(_ id: JobID, state: JobState? = nil, timeout: Double = 120) throws -> JobInfo {
        var last: JobInfo?
        let reached = try eventually(timeout: timeout) {
            let job = try self.job(id)
            last = job
            return state.map { job.state == $0 } ?? job.state.isTerminal
        }
        guard reached, let last else {
            throw TestFailure(
                "job \(id) did not reach \(state?.rawValue ?? "a final state"): \(String(describing: last))\nlog:\n\(log(tail: 20))"
            )
        }
        return last
    }

    func log(tail lines: Int) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}
