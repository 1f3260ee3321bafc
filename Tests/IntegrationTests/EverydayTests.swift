import Foundation
import Testing
import UploadCore
import UploadWire

/// Everyday use against real servers and a real daemon: folders with their structure, paths from
/// `find -print0`, batches, and the hooks that run when jobs end.
@Suite(.serialized)
final class EverydayTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("everyday-files")
    }

    func write(_ relativePath: String, size: Int = 2_000) throws -> String {
        let path = files.appendingPathComponent(relativePath).path
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try makeRandomFile(at: path, size: size)
        return path
    }

    /// trip/{a.jpg, day 1/b.jpg, day 1/#2/c.jpg, .hidden/h, cache/x.tmp, notes.tmp} and a symlink.
    func makeTrip(_ tag: String) throws -> URL {
        let trip = files.appendingPathComponent("\(tag)/trip")
        for path in ["a.jpg", "day 1/b.jpg", "day 1/#2/c.jpg", ".hidden/h.jpg", "cache/x.jpg", "notes.tmp"] {
            _ = try write("\(tag)/trip/\(path)")
        }
        try FileManager.default.createSymbolicLink(
            atPath: trip.appendingPathComponent("elsewhere").path, withDestinationPath: "/etc")
        return trip
    }

    static let expectedTrip = ["trip/a.jpg", "trip/day 1/#2/c.jpg", "trip/day 1/b.jpg"]

    /// The files under `root`, relative to it, sorted.
    static func tree(_ root: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(root)/\(path)", isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                found.append(path)
            }
        }
        return found.sorted()
    }

    func addFolder(_ daemon: DaemonProcess, _ trip: URL, to destination: String, _ options: [String] = [])
        throws -> [JobInfo]
    {
        let added = try daemon.ctl(
            ["--json", "add", trip.path, "--to", destination, "--exclude", "cache", "--exclude", "*.tmp"] + options)
        #expect(added.status == 0, "\(added)")
        let list = try JSONCoding.decoder.decode(JobList.self, from: Data(added.stdout.utf8))
        #expect(Set(list.jobs.compactMap(\.batch)) == [list.jobs[0].id], "one batch, named by its first job")
        for job in list.jobs { #expect(try daemon.waitFor(job.id).state == .completed) }
        return list.jobs
    }

    @Test func aNestedFolderWithExcludesLandsWithItsStructureOnNginxAndTheSecondDAV() throws {
        let daemon = try DaemonProcess(name: "everyday-folders")
        try daemon.start()
        defer { daemon.stop() }
        let tag = "folders-\(UUID().uuidString.prefix(6))"
        let trip = try makeTrip(tag)

        _ = try addFolder(daemon, trip, to: "\(servers.nginxURL)/dav/\(tag)/2026/")
        #expect(Self.tree("\(servers.nginxRoot)/dav/\(tag)/2026") == Self.expectedTrip)
        for path in Self.expectedTrip {
            #expect(
                try Command.sha256("\(servers.nginxRoot)/dav/\(tag)/2026/\(path)")
                    == Command.sha256(trip.deletingLastPathComponent().appendingPathComponent(path).path))
        }

        let dav = try #require(servers.dav2, "the second WebDAV server is not running")
        let jobs = try addFolder(
            daemon, trip, to: "\(dav.url)/\(tag)/", ["--user", "\(dav.user):\(dav.password)", "--hidden"])
        #expect(jobs.count == 4, "--hidden adds .hidden/h.jpg")
        #expect(Self.tree("\(dav.root)/\(tag)") == (Self.expectedTrip + ["trip/.hidden/h.jpg"]).sorted())

        let listed = try daemon.ctlJSON(JobList.self, ["list", "--batch", "\(jobs[0].id)"])
        #expect(listed.jobs.map(\.id) == jobs.map(\.id))
        let waited = try daemon.ctl(["wait", "--batch", "\(jobs[0].id)"])
        #expect(waited.status == 0, "\(waited)")
    }

    @Test func aFolderGoesOnlyToAFolder() throws {
        let daemon = try DaemonProcess(name: "everyday-folder-dest")
        try daemon.start()
        defer { daemon.stop() }
        let trip = try makeTrip("dest-\(UUID().uuidString.prefix(6))")
        let refused = try daemon.ctl(["add", trip.path, "--to", "\(servers.nginxURL)/dav/not-a-folder"])
        #expect(refused.status == 64 && refused.stderr.contains("end --to with /"), "\(refused)")
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.isEmpty)
    }

    @Test func fiveThousandSmallFilesFromFindPrint0() throws {
        let daemon = try DaemonProcess(name: "everyday-find", config: "[daemon]\ntransfers = 8\n")
        try daemon.start()
        defer { daemon.stop() }
        let tag = "find-\(UUID().uuidString.prefix(6))"
        let folder = files.appendingPathComponent(tag)
        for index in 0..<5_000 {
            let sub = folder.appendingPathComponent("d\(index % 10)")
            if index < 10 { try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true) }
            try Data("file \(index) with a name 'quoted' and spaces\n".utf8).write(
                to: sub.appendingPathComponent("f \(index).txt"))
        }
        let uploadctl = TestPaths.binaries.appendingPathComponent("uploadctl").path
        let added = try Command.run(
            "/bin/sh",
            [
                "-c",
                "find \"$1\" -type f -print0 | \"$2\" --socket \"$3\" add - -0 --to \"$4\"", "sh", folder.path,
                uploadctl, daemon.socket, "\(servers.nginxURL)/dav/\(tag)/",
            ], timeout: 300)
        #expect(added.status == 0, "\(added.stderr.suffix(500))")
        let ids = added.stdout.split(separator: "\n").compactMap { JobID(String($0)) }
        #expect(ids.count == 5_000)
        let batch = try #require(ids.first)
        let waited = try daemon.ctl(["wait", "--batch", "\(batch)", "--timeout", "240"], timeout: 300)
        #expect(waited.status == 0, "\(waited.stderr.suffix(500))")
        #expect(Self.tree("\(servers.nginxRoot)/dav/\(tag)").count == 5_000)
        #expect(
            try daemon.ctlJSON(JobList.self, ["list", "--batch", "\(batch)", "--state", "completed"]).jobs.count
                == 5_000)
    }

    // MARK: - Hooks

    func hookDaemon(_ name: String, extra: String = "") throws -> (DaemonProcess, String) {
        let record = files.appendingPathComponent("\(name)-hooks").path
        try FileManager.default.createDirectory(atPath: record, withIntermediateDirectories: true)
        let config = """
            [daemon]
            on_complete = sh -c 'env | grep ^UPLOAD_ | sort > "$0/$UPLOAD_ID.env"; echo ran >> "$0/$UPLOAD_ID.runs"; echo hello from the hook' \(record)
            on_failure = sh -c 'echo "$UPLOAD_STATE $UPLOAD_ERROR" > "$0/$UPLOAD_ID.failed"' \(record)
            retry_attempts = 1
            \(extra)
            """
        let daemon = try DaemonProcess(name: name, config: config)
        return (daemon, record)
    }

    @Test func hooksRunWithTheJobInTheirEnvironmentAndLeaveTheirOutputInTheHistory() throws {
        let (daemon, record) = try hookDaemon("everyday-hooks")
        try daemon.start()
        defer { daemon.stop() }
        let source = try write("hooks/photo one.jpg")
        let id = try daemon.add([source], to: "\(servers.nginxURL)/dav/hooks/", ["--meta", "album=Trip 2026"])[0]
        #expect(try daemon.waitFor(id).state == .completed)
        // The hook writes `.runs` after `.env` is whole: the shell creates `.env` before `sort` writes it.
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: "\(record)/\(id).runs") })
        let environment = try String(contentsOfFile: "\(record)/\(id).env", encoding: .utf8)
        #expect(
            environment == """
                UPLOAD_BATCH=\(id)
                UPLOAD_CLIENT_TOKEN=
                UPLOAD_DESTINATION=\(servers.nginxURL)/dav/hooks/
                UPLOAD_ERROR=
                UPLOAD_ID=\(id)
                UPLOAD_METADATA={"album":"Trip 2026"}
                UPLOAD_SOURCE=\(source)
                UPLOAD_STATE=completed
                UPLOAD_URL=\(servers.nginxURL)/dav/hooks/photo%20one.jpg

                """)
        #expect(
            eventually(timeout: 10) {
                (try? daemon.job(id))?.history?.contains {
                    $0.message == "on_complete hook sh exited 0: hello from the hook"
                }
                    == true
            }, "\(String(describing: try? daemon.job(id).history))")
        #expect(daemon.log(tail: 200).contains("on_complete hook sh exited 0: hello from the hook"))

        let failing = try daemon.add([source], to: "\(servers.nginxURL)/private/")[0]
        #expect(try daemon.waitFor(failing).state == .failed)
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: "\(record)/\(failing).failed") })
        let failure = try String(contentsOfFile: "\(record)/\(failing).failed", encoding: .utf8)
        #expect(failure.hasPrefix("failed ") && failure.contains("401"), "\(failure)")
    }

    @Test func aHangingHookIsKilledAtItsTimeoutAndTheQueueGoesOn() throws {
        let daemon = try DaemonProcess(
            name: "everyday-hang", config: "[daemon]\non_complete = sleep 600\nhook_timeout = 2\ntransfers = 1\n")
        try daemon.start()
        defer { daemon.stop() }
        let first = try daemon.add([try write("hang/a.jpg")], to: "\(servers.nginxURL)/dav/hang/")[0]
        #expect(try daemon.waitFor(first).state == .completed)
        // The hook hangs; the queue does not wait for it.
        let second = try daemon.add([try write("hang/b.jpg")], to: "\(servers.nginxURL)/dav/hang/")[0]
        #expect(try daemon.waitFor(second, timeout: 10).state == .completed)
        #expect(
            eventually(timeout: 20) {
                (try? daemon.job(first))?.history?.contains {
                    $0.message.contains("on_complete hook sleep did not end within 2 s")
                } == true
            }, "\(String(describing: try? daemon.job(first).history))")
        let sleeping = try Command.run("/usr/bin/pgrep", ["-f", "^sleep 600$"])
        #expect(sleeping.stdout.isEmpty, "the hook's process is gone: \(sleeping)")
    }

    @Test func aKillBetweenAJobsEndAndItsHookRunsTheHookOnceAfterTheRestart() throws {
        let (daemon, record) = try hookDaemon("everyday-hook-crash")
        daemon.extraEnvironment = ["UPLOADD_TEST_CRASH_AT": "hook-due"]
        try daemon.start()
        let id = try daemon.add([try write("crash/a.jpg")], to: "\(servers.nginxURL)/dav/hook-crash/")[0]
        #expect(eventually(timeout: 30) { daemon.diedOfSIGKILL }, "the daemon died where the hook was due")
        #expect(!FileManager.default.fileExists(atPath: "\(record)/\(id).runs"), "the hook had not run")
        daemon.crash()
        daemon.extraEnvironment = [:]
        try daemon.start()
        #expect(try daemon.job(id).state == .completed)
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: "\(record)/\(id).runs") })
        #expect(
            eventually(timeout: 10) {
                (try? daemon.job(id))?.history?.contains { $0.message.hasPrefix("on_complete hook") } == true
            })
        // Once: not again after another restart.
        daemon.stop()
        try daemon.start()
        Thread.sleep(forTimeInterval: 2)
        daemon.stop()
        #expect(try String(contentsOfFile: "\(record)/\(id).runs", encoding: .utf8) == "ran\n")
    }

    // MARK: - Notifications

    @Test func oneNotificationPerBatchThroughTheSessionBus() throws {
        let bus = try BusMock(system: false, session: true)
        defer { bus.stop() }
        let daemon = try DaemonProcess(name: "everyday-notify", config: "[daemon]\nnotify = all\nretry_attempts = 1\n")
        daemon.extraEnvironment = bus.environment
        try daemon.start()
        defer { daemon.stop() }
        let trip = try makeTrip("notify-\(UUID().uuidString.prefix(6))")
        let added = try daemon.ctl(["add", trip.path, "--to", "\(servers.nginxURL)/dav/notify/", "--exclude", "*.tmp"])
        #expect(added.status == 0, "\(added)")
        let ids = added.stdout.split(separator: "\n").compactMap { JobID(String($0)) }
        #expect(ids.count == 4)
        #expect(try daemon.ctl(["wait", "--batch", "\(ids[0])"]).status == 0)
        #expect(eventually(timeout: 15) { (try? bus.notifications())?.count == 1 })
        Thread.sleep(forTimeInterval: 3)
        let shown = try bus.notifications()
        #expect(shown.count == 1, "one per batch, not one per file: \(shown)")
        #expect(shown.first?.summary == "Uploaded 4 files" && shown.first?.appName == "uploadd", "\(shown)")
        #expect(
            shown.first?.body == "to \(servers.nginxURL)/dav/notify/trip/" || shown.first?.body.hasPrefix("to ") == true
        )

        // A batch with a failure says so, urgently.
        try bus.clearNotifications()
        let good = try write("notify-mixed/good.jpg")
        let denied = try daemon.ctl([
            "add", good, try write("notify-mixed/other.jpg"), "--to", "\(servers.nginxURL)/private/",
        ])
        #expect(denied.status == 0)
        #expect(eventually(timeout: 20) { (try? bus.notifications())?.count == 1 })
        let failure = try #require(try bus.notifications().first)
        #expect(failure.summary == "2 of 2 files failed to upload" && failure.urgency == 2, "\(failure)")
        #expect(failure.body.contains("good.jpg") && failure.body.contains("--state failed"), "\(failure)")

        // No notification service: nothing shown, nothing breaks.
        try bus.removeNotifications()
        let quiet = try daemon.add([try write("notify-mixed/quiet.jpg")], to: "\(servers.nginxURL)/dav/notify/")[0]
        #expect(try daemon.waitFor(quiet).state == .completed)
        Thread.sleep(forTimeInterval: 3)
        #expect(try daemon.ctl(["status"]).status == 0)
    }

    /// Notification servers read markup in the body (some in the summary too): a name holding
    /// `<img src=...>` or `<a href=...>` is shown as text, never loaded or made a link.
    @Test func notificationsShowMarkupAsText() throws {
        let bus = try BusMock(system: false, session: true)
        defer { bus.stop() }
        let daemon = try DaemonProcess(name: "everyday-markup", config: "[daemon]\nnotify = all\n")
        daemon.extraEnvironment = bus.environment
        try daemon.start()
        defer { daemon.stop() }
        let source = try write("markup/<img src=x>&<b>.jpg")
        let target = files.appendingPathComponent("markup-<a href=y>").path
        let id = try daemon.add([source], to: "file://\(target)/")[0]
        #expect(try daemon.waitFor(id).state == .completed)
        #expect(eventually(timeout: 15) { (try? bus.notifications())?.count == 1 })
        let shown = try #require(try bus.notifications().first)
        #expect(shown.summary == "Uploaded &lt;img src=x&gt;&amp;&lt;b&gt;.jpg", "\(shown)")
        #expect(shown.body.contains("markup-&lt;a href=y&gt;/") && !shown.body.contains("<"), "\(shown)")
    }

    // MARK: - Passwords

    @Test func aPasswordAskedOnTheTerminalIsNotEchoedAndNotInPs() throws {
        let daemon = try DaemonProcess(name: "everyday-prompt")
        try daemon.start()
        defer { daemon.stop() }
        let source = try write("prompt/secret.jpg")
        let uploadctl = TestPaths.binaries.appendingPathComponent("uploadctl").path
        let pane = try TmuxPane(width: 120, height: 20)
        try pane.run(
            "\(uploadctl) --socket \(daemon.socket) add \(source) --to \(servers.nginxURL)/private/prompt/ --user \(servers.user); echo exit=$?"
        )
        let asked = pane.waitFor { $0.contains("Password for \(servers.user): ") }
        try #require(asked.met, "no prompt:\n\(asked.screen)")
        let ps = try Command.run("/bin/ps", ["-eo", "args"])
        #expect(!ps.stdout.contains(servers.password))
        try pane.tmux(["send-keys", "-t", "main", "-l", servers.password])
        try pane.keys("Enter")
        let done = pane.waitFor { $0.split(separator: "\n").contains { $0.hasPrefix("exit=") } }
        #expect(done.screen.split(separator: "\n").contains("exit=0"), "\(done.screen)")
        #expect(!done.screen.contains(servers.password), "the password was echoed:\n\(done.screen)")
        let id = try #require(try daemon.ctlJSON(JobList.self, ["list"]).jobs.first?.id)
        #expect(try daemon.waitFor(id).state == .completed)
        #expect(try Command.sha256("\(servers.nginxRoot)/private/prompt/secret.jpg") == Command.sha256(source))
    }
}
