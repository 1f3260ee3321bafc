import Foundation
import Glibc
import Testing

/// What the tests that need privileges do without them. On a developer's machine such a test skips,
/// saying why (`make test` lists every skip at its end). CI runs as root and sets
/// `UPLOADD_REQUIRE_PRIVILEGED=1` (.ci/run): there a missing privilege fails the test, so a suite
/// cannot stop running in CI without anyone noticing.
enum Privileges {
    /// Whether `UPLOADD_REQUIRE_PRIVILEGED=1` is set.
    static var required: Bool { ProcessInfo.processInfo.environment["UPLOADD_REQUIRE_PRIVILEGED"] == "1" }

    /// Ends the running test for want of a privilege: a skip (Swift Testing's cancel, which carries
    /// the reason), or a failure when privileges are required.
    static func unavailable(_ reason: String) throws -> Never {
        if required { throw TestFailure("UPLOADD_REQUIRE_PRIVILEGED=1, but \(reason)") }
        try Test.cancel("skipped: \(reason)")
    }

    static let setpriv = "/usr/bin/setpriv"

    /// The command-line prefix that runs a program without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
    /// (setpriv drops them from the bounding set, so the exec cannot regain them): file modes then
    /// apply to it as to anyone, root included. Empty when not root (the modes apply already).
    static func withoutFileCapabilities() throws -> [String] {
        guard geteuid() == 0 else { return [] }
        guard FileManager.default.isExecutableFile(atPath: setpriv) else {
            try unavailable(
                "as root, \(setpriv) (util-linux) is needed to drop CAP_DAC_OVERRIDE; chmod 000 does not stop root")
        }
        return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    }

    /// The effective capability set of a process (CapEff in /proc/PID/status), nil when unreadable.
    static func effectiveCapabilities(of pid: Int32) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") })
        else { return nil }
        return UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
    }

    /// CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2).
    static let fileCapabilities: UInt64 = 1 << 1 | 1 << 2
}

/// An uploadd on the directories of a `DaemonProcess` (which only talks to it, through its socket),
/// started without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (`Privileges.withoutFileCapabilities`).
/// As root, that is the only way to see what uploadd does with a file it may not read.
final class UploaddWithoutFileCapabilities: @unchecked Sendable {
    // Invariant: used from one test at a time.
    let daemon: DaemonProcess
    private var process: ChildProcess?

    init(_ daemon: DaemonProcess) throws {
        self.daemon = daemon
        let wrapper = try Privileges.withoutFileCapabilities()
        let binary = TestPaths.binaries.appendingPathComponent("uploadd").path
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: wrapper.first ?? binary)
        process.arguments =
            Array(wrapper.dropFirst()) + (wrapper.isEmpty ? [] : [binary]) + [
                "--state-dir", daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--socket", daemon.socket,
                "--config", daemon.configPath, "--log-level", "debug",
            ]
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        process.environment = environment
        _ = FileManager.default.createFile(atPath: daemon.logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: daemon.logPath))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        guard eventually(timeout: 20, { process.isRunning && (try? daemon.ctl(["status"]))?.status == 0 }) else {
            stop()
            throw TestFailure("uploadd (without file capabilities) did not come up; log:\n\(daemon.log(tail: 30))")
        }
        // setpriv execs uploadd in place: the process is uploadd itself.
        let capabilities = Privileges.effectiveCapabilities(of: process.processIdentifier)
        guard let capabilities, capabilities & Privileges.fileCapabilities == 0 else {
            stop()
            throw TestFailure(
                "uploadd still has CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH: CapEff \(String(describing: capabilities))")
        }
    }

    deinit { stop() }

    func stop() {
        guard let process else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if !eventually(timeout: 30, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        self.process = nil
    }
}

/// With UPLOADD_REQUIRE_PRIVILEGED=1, what CI promises is there: the tests gated on root elsewhere
/// (`.enabled(if: geteuid() == 0)`: another user's attacks, foreign-owned folders) run only if
/// this holds, and so do the mounts, namespaces and setpriv the other suites check for themselves.
@Suite struct PrivilegedRunTests {
    @Test(
        .enabled(if: Privileges.required, "checks what CI promises; runs with UPLOADD_REQUIRE_PRIVILEGED=1 (.ci/run)"))
    func ciHasEveryPrivilegeTheTestsUse() throws {
        #expect(geteuid() == 0, "CI must run the tests as root; euid is \(geteuid())")
        #expect(FileManager.default.isExecutableFile(atPath: Privileges.setpriv), "\(Privileges.setpriv) is missing")
        #expect(TmpfsMount.isPermitted, "mounting a tmpfs: \(TmpfsMount.notPermittedReason)")
        #expect(try SystemdNamespace.notPermittedReason() == nil, "booting systemd in a namespace is not permitted")
    }
}
