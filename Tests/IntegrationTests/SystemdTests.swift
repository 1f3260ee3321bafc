import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// uploadd as a systemd user service (issue 4): the units pass `systemd-analyze verify`, socket
/// activation hands the daemon its socket, the sd_notify sequence is right, and a real systemd,
/// booted as PID 1 of a private namespace, runs, restarts, reloads and stops it.
@Suite(.serialized)
struct SystemdTests {
    private static var uploadd: String { TestPaths.binaries.appendingPathComponent("uploadd").path }
    private static var uploadctl: String { TestPaths.binaries.appendingPathComponent("uploadctl").path }

    /// The environment of a daemon started by the test: nothing inherited from a surrounding
    /// service manager.
    private static func cleanEnvironment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in [
            "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
            "JOURNAL_STREAM",
            "STATE_DIRECTORY", "CACHE_DIRECTORY", "CONFIGURATION_DIRECTORY", "UPLOADD_SOCKET", "CREDENTIALS_DIRECTORY",
        ] {
            environment[key] = nil
        }
        return environment
    }

    /// `python3 -c spawnAndWait PIDFILE PROGRAM ARGS...`: runs PROGRAM as a child, writes its PID to
    /// PIDFILE and exits with its exit status.
    private static let spawnAndWait = """
        import os, sys
        pid = os.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        with open(sys.argv[1], "w") as f:
            f.write(str(pid))
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
        """

    // MARK: - systemd-analyze

    @Test func unitsPassVerifyAndTheServiceIsHardened() throws {
        let root = try TestPaths.scratch("systemd-verify")
        let units = root.appendingPathComponent("units")
        let runtime = root.appendingPathComponent("xdg-runtime")
        try FileManager.default.createDirectory(at: units, withIntermediateDirectories: true)
        // A user-mode verify wants an existing, private XDG_RUNTIME_DIR.
        try FileManager.default.createDirectory(
            at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // What `make install` does, with BINDIR pointing at the binaries under test.
        for name in ["uploadd.service", "uploadd.socket"] {
            let text = try UnitFiles.substituted(
                name, bindir: TestPaths.binaries.path, docdir: TestPaths.repository.path)
            #expect(!text.contains("@BINDIR@") && !text.contains("@DOCDIR@"), "\(name) keeps a placeholder")
            try text.write(to: units.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        var environment = Self.cleanEnvironment()
        environment["XDG_RUNTIME_DIR"] = runtime.path
        environment["SYSTEMD_PAGER"] = ""
        environment["SYSTEMD_COLORS"] = "0"
        let service = units.appendingPathComponent("uploadd.service").path
        let socket = units.appendingPathComponent("uploadd.socket").path

        let verify = try Command.run(
            "/usr/bin/systemd-analyze", ["--user", "verify", service, socket], environment: environment, timeout: 60)
        #expect(verify.status == 0, "systemd-analyze --user verify: \(verify)")
        // verify exits 0 on warnings such as an unknown key or a missing Documentation= file.
        let complaints = (verify.stdout + verify.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(complaints.isEmpty, "systemd-analyze --user verify complained:\n\(complaints)")

        let security = try Command.run(
            "/usr/bin/systemd-analyze", ["--user", "security", "--offline=true", "--no-pager", service],
            environment: environment, timeout: 60)
        #expect(security.status == 0, "systemd-analyze --user security: \(security)")
        let overall = security.stdout.split(separator: "\n").first {
            $0.contains("Overall exposure level for uploadd.service")
        }
        let figure = overall.flatMap { line in
            line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        }
        print(
            "systemd-analyze --user security --offline=true uploadd.service: \(overall.map(String.init) ?? "no overall line")"
        )
        let exposure = try #require(figure, "no exposure figure in:\n\(security.stdout)")
        #expect(exposure < 3.0, "exposure \(exposure) is 3.0 or more:\n\(security.stdout)")
    }

    // MARK: - Socket activation

    @Test func socketActivationStartsTheDaemonOnTheInheritedSocket() throws {
        let root = try TestPaths.scratch("systemd-activate")
        let run = root.appendingPathComponent("run")
        let runtime = root.appendingPathComponent("xdg-runtime")
        for directory in [run, runtime] {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let socket = run.appendingPathComponent("control.sock").path
        let config = root.appendingPathComponent("uploadd.conf").path
        try "".write(toFile: config, atomically: true, encoding: .utf8)
        let logPath = root.appendingPathComponent("activate.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)

        // A parent in between runs the activator, writes its PID (the daemon's, once it execs) and
        // exits with its status. (Written for Foundation.Process, which took the activator closing
        // every inherited descriptor for the child's exit; ChildProcess waits with waitpid.)
        let pidFile = root.appendingPathComponent("activator.pid").path
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        // No --socket: the daemon must take the socket it inherits.
        process.arguments = [
            "-c", Self.spawnAndWait, pidFile,
            "/usr/bin/systemd-socket-activate", "-l", socket, Self.uploadd, "--state-dir",
            root.appendingPathComponent("state").path,
            "--cache-dir", root.appendingPathComponent("cache").path, "--config", config,
        ]
        var environment = Self.cleanEnvironment()
        // Where the daemon would bind its own socket if it ignored the inherited one.
        environment["XDG_RUNTIME_DIR"] = runtime.path
        process.environment = environment
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var activator: Int32 = 0
        defer {
            if process.isRunning {
                if activator > 0 { kill(activator, SIGKILL) }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        _ = eventually(timeout: 10) {
            activator =
                Int32(
                    ((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").trimmingCharacters(
                        in: .whitespacesAndNewlines)) ?? 0
            return activator > 0
        }
        let pid = try #require(activator > 0 ? activator : nil, "systemd-socket-activate did not start")
        func logText() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        func executable() -> String {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
        }

        #expect(
            eventually(timeout: 10) { FileManager.default.fileExists(atPath: socket) },
            "no listening socket: \(logText())")
        // Nothing has connected: the daemon has not started yet.
        usleep(200_000)
        #expect(
            executable().hasSuffix("systemd-socket-activate"), "started before the first connection: \(executable())")

        let status = try Command.run(Self.uploadctl, ["--socket", socket, "--json", "status"], timeout: 30)
        #expect(
            status.status == 0, "the first uploadctl status did not start the daemon: \(status)\nlog:\n\(logText())")
        #expect(executable() == Self.uploadd, "the activator did not exec uploadd: \(executable())")
        #expect(
            status.stdout.contains("\"pid\":\(pid)") || status.stdout.contains("\"pid\" : \(pid)"), "\(status.stdout)")
        #expect(logText().contains("serving on the socket systemd passed"), "log:\n\(logText())")
        #expect(
            !FileManager.default.fileExists(atPath: runtime.appendingPathComponent("uploadd/control.sock").path),
            "the daemon bound a socket of its own")

        // An upload through the inherited socket.
        let source = root.appendingPathComponent("activated.bin").path
        try makeRandomFile(at: source, size: 5 << 20 + 17)
        let target = root.appendingPathComponent("out")
        let add = try Command.run(
            Self.uploadctl, ["--socket", socket, "add", source, "--to", "file://\(target.path)/", "--wait"])
        #expect(add.status == 0, "upload via the inherited socket: \(add)\nlog:\n\(logText())")
        let copy = target.appendingPathComponent("activated.bin").path
        #expect(FileManager.default.fileExists(atPath: copy), "no copy at \(copy)")
        #expect((try? Command.sha256(copy)) == (try Command.sha256(source)), "the copy differs from the source")

        kill(pid, SIGTERM)
        #expect(eventually(timeout: 30) { !process.isRunning }, "SIGTERM did not stop the daemon")
        process.waitUntilExit()
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 0,
            "exit \(process.terminationStatus)\n\(logText())")
    }

    // MARK: - sd_notify

    @Test func notifySequenceReadyStatusWatchdogReloadStopping() throws {
        let root = try TestPaths.scratch("systemd-notify")
        let receiver = try ReceiverProcess(directory: root.appendingPathComponent("receiver"))
        defer {
            receiver.stop()
            // The big files; the logs stay.
            try? FileManager.default.removeItem(at: root.appendingPathComponent("receiver/files"))
            try? FileManager.default.removeItem(at: root.appendingPathComponent("notify.bin"))
        }
        let listener = try NotifyListener()
        defer { listener.close() }
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("run"), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let socket = root.appendingPathComponent("run/control.sock").path
        let config = root.appendingPathComponent("uploadd.conf").path
        // Slow enough that STATUS= has something to say while the job runs.
        try "[daemon]\nrate_limit = 16M\n".write(toFile: config, atomically: true, encoding: .utf8)
        let logPath = root.appendingPathComponent("uploadd.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        func logText() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Self.uploadd)
        process.arguments = [
            "--state-dir", root.appendingPathComponent("state").path, "--cache-dir",
            root.appendingPathComponent("cache").path,
            "--socket", socket, "--config", config,
        ]
        var environment = Self.cleanEnvironment()
        environment["NOTIFY_SOCKET"] = listener.notifySocket
        // WATCHDOG_PID unset: sd_watchdog_enabled(0, ...) then takes WATCHDOG_USEC as meant for us.
        environment["WATCHDOG_USEC"] = "2000000"
        process.environment = environment
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        let startedAt = Date()
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        func context() -> String { "datagrams:\n\(listener.transcript)\nlog:\n\(logText())" }

        // READY=1 carries a STATUS=; before it, only start-up chatter (STATUS=, EXTEND_TIMEOUT_USEC=):
        // no WATCHDOG=1, RELOADING=1 or STOPPING=1.
        let readyIndex = try #require(
            listener.waitFor(timeout: 20) { $0.fields["READY"] == "1" }, "no READY=1; \(context())")
        let ready = listener.datagrams[readyIndex]
        #expect(ready.fields["STATUS"] != nil, "READY=1 comes without STATUS=; \(context())")
        let early = listener.datagrams[..<readyIndex].filter {
            !Set($0.fields.keys).isSubset(of: ["STATUS", "EXTEND_TIMEOUT_USEC"])
        }
        #expect(early.isEmpty, "before READY=1: \(early); \(context())")
        // The socket answers once READY=1 is sent.
        let status = try Command.run(Self.uploadctl, ["--socket", socket, "status"], timeout: 10)
        #expect(status.status == 0, "\(status)")

        // A job that lasts a few seconds: STATUS= follows it.
        let source = root.appendingPathComponent("notify.bin").path
        try makeRandomFile(at: source, size: 48 << 20)
        let add = try Command.run(
            Self.uploadctl,
            [
                "--socket", socket, "add", source, "--protocol", "chunked", "--chunk-size", "2M", "--to",
                "\(receiver.url)/upload",
            ]
                + receiver.tokenField)
        #expect(add.status == 0, "\(add)")
        let id = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let uploading = listener.waitFor(from: readyIndex + 1, timeout: 10) {
            $0.fields["STATUS"]?.hasPrefix("1 uploading") == true
        }
        #expect(uploading != nil, "no STATUS=1 uploading… while the job ran; \(context())")
        let wait = try Command.run(Self.uploadctl, ["--socket", socket, "wait", id, "--timeout", "60"], timeout: 90)
        #expect(wait.status == 0, "\(wait)\n\(context())")
        let doneAt = Date()
        // When the job is done, STATUS= says so again (systemctl status must not show it uploading forever).
        let idle = listener.waitFor(from: (uploading ?? readyIndex) + 1, timeout: 5) {
            $0.fields["STATUS"]?.hasPrefix("0 uploading") == true
        }
        #expect(idle != nil, "STATUS= still says uploading after the job finished; \(context())")

        // STATUS= only when it changes, at most about once a second.
        let statuses = listener.datagrams.filter { $0.fields["STATUS"] != nil && $0.fields["READY"] == nil }
        let span = doneAt.timeIntervalSince(ready.at)
        #expect(Double(statuses.count) <= span + 3, "\(statuses.count) STATUS= updates in \(span) s; \(context())")
        for (previous, next) in zip(statuses, statuses.dropFirst()) {
            #expect(
                previous.fields["STATUS"] != next.fields["STATUS"], "STATUS= repeated without a change; \(context())")
        }

        // WATCHDOG=1 every half interval (1 s of 2 s), busy or idle: never a gap that would get us killed.
        let pings = listener.datagrams.filter { $0.fields["WATCHDOG"] == "1" }.map(\.at)
        let watched = Date().timeIntervalSince(ready.at)
        #expect(pings.count >= Int(watched) - 1, "\(pings.count) WATCHDOG=1 in \(watched) s; \(context())")
        if let firstPing = pings.first {
            #expect(firstPing.timeIntervalSince(ready.at) <= 1.5, "the first WATCHDOG=1 came late; \(context())")
        }
        let gaps = zip(pings, pings.dropFirst()).map { $1.timeIntervalSince($0) }
        let longest = gaps.max() ?? 0
        #expect(longest <= 1.5, "a WATCHDOG=1 gap of \(longest) s (WATCHDOG_USEC=2 s); \(context())")
        #expect(pings.count <= Int(watched * 4) + 2, "WATCHDOG=1 far more often than needed; \(context())")

        // SIGHUP: RELOADING=1 (with MONOTONIC_USEC=), then READY=1.
        let beforeReload = listener.datagrams.count
        kill(process.processIdentifier, SIGHUP)
        let reloading = listener.waitFor(from: beforeReload, timeout: 10) { $0.fields["RELOADING"] == "1" }
        #expect(reloading != nil, "no RELOADING=1 after SIGHUP; \(context())")
        if let reloading {
            #expect(
                listener.datagrams[reloading].fields["MONOTONIC_USEC"] != nil,
                "RELOADING=1 without MONOTONIC_USEC=; \(context())")
            let readyAgain = listener.waitFor(from: reloading + 1, timeout: 10) { $0.fields["READY"] == "1" }
            #expect(readyAgain != nil, "no READY=1 after RELOADING=1; \(context())")
            // ... and the status line goes back to the queue: `systemctl status` must not say
            // "reloading" until the next job.
            if let readyAgain {
                usleep(1_500_000)
                let lastStatus =
                    listener.datagrams[readyAgain...].compactMap { $0.fields["STATUS"] }.last
                    ?? listener.datagrams[reloading].fields["STATUS"]
                #expect(
                    lastStatus?.contains("reloading") == false,
                    "STATUS= stays \(lastStatus ?? "unset") after the reload; \(context())")
            }
        }
        #expect(process.isRunning, "SIGHUP stopped the daemon; \(context())")

        // SIGTERM: STOPPING=1, nothing claims readiness after it, exit 0.
        let beforeStop = listener.datagrams.count
        kill(process.processIdentifier, SIGTERM)
        let stopping = listener.waitFor(from: beforeStop, timeout: 10) { $0.fields["STOPPING"] == "1" }
        #expect(stopping != nil, "no STOPPING=1 after SIGTERM; \(context())")
        #expect(eventually(timeout: 30) { !process.isRunning }, "SIGTERM did not stop the daemon; \(context())")
        process.waitUntilExit()
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 0,
            "exit \(process.terminationStatus); \(context())")
        if let stopping {
            let after = listener.datagrams[(stopping + 1)...]
            #expect(!after.contains { $0.fields["READY"] == "1" }, "READY=1 after STOPPING=1; \(context())")
        }
        print(
            "sd_notify datagrams (\(String(format: "%.1f", Date().timeIntervalSince(startedAt))) s):\n\(listener.transcript)"
        )
    }

    // MARK: - A real systemd

    /// Installs the units into root's user manager in a private systemd and runs the user's story:
    /// enable the socket, upload (socket activation starts the service), kill -9, restart, reload,
    /// journal, stop.
    @Test(.timeLimit(.minutes(3)))
    func realSystemdRunsRestartsReloadsAndStopsTheUserService() throws {
        if let reason = try SystemdNamespace.notPermittedReason() { try Privileges.unavailable(reason) }
        let root = try TestPaths.scratch("systemd-real")
        let receiver = try ReceiverProcess(directory: root.appendingPathComponent("receiver"))
        defer {
            receiver.stop()
            try? FileManager.default.removeItem(at: root.appendingPathComponent("receiver/files"))  // 200 MiB
        }
        let namespace = try SystemdNamespace(bootLog: root.appendingPathComponent("boot.log").path)
        defer {
            // Also when the test failed half-way: poweroff (or SIGKILL to PID 1) and check.
            namespace.stop()
            let left = namespace.leftovers()
            if !left.isEmpty { Issue.record("processes left in the namespace: \(left)") }
        }
        let bin = "/root/.local/bin"
        let uploadctl = "\(bin)/uploadctl"
        func ctl(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
            try namespace.run([uploadctl] + arguments, timeout: timeout)
        }
        func job(_ id: String) throws -> JobInfo {
            let result = try ctl(["--json", "show", id])
            guard result.status == 0 else { throw TestFailure("uploadctl show \(id): \(result)") }
            return try JSONCoding.decoder.decode(JobInfo.self, from: Data(result.stdout.utf8))
        }
        func journal() -> String {
            (try? namespace.run([
                "journalctl", "--user-unit", "uploadd", "--no-pager", "-o", "short-precise", "-n", "60",
            ]))?.stdout ?? ""
        }
        func status() -> String {
            (try? namespace.user(["status", "uploadd", "--no-pager", "-l", "-n", "15"])).map { $0.stdout + $0.stderr }
                ?? ""
        }

        // A user manager for root, started by lingering.
        let linger = try namespace.run(["loginctl", "enable-linger", "root"])
        try #require(linger.status == 0, "loginctl enable-linger root: \(linger)")
        var managerState = ""
        let managerUp = try eventually(timeout: 30) {
            managerState = try namespace.user(["is-system-running"]).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines)
            return managerState == "running" || managerState == "degraded"
        }
        try #require(managerUp, "root's user manager did not come up: \(managerState)")

        // Installed the way the README says (make install: binaries to ~/.local/bin, units with
        // @BINDIR@ filled in to ~/.config/systemd/user), then daemon-reload and enable --now the socket.
        let binaries = TestPaths.binaries.path
        let units = TestPaths.repository.appendingPathComponent("systemd").path
        let install = try namespace.shell(
            """
            install -d \(bin) /root/.config/systemd/user /root/.local/share/doc/uploadd
            install -m 0755 '\(binaries)/uploadd' '\(binaries)/uploadctl' '\(binaries)/uploadd-image' \(bin)/
            for unit in uploadd.service uploadd.socket; do
                sed -e 's|@BINDIR@|\(bin)|g' -e 's|@DOCDIR@|/root/.local/share/doc/uploadd|g' "\(units)/$unit" \
                    > /root/.config/systemd/user/$unit
                chmod 0644 /root/.config/systemd/user/$unit
            done
            install -m 0644 '\(TestPaths.repository.path)/README.md' /root/.local/share/doc/uploadd/
            # A rate limit, so that the upload lasts long enough to be watched and interrupted.
            mkdir -p /root/.config/uploadd
            printf '[daemon]\\nrate_limit = 20M\\n' > /root/.config/uploadd/uploadd.conf
            # The file to upload: 200 MiB in root's home.
            head -c 209715200 /dev/urandom > /root/big.bin
            sha256sum /root/big.bin
            """)
        try #require(install.status == 0, "install: \(install)")
        let sourceHash = try #require(install.stdout.split(separator: " ").first.map(String.init))
        for arguments in [["daemon-reload"], ["enable", "--now", "uploadd.socket"]] {
            let result = try namespace.user(arguments)
            try #require(result.status == 0, "systemctl --user \(arguments.joined(separator: " ")): \(result)")
        }
        #expect(try namespace.show("uploadd.socket", ["ActiveState"])["ActiveState"] == "active")
        #expect(
            try namespace.show("uploadd.service", ["ActiveState"])["ActiveState"] == "inactive",
            "uploadd.service runs before anyone asked for it")

        // The first uploadctl command starts the service through the socket.
        let add = try ctl(
            ["add", "/root/big.bin", "--protocol", "chunked", "--chunk-size", "4M", "--to", "\(receiver.url)/upload"]
                + receiver.tokenField)
        try #require(add.status == 0, "uploadctl add: \(add)\n\(status())\n\(journal())")
        let id = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(UInt64(id) != nil, "uploadctl add printed \(add.stdout)")

        var shown: [String: String] = [:]
        let liveStatus = try eventually(timeout: 10) {
            shown = try namespace.show("uploadd", ["ActiveState", "StatusText", "MainPID"])
            return shown["ActiveState"] == "active" && shown["StatusText"]?.hasPrefix("1 uploading") == true
        }
        #expect(liveStatus, "while uploading: \(shown)\n\(journal())")
        let statusWhileUploading = status()
        print("systemctl --user status uploadd (while uploading):\n\(statusWhileUploading)")
        #expect(statusWhileUploading.contains("Active: active (running)"), "\(statusWhileUploading)")
        #expect(statusWhileUploading.contains("Status: \"1 uploading"), "\(statusWhileUploading)")

        // kill -9 the main process mid-upload: systemd restarts it and the job completes.
        var before = try job(id)
        _ = eventually(timeout: 20) {
            before = (try? job(id)) ?? before
            return before.bytesAcked >= before.bytesTotal / 5
        }
        try #require(before.state == .running && before.bytesAcked < before.bytesTotal, "not mid-upload: \(before)")
        let mainPID = try #require(shown["MainPID"].flatMap { Int($0) }, "\(shown)")
        try #require(mainPID > 0, "\(shown)")
        let killed = try namespace.run(["kill", "-9", "\(mainPID)"])
        try #require(killed.status == 0, "kill -9 \(mainPID): \(killed)")
        var afterKill: [String: String] = [:]
        let restarted = try eventually(timeout: 20) {
            afterKill = try namespace.show("uploadd", ["ActiveState", "MainPID", "NRestarts", "StatusText"])
            let pid = Int(afterKill["MainPID"] ?? "") ?? 0
            return afterKill["ActiveState"] == "active" && pid != 0 && pid != mainPID
        }
        #expect(restarted, "systemd did not restart uploadd after kill -9: \(afterKill)\n\(journal())")
        #expect((Int(afterKill["NRestarts"] ?? "") ?? 0) >= 1, "\(afterKill)")
        let resumed = try job(id)
        #expect(
            resumed.bytesAcked >= before.bytesAcked,
            "acknowledged bytes went back: \(before.bytesAcked) -> \(resumed.bytesAcked)")
        let waited = try ctl(["wait", id, "--timeout", "90"], timeout: 120)
        #expect(waited.status == 0, "uploadctl wait \(id): \(waited)\n\(journal())")
        let done = try job(id)
        #expect(done.state == .completed, "\(done)")
        if let url = done.result?.url {
            let stored = receiver.storedFile(resultURL: url)
            #expect((try? Command.sha256(stored)) == sourceHash, "the received file differs from the source")
        } else {
            Issue.record("no result URL: \(done)")
        }
        // Resumed from the journal's last acknowledged block, not from the start: at most a block or
        // two (the one in flight at the kill) arrive twice.
        let counters = try receiver.stats()
        let received = Int64(counters["block_bytes_received"] ?? -1)
        #expect(
            received >= done.bytesTotal && received <= done.bytesTotal + 2 * (4 << 20),
            "the receiver accepted \(received) block bytes for a \(done.bytesTotal)-byte file: \(counters)")

        // The job's story in the journal, with its structured fields.
        let story = try namespace.run([
            "journalctl", "--user-unit", "uploadd", "UPLOAD_JOB_ID=\(id)", "-o", "verbose", "--no-pager",
        ])
        #expect(
            story.stdout.contains("UPLOAD_JOB_ID=\(id)"), "journalctl --user-unit uploadd UPLOAD_JOB_ID=\(id): \(story)"
        )
        #expect(story.stdout.contains("UPLOAD_PROTOCOL=chunked"), "\(story.stdout)")
        #expect(story.stdout.contains("UPLOAD_DESTINATION=\(receiver.url)/upload"), "\(story.stdout)")
        #expect(story.stdout.contains("MESSAGE=job \(id): completed"), "\(story.stdout)")

        // A file:// upload of a file on another file system than ~/.cache (the snapshot's home):
        // the repository's .build is not root's tmpfs.
        let crossSource = root.appendingPathComponent("elsewhere.bin").path
        try makeRandomFile(at: crossSource, size: 3 << 20)
        let crossTarget = root.appendingPathComponent("file-dest")
        let cross = try ctl(["add", crossSource, "--to", "file://\(crossTarget.path)/", "--wait"])
        #expect(cross.status == 0, "a file from another file system: \(cross)")
        if cross.status == 0 {
            #expect(
                (try? Command.sha256(crossTarget.appendingPathComponent("elsewhere.bin").path))
                    == (try Command.sha256(crossSource)))
        }

        // 12,000 small files ending in a few seconds: past 100 lines a second the ends are counted
        // in one line a second, and journald takes every line. (journald's own limit, 10,000 in
        // 30 s scaled up with the free disk space, is not reached by 12,000 here even without the
        // cap: the summary is what fails without it.)
        let many = try namespace.shell(
            """
            mkdir -p /root/many && cd /root/many && head -c 12000000 /dev/urandom | split -b 1000 -a 5 - f
            \(uploadctl) add /root/many/* --to file:///root/many-out/ --wait > /dev/null
            """, timeout: 120)
        #expect(many.status == 0, "12,000 small files: \(many)\n\(journal())")
        let journaldLines = try namespace.run(["journalctl", "--no-pager", "-o", "cat", "-t", "systemd-journald"])
        #expect(!journaldLines.stdout.contains("Suppressed"), "journald dropped lines: \(journaldLines.stdout)")
        let summaries = try namespace.run([
            "journalctl", "--user-unit", "uploadd", "--no-pager", "-o", "cat", "-g", "not written one by one",
        ])
        #expect(summaries.stdout.contains("completed"), "no summary of the ends: \(summaries)")

        // An image prepared under the unit's sandbox (its seccomp filter, MemoryDenyWriteExecute):
        // the helper starts, sets its limits, gives up the network and does its work.
        let photo = root.appendingPathComponent("sandboxed.jpg").path
        try TestImages.phonePhoto(at: photo, width: 800, height: 600)
        let shrunk = try ctl(["add", photo, "--to", "file://\(crossTarget.path)/", "--image", "max=200", "--wait"])
        #expect(shrunk.status == 0, "an image under systemd: \(shrunk)\n\(journal())")
        let shrunkSize = try TestImages.dimensions(crossTarget.appendingPathComponent("sandboxed.jpg").path)
        #expect(shrunkSize?.width == 150 && shrunkSize?.height == 200, "\(String(describing: shrunkSize))")

        // systemctl --user reload: RELOADING=1/READY=1, the same process, still active, and the
        // status line back to what the daemon is doing.
        let pidBeforeReload = try namespace.show("uploadd", ["MainPID"])["MainPID"]
        let reload = try namespace.user(["reload", "uploadd"])
        #expect(reload.status == 0, "systemctl --user reload uploadd: \(reload)\n\(journal())")
        var afterReload: [String: String] = [:]
        let settled = try eventually(timeout: 5) {
            afterReload = try namespace.show("uploadd", ["ActiveState", "SubState", "MainPID", "StatusText"])
            return afterReload["ActiveState"] == "active" && afterReload["StatusText"]?.contains("reloading") == false
        }
        #expect(afterReload["ActiveState"] == "active" && afterReload["MainPID"] == pidBeforeReload, "\(afterReload)")
        #expect(settled, "after the reload: \(afterReload)")
        #expect(journal().contains("config reloaded"), "\(journal())")

        let finalStatus = status()
        print("systemctl --user status uploadd (after the restart and reload):\n\(finalStatus)")

        // stop: a clean exit, and the socket stays to start it again.
        let stop = try namespace.user(["stop", "uploadd"])
        #expect(stop.status == 0, "systemctl --user stop uploadd: \(stop)")
        let afterStop = try namespace.show("uploadd", ["ActiveState", "Result", "ExecMainStatus", "ExecMainCode"])
        #expect(
            afterStop["ActiveState"] == "inactive" && afterStop["Result"] == "success", "\(afterStop)\n\(journal())")
        #expect(afterStop["ExecMainStatus"] == "0", "uploadd exited with \(afterStop)")
        #expect(journal().contains("stopped"), "\(journal())")
        #expect(try namespace.show("uploadd.socket", ["ActiveState"])["ActiveState"] == "active")
        print("journalctl --user-unit uploadd (last lines):\n\(journal())")

        // poweroff, and nothing left behind.
        let poweroffStart = Date()
        namespace.stop()
        print("poweroff took \(String(format: "%.1f", Date().timeIntervalSince(poweroffStart))) s")
        #expect(!namespace.isRunning, "the namespace's PID 1 (\(namespace.pid)) is still there")
        #expect(namespace.leftovers().isEmpty, "processes left in the namespace: \(namespace.leftovers())")
        receiver.stop()
        let strays = try Command.run("/usr/bin/pgrep", ["-af", root.path])
        #expect(strays.stdout.isEmpty, "processes left behind: \(strays.stdout)")
    }
}
