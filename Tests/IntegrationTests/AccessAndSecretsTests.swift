import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Who gets in, what leaks, and where files land: only the socket owner's uid is served, the
/// daemon's files are private, secrets never reach logs, output or events, and a hostile local file
/// name cannot put a file outside the destination.
@Suite(.serialized)
final class AccessAndSecretsTests {
    let files: URL

    init() throws {
        files = try TestPaths.scratch("access-files")
    }

    private var uploadd: String { TestPaths.binaries.appendingPathComponent("uploadd").path }
    private var uploadctl: String { TestPaths.binaries.appendingPathComponent("uploadctl").path }

    private static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    private static func octal(_ mode: mode_t?) -> String { mode.map { String($0, radix: 8) } ?? "missing" }

    // MARK: Who gets in

    @Test(.enabled(if: geteuid() == 0, "needs root to run a client as another uid (setpriv --reuid=nobody)"))
    func anotherUIDIsRefusedEvenWhenTheSocketIsOpenedUp() throws {
        let daemon = try DaemonProcess(name: "access-uid")
        try daemon.start()
        defer { daemon.stop() }
        let runDirectory = (daemon.socket as NSString).deletingLastPathComponent
        #expect(Self.mode(runDirectory) == 0o700, "socket directory: \(Self.octal(Self.mode(runDirectory)))")
        #expect(Self.mode(daemon.socket) == 0o600, "socket: \(Self.octal(Self.mode(daemon.socket)))")

        // Open everything up, so that only SO_PEERCRED stands in the way.
        chmod(daemon.root.path, 0o755)
        chmod(runDirectory, 0o777)
        chmod(daemon.socket, 0o777)
        let asNobody = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(sys.argv[1])
            except OSError as e:
                print("CONNECT-FAILED", e.errno, e.strerror); sys.exit(0)
            print("CONNECTED")
            try:
                s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"job.list"}\\n')
            except OSError as e:
                print("SEND-FAILED", e.strerror)
            data = b""
            s.settimeout(10)
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                print("EOF")
            except OSError as e:
                print("RECV-ENDED", e.strerror)
            print(data.decode("utf-8", "replace"))
            """
        let raw = try Command.run(
            "/usr/bin/setpriv", asNobody + ["/usr/bin/python3", "-c", script, daemon.socket], timeout: 30)
        print("a client as nobody: \(raw)")
        #expect(
            raw.stdout.contains("CONNECTED"),
            "the opened-up socket lets nobody connect (so SO_PEERCRED is what refuses): \(raw)")
        #expect(raw.stdout.contains("\(RPCError.deniedCode)") && raw.stdout.contains("permission denied"), "\(raw)")
        #expect(!raw.stdout.contains("\"result\""), "nobody got an answer: \(raw)")
        #expect(raw.stdout.contains("EOF") || raw.stdout.contains("RECV-ENDED"), "the connection is closed: \(raw)")

        let ctl = try Command.run(
            "/usr/bin/setpriv", asNobody + [uploadctl, "--socket", daemon.socket, "list"], timeout: 30)
        print("uploadctl as nobody: \(ctl)")
        #expect(ctl.status != 0, "\(ctl)")
        #expect(ctl.stderr.contains("permission denied"), "uploadctl says why: \(ctl)")
        #expect(!daemon.logLines(containing: "refused a client of uid 65534").isEmpty, "the daemon logs the refusal")
        #expect(try daemon.ctl(["status"]).status == 0, "the owner is still served")
    }

    /// A local user connecting in a loop got a warning line per connection: a journal filled, and
    /// the daemon's own lines pushed past journald's rate limit. Now the first few are logged.
    @Test(.enabled(if: geteuid() == 0, "needs root to run a client as another uid (setpriv --reuid=nobody)"))
    func refusedClientsGetAFewLogLinesNotOneEach() throws {
        let daemon = try DaemonProcess(name: "access-refusals")
        try daemon.start()
        defer { daemon.stop() }
        let runDirectory = (daemon.socket as NSString).deletingLastPathComponent
        chmod(daemon.root.path, 0o755)
        chmod(runDirectory, 0o777)
        chmod(daemon.socket, 0o777)
        let script = """
            import socket, sys
            refused = 0
            for _ in range(40):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.settimeout(10)
                refused += b"permission denied" in s.recv(65536)
                s.close()
            print("REFUSED", refused)
            """
        let run = try Command.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/usr/bin/python3", "-c", script,
                daemon.socket,
            ],
            timeout: 60)
        #expect(run.stdout.contains("REFUSED 40"), "every connection is refused: \(run)")
        #expect(try daemon.ctl(["status"]).status == 0, "the owner is still served")
        let lines = daemon.logLines(containing: "refused a client of uid 65534")
        #expect(lines.count == 5, "\(lines.count) lines for 40 refusals:\n\(lines.joined(separator: "\n"))")
    }

    @Test func theDaemonsFilesAndDirectoriesArePrivate() throws {
        let daemon = try DaemonProcess(
            name: "access-modes", config: "[daemon]\nretry_base_delay = 600000\nretry_attempts = 5\nretry_for = 0\n")
        let runDirectory = (daemon.socket as NSString).deletingLastPathComponent
        // A socket folder left open to others is refused, not chmod'ed: someone else may have made it.
        chmod(runDirectory, 0o755)
        let refused = try CrashSupport.runUploadd(daemon)
        #expect(refused.status != 0 && refused.stderr.contains("lets group or others in (mode 755"), "\(refused)")
        #expect(Self.mode(runDirectory) == 0o755, "the folder's mode was left alone")
        chmod(runDirectory, 0o700)
        try daemon.start()
        defer { daemon.stop() }
        // A job that waits to retry keeps its snapshot in the cache.
        let source = files.appendingPathComponent("kept.bin").path
        try makeRandomFile(at: source, size: 64 << 10)
        let ids = try daemon.add(
            [source], to: "http://127.0.0.1:1/nowhere/", ["--protocol", "put", "--snapshot", "copy"])
        let waiting = try eventually(timeout: 30) {
            let job = try daemon.job(ids[0])
            return job.attempts >= 1 && job.state == .queued && job.nextAttemptAt != nil
        }
        #expect(waiting, "the job waits to retry: \(String(describing: try? daemon.job(ids[0])))")
        let snapshots =
            (try? FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots")) ?? []
        #expect(!snapshots.isEmpty, "the job's snapshot is in the cache")

        var modes: [(String, mode_t?, mode_t)] = [
            (runDirectory, Self.mode(runDirectory), 0o700), (daemon.socket, Self.mode(daemon.socket), 0o600),
            (daemon.stateDirectory, Self.mode(daemon.stateDirectory), 0o700),
            (daemon.stateDirectory + "/journal", Self.mode(daemon.stateDirectory + "/journal"), 0o600),
            (daemon.stateDirectory + "/lock", Self.mode(daemon.stateDirectory + "/lock"), 0o600),
            (daemon.cacheDirectory, Self.mode(daemon.cacheDirectory), 0o700),
            (daemon.cacheDirectory + "/snapshots", Self.mode(daemon.cacheDirectory + "/snapshots"), 0o700),
        ]
        for name in snapshots {
            let path = daemon.cacheDirectory + "/snapshots/" + name
            modes.append((path, Self.mode(path), 0o600))
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory)) ?? [] {
            let path = daemon.stateDirectory + "/" + name
            modes.append((path, Self.mode(path), 0o600))
        }
        for (path, actual, wanted) in modes {
            print("mode \(Self.octal(actual)) \(path)")
            #expect(actual == wanted, "\(path) is \(Self.octal(actual)), should be \(String(wanted, radix: 8))")
        }
        _ = try daemon.ctl(["cancel", "\(ids[0])"])
    }

    /// Starts uploadd with its socket in `socketDirectory`; it must refuse with exit 1 and say why.
    private func expectRefusal(socketDirectory: String, mentioning text: String) throws {
        let base = try TestPaths.scratch("access-refuse")
        let config = base.appendingPathComponent("uploadd.conf").path
        try "".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try Command.run(
            uploadd,
            [
                "--state-dir", base.appendingPathComponent("state").path, "--cache-dir",
                base.appendingPathComponent("cache").path,
                "--socket", socketDirectory + "/control.sock", "--config", config,
            ], timeout: 15)
        print("uploadd with its socket in \(socketDirectory): \(result)")
        #expect(result.status == 1, "uploadd refuses to start: \(result)")
        #expect(result.stderr.contains(text), "the message says why (\(text)): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socketDirectory + "/control.sock"), "no socket was created")
    }

    @Test func aSymlinkedRuntimeDirectoryIsRefused() throws {
        let real = files.appendingPathComponent("real-run").path
        try FileManager.default.createDirectory(
            atPath: real, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let link = files.appendingPathComponent("link-run").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        try expectRefusal(socketDirectory: link, mentioning: "symlink")
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: real))?.isEmpty == true,
            "nothing was put behind the link")
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to chown a directory to nobody"))
    func aRuntimeDirectoryOwnedBySomeoneElseIsRefused() throws {
        let other = files.appendingPathComponent("other-run").path
        try FileManager.default.createDirectory(
            atPath: other, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chown(other, 65534, 65534) == 0)
        try expectRefusal(socketDirectory: other, mentioning: "belongs to uid 65534")
    }

    // MARK: Secrets

    @Test func secretsNeverLeaveTheDaemon() throws {
        let servers = try TestServers.load()
        let tag = String(UUID().uuidString.prefix(8))
        var secrets: [(label: String, value: String)] = [
            ("--user password", servers.password), ("wrong --user password", "WRONGPW-\(tag)"),
            ("password_file password (wrong)", "WRONGFILEPW-\(tag)"), ("Authorization header", "BEARERTOKEN-\(tag)"),
            ("URL password", "URLPW-\(tag)"), ("presigned signature", "PRESIGNSIG-\(tag)"),
        ]
        func secret(_ label: String) -> String { secrets.first { $0.label == label }!.value }
        let rightPasswordFile = files.appendingPathComponent("right.pw").path
        let wrongPasswordFile = files.appendingPathComponent("wrong.pw").path
        try "\(servers.password)\n".write(toFile: rightPasswordFile, atomically: true, encoding: .utf8)
        try "\(secret("password_file password (wrong)"))\n".write(
            toFile: wrongPasswordFile, atomically: true, encoding: .utf8)
        var config = """
            [daemon]
            retry_attempts = 2
            retry_for = 0
            retry_base_delay = 100

            [remote privright]
            protocol = put
            url = \(servers.nginxURL)/private/secrets-\(tag)/
            user = \(servers.user)
            password_file = \(rightPasswordFile)

            [remote privwrong]
            protocol = put
            url = \(servers.nginxURL)/private/secrets-\(tag)/
            user = \(servers.user)
            password_file = \(wrongPasswordFile)


            """
        if let s3 = servers.s3 {
            secrets += [("S3 secret key", s3.secretKey), ("wrong S3 secret key", "WRONGS3KEY-\(tag)")]
            let right = files.appendingPathComponent("s3.secret").path
            let wrong = files.appendingPathComponent("s3-wrong.secret").path
            try "\(s3.secretKey)\n".write(toFile: right, atomically: true, encoding: .utf8)
            try "\(secret("wrong S3 secret key"))\n".write(toFile: wrong, atomically: true, encoding: .utf8)
            for (name, file) in [("s3right", right), ("s3wrong", wrong)] {
                config += """
                    [remote \(name)]
                    protocol = s3
                    url = s3://\(s3.bucket)/itest/secrets-\(tag)/
                    endpoint = \(s3.endpoint)
                    region = \(s3.region)
                    access_key_id = \(s3.accessKey)
                    secret_access_key_file = \(file)


                    """
            }
        }
        let daemon = try DaemonProcess(name: "secrets", config: config)
        try daemon.start()
        defer { daemon.stop() }

        // Everything clients see, from the start: events as JSON and as text.
        var outputs: [(name: String, text: String)] = []
        func background(_ arguments: [String]) throws -> (ChildProcess, String) {
            let out = files.appendingPathComponent("out-\(UUID().uuidString.prefix(6))").path
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: uploadctl)
            process.arguments = ["--socket", daemon.socket] + arguments
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            return (process, out)
        }
        let watchers = [try background(["--json", "watch"]), try background(["watch"])]
        // Both watchers are subscribed once a job's events reach both: add a probe job (a local
        // copy), again if one watcher was not subscribed yet when its events went out.
        let probeSource = files.appendingPathComponent("subscription-probe.txt").path
        try "probe\n".write(toFile: probeSource, atomically: true, encoding: .utf8)
        let probeTarget = files.appendingPathComponent("probe-target").path
        var subscribed = false
        for _ in 0..<20 where !subscribed {
            _ = try daemon.waitFor(try daemon.add([probeSource], to: "file://\(probeTarget)/")[0])
            subscribed = eventually(timeout: 1) {
                watchers.allSatisfy { !((try? String(contentsOfFile: $0.1, encoding: .utf8)) ?? "").isEmpty }
            }
        }
        try #require(subscribed, "uploadctl watch printed no event of 20 probe jobs")

        let withPassword = { (password: String) in
            servers.nginxURL.replacingOccurrences(of: "://", with: "://\(servers.user):\(password)@")
        }
        var jobs: [(name: String, expect: JobState, arguments: [String])] = [
            (
                "user-right", .completed,
                [
                    "--to", "\(servers.nginxURL)/private/secrets-\(tag)/", "--protocol", "put", "--user",
                    "\(servers.user):\(servers.password)",
                ]
            ),
            (
                "user-wrong", .failed,
                [
                    "--to", "\(servers.nginxURL)/private/secrets-\(tag)/", "--protocol", "put", "--user",
                    "\(servers.user):\(secret("wrong --user password"))",
                ]
            ),
            ("file-right", .completed, ["--to", "privright:"]),
            ("file-wrong", .failed, ["--to", "privwrong:"]),
            (
                "bearer", .completed,
                [
                    "--to", "\(servers.nginxURL)/dav/secrets-\(tag)/", "--protocol", "put", "--header",
                    "Authorization: Bearer \(secret("Authorization header"))",
                ]
            ),
            ("url-wrong", .failed, ["--to", "\(withPassword(secret("URL password")))/private/secrets-\(tag)/"]),
            (
                "url-right", .completed,
                ["--to", "\(withPassword(servers.password))/private/secrets-\(tag)/", "--protocol", "put"]
            ),
            (
                "presigned", .completed,
                [
                    "--to",
                    "\(servers.nginxURL)/dav/secrets-\(tag)/presigned.bin?X-Amz-Credential=AKIAX&X-Amz-Signature=\(secret("presigned signature"))",
                    "--protocol", "put",
                ]
            ),
        ]
        if servers.s3 != nil {
            jobs += [("s3-right", .completed, ["--to", "s3right:"]), ("s3-wrong", .failed, ["--to", "s3wrong:"])]
        }
        var ids: [(name: String, id: JobID, expect: JobState)] = []
        for job in jobs {
            let path = files.appendingPathComponent("\(job.name).bin").path
            try makeRandomFile(at: path, size: 20_000)
            let json = job.name == "bearer" ? ["--json"] : []
            let result = try daemon.ctl(json + ["add", path] + job.arguments)
            outputs.append(("add \(job.name)", result.stdout + result.stderr))
            #expect(result.status == 0, "add \(job.name): \(result)")
            if json.isEmpty, let id = JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) {
                ids.append((job.name, id, job.expect))
            } else if let list = try? JSONCoding.decoder.decode(JobList.self, from: Data(result.stdout.utf8)),
                let id = list.jobs.first?.id
            {
                ids.append((job.name, id, job.expect))
            }
        }
        let waitStarted = Date()
        let wait = try daemon.ctl(["wait"] + ids.map { "\($0.id)" } + ["--timeout", "120"], timeout: 150)
        print("wait took \(String(format: "%.1f", Date().timeIntervalSince(waitStarted))) s: \(wait)")
        outputs.append(("wait", wait.stdout + wait.stderr))
        for (name, id, expected) in ids {
            let job = try daemon.job(id)
            #expect(job.state == expected, "\(name): \(job.state), error: \(String(describing: job.error))")
            for arguments in [["show", "\(id)"], ["--json", "show", "\(id)"]] {
                let result = try daemon.ctl(arguments)
                outputs.append((arguments.joined(separator: " "), result.stdout + result.stderr))
            }
            let raw = try RawClient(daemon.socket)
            raw.send(
                line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"job.get\",\"params\":{\"id\":\(id.description)}}")
            if case .line(let bytes) = raw.readLine() {
                outputs.append(("job.get \(id)", String(decoding: bytes, as: UTF8.self)))
            }
        }
        // A delete sends the credentials again and logs what it removed.
        if let urlRight = ids.first(where: { $0.name == "url-right" }) {
            let result = try daemon.ctl(["delete", "\(urlRight.id)"])
            outputs.append(("delete", result.stdout + result.stderr))
        }
        for arguments in [
            ["list"], ["--json", "list"], ["status"], ["--json", "status"], ["list", "--state", "failed"],
        ] {
            let result = try daemon.ctl(arguments)
            outputs.append((arguments.joined(separator: " "), result.stdout + result.stderr))
        }
        usleep(500_000)
        for (process, out) in watchers {
            // SIGKILL: a child spawned from a test thread inherits its blocked signals, SIGTERM included.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            outputs.append(("watch output \(out)", (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""))
        }
        #expect(
            outputs.contains { $0.name.hasPrefix("watch") && $0.text.contains("\"state\":\"failed\"") },
            "the JSON watcher saw the failures")
        // A restart replays the journal and logs what it found.
        daemon.stop()
        try daemon.start()
        let replayed = try daemon.ctl(["--json", "list"])
        outputs.append(("list after restart", replayed.stdout + replayed.stderr))
        daemon.stop()
        outputs.append(("daemon log", (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""))

        var leaks: [String] = []
        for (label, value) in secrets {
            for (name, text) in outputs where text.contains(value) {
                let line = text.split(separator: "\n").first { $0.contains(value) }.map(String.init) ?? ""
                leaks.append("\(label) in \(name): \(line.prefix(300))")
            }
        }
        #expect(leaks.isEmpty, "secrets leaked:\n\(leaks.joined(separator: "\n"))")
        print(
            "checked \(secrets.count) secrets against \(outputs.count) outputs (\(outputs.map(\.text.utf8.count).reduce(0, +)) bytes): \(leaks.count) leaks"
        )

        // The journal is the one place a --user password may be; it is private.
        let journal = daemon.stateDirectory + "/journal"
        #expect(Self.mode(journal) == 0o600, "journal mode \(Self.octal(Self.mode(journal)))")
        let journalText = String(
            decoding: (try? Data(contentsOf: URL(fileURLWithPath: journal))) ?? Data(), as: UTF8.self)
        let inJournal = secrets.filter { journalText.contains($0.value) }.map(\.label)
        print("secrets stored in the journal (mode \(Self.octal(Self.mode(journal)))): \(inJournal)")
        for label in ["password_file password (wrong)", "S3 secret key", "wrong S3 secret key"]
        where inJournal.contains(label) {
            Issue.record("\(label), read from a file when the job runs, was written to the journal")
        }
    }

    /// Query values that are not on a short list of harmless keys are secrets: `password=`,
    /// `pass=`, `auth=` were shown by `list` and `show`, sent in events and logged.
    @Test func queryValuesAreRedactedWhereverDestinationsAreShown() throws {
        let servers = try TestServers.load()
        let tag = String(UUID().uuidString.prefix(8))
        let daemon = try DaemonProcess(name: "access-query", config: "[daemon]\nretry_attempts = 1\n")
        try daemon.start()
        defer { daemon.stop() }
        let source = files.appendingPathComponent("query.bin").path
        try makeRandomFile(at: source, size: 2_000)
        let secrets = ["QPASSWORD-\(tag)", "QPASS-\(tag)", "QAUTH-\(tag)"]
        let destination =
            "\(servers.nginxURL)/dav/query-\(tag)/q.bin?password=\(secrets[0])&pass=\(secrets[1]);auth=\(secrets[2])&partNumber=1"
        let add = try daemon.ctl(["--json", "add", source, "--to", destination, "--protocol", "put", "--wait"])
        var outputs = [("add", add.stdout + add.stderr)]
        for arguments in [["list"], ["--json", "list"], ["show", "1"], ["--json", "show", "1"]] {
            let result = try daemon.ctl(arguments)
            outputs.append((arguments.joined(separator: " "), result.stdout + result.stderr))
        }
        daemon.stop()
        outputs.append(("log", (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""))
        for (name, text) in outputs {
            #expect(!secrets.contains { text.contains($0) }, "\(name): \(text)")
        }
        let shown = outputs.first { $0.0 == "show 1" }?.1 ?? ""
        #expect(shown.contains("q.bin?password=REDACTED&pass=REDACTED;auth=REDACTED&partNumber=1"), "\(shown)")
    }

    // MARK: Destination names

    /// Local file names that are legal but hostile: each must land, under exactly its own name,
    /// directly inside the destination directory.
    static func hostileNames(_ tag: String) -> [String] {
        [
            "...", "a..b", ".hidden", "%2e%2e", "%2e%2e%2fescaped-\(tag)-1", "a%2F..%2F..%2Fescaped-\(tag)-2",
            "..%2F..%2Fescaped-\(tag)-3", "%2e%2e%2F%2e%2e%2F%2e%2e%2Fescaped-\(tag)-4", "back\\slash",
            "..\\..\\escaped-\(tag)-5", "-leading-dash", "--to", "name?query=\(tag)", "hash#frag-\(tag)", "sp ace",
            " leading and trailing space ", "semi;colon", "a%00b-\(tag)", "percent%", "100%25", "c:\\windows",
            "über-📁-ファイル", "e\u{301}-combining", "\u{202E}gnp.exe", "quote\"s and 'apostrophes'",
            "<angle>&amp;", "C1\u{85}next\u{9B}csi", String(repeating: "x", count: 255),
            String(repeating: "é", count: 127) + "y",
        ]
    }

    /// Names no destination should get: control characters. They must be refused with a clear error.
    static let unsafeNames = ["new\nline", "cr\rreturn", "tab\there", "esc\u{1B}[31mred", "del\u{7F}ete", "bell\u{07}"]

    private struct Placed {
        var name: String
        var id: JobID?
        var addError: String
    }

    /// Adds each file on its own (so an add error maps to its name) and waits for all of them.
    private func addEach(
        _ names: [String], from directory: String, to destination: String, _ options: [String], daemon: DaemonProcess
    ) throws -> [Placed] {
        var placed: [Placed] = []
        for (index, name) in names.enumerated() {
            let path = directory + "/" + name
            try Data("payload \(index): \(name)\n".utf8).write(to: URL(fileURLWithPath: path))
            let result = try daemon.ctl(["add", path, "--to", destination] + options)
            let id = JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            placed.append(Placed(name: name, id: id, addError: result.status == 0 ? "" : result.stderr))
        }
        let ids = placed.compactMap(\.id).map(\.description)
        if !ids.isEmpty { _ = try daemon.ctl(["wait"] + ids + ["--timeout", "120"], timeout: 150) }
        return placed
    }

    private static func printable(_ name: String) -> String {
        name.unicodeScalars.map {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "\\u{\(String($0.value, radix: 16))}" : String($0)
        }.joined()
    }

    /// Checks each placed file: completed under its own name in `landed(name)`'s directory, or (for
    /// unsafe names) refused with a clear error.
    private func check(_ placed: [Placed], unsafe: Set<String>, daemon: DaemonProcess, landedAt: (String) -> String)
        throws
    {
        for (index, item) in placed.enumerated() {
            let shown = Self.printable(item.name)
            guard let id = item.id else {
                #expect(unsafe.contains(item.name), "\(shown) was refused at add: \(item.addError)")
                #expect(!item.addError.isEmpty)
                continue
            }
            let job = try daemon.job(id)
            if unsafe.contains(item.name) {
                #expect(
                    job.state == .failed,
                    "\(shown): a control character in the name is refused, not \(job.state) (\(String(describing: job.result)))"
                )
                let message = job.error?.message ?? ""
                #expect(message.contains("safe file name"), "\(shown): the error says why: \(message)")
                continue
            }
            #expect(job.state == .completed, "\(shown): \(job.state): \(job.error?.message ?? "")")
            guard job.state == .completed else { continue }
            let expected = landedAt(item.name)
            let content = try? String(contentsOfFile: expected, encoding: .utf8)
            #expect(
                content == "payload \(index): \(item.name)\n",
                "\(shown) did not land as \(Self.printable(expected)) (result \(job.result?.url ?? "-"))")
        }
    }

    /// Every file under `root` whose name contains `marker` (escaped copies), skipping `skip`.
    private static func find(_ marker: String, under root: String, skip: String? = nil) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: [String] = []
        while let relative = walker.nextObject() as? String {
            let path = root + "/" + relative
            if let skip, path.hasPrefix(skip) {
                walker.skipDescendants()
                continue
            }
            if (relative as NSString).lastPathComponent.contains(marker) { found.append(path) }
        }
        return found
    }

    @Test func localFileNamesCannotEscapeAFileDestination() throws {
        let daemon = try DaemonProcess(name: "escape-file")
        try daemon.start()
        defer { daemon.stop() }
        let tag = String(UUID().uuidString.prefix(8))
        let base = try TestPaths.scratch("escape-file-\(tag)")
        let sources = base.appendingPathComponent("src").path
        let outer = base.appendingPathComponent("outer").path
        let target = outer + "/target"
        try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let names = Self.hostileNames(tag) + Self.unsafeNames
        let placed = try addEach(names, from: sources, to: "file://\(target)/", [], daemon: daemon)
        try check(placed, unsafe: Set(Self.unsafeNames), daemon: daemon) { target + "/" + $0 }

        // Nothing but the expected names directly in target; nothing anywhere else.
        let inTarget = Set((try? FileManager.default.contentsOfDirectory(atPath: target)) ?? [])
        let unexpected = inTarget.subtracting(Set(names))
        #expect(unexpected.isEmpty, "files in the target under other names: \(unexpected.map(Self.printable))")
        let outside =
            (try? FileManager.default.subpathsOfDirectory(atPath: base.path))?.filter {
                !$0.hasPrefix("src") && $0 != "outer" && $0 != "outer/target" && !$0.hasPrefix("outer/target/")
            } ?? []
        #expect(outside.isEmpty, "files outside the target: \(outside.map(Self.printable))")
        let itest = (base.path as NSString).deletingLastPathComponent
        let escaped = ((try? FileManager.default.contentsOfDirectory(atPath: itest)) ?? []).filter {
            $0.contains("escaped-\(tag)")
        }
        #expect(escaped.isEmpty, "files escaped to \(itest): \(escaped)")
        for name in escaped { try? FileManager.default.removeItem(atPath: itest + "/" + name) }
    }

    @Test func localFileNamesCannotEscapeAPutURL() throws {
        let servers = try TestServers.load()
        let daemon = try DaemonProcess(name: "escape-put")
        try daemon.start()
        defer { daemon.stop() }
        let tag = String(UUID().uuidString.prefix(8))
        let sources = try TestPaths.scratch("escape-put-\(tag)").path
        let folder = "escape-\(tag)"
        let names = Self.hostileNames(tag) + Self.unsafeNames
        let placed = try addEach(
            names, from: sources, to: "\(servers.nginxURL)/dav/\(folder)/", ["--protocol", "put"], daemon: daemon)
        let stored = "\(servers.nginxRoot)/dav/\(folder)"
        try check(placed, unsafe: Set(Self.unsafeNames), daemon: daemon) { stored + "/" + $0 }
        let inFolder = Set((try? FileManager.default.contentsOfDirectory(atPath: stored)) ?? [])
        let unexpected = inFolder.subtracting(Set(names))
        #expect(unexpected.isEmpty, "files on the server under other names: \(unexpected.map(Self.printable))")
        let escaped = Self.find("escaped-\(tag)", under: servers.nginxRoot, skip: stored)
        #expect(escaped.isEmpty, "files outside \(stored): \(escaped)")
        for job in placed.compactMap(\.id) {
            if let url = try daemon.job(job).result?.url {
                #expect(
                    url.hasPrefix("\(servers.nginxURL)/dav/\(folder)/")
                        && !url.dropFirst("\(servers.nginxURL)/dav/\(folder)/".count).contains("/"), "result URL \(url)"
                )
            }
        }
    }

    @Test func theChunkedReceiverRefusesSuffixesThatCouldEscape() throws {
        let servers = try TestServers.load()
        func initialize(suffix: String) throws -> CommandResult {
            try Command.run(
                "/usr/bin/curl",
                [
                    "-sS", "-o", "-", "-w", "\n%{http_code}", "-F", "sequenceNo=0", "-F", "blockSize=16", "-F",
                    "totFileSize=16",
                    "-F", "suffix=\(suffix)", "-F", "token=\(servers.receiverToken)", "-F", "block=",
                    "\(servers.receiverURL)/upload",
                ], timeout: 20)
        }
        let good = try initialize(suffix: "bin")
        #expect(good.stdout.hasSuffix("\n200"), "a plain suffix is accepted: \(good)")
        for suffix in ["../x", "..", "a/b", "/etc/passwd", "%2e%2e%2fx", "x\\y", ".bin", "a b"] {
            let result = try initialize(suffix: suffix)
            #expect(result.stdout.hasSuffix("\n400"), "suffix \(suffix) is refused: \(result)")
        }
        // The form endpoint takes a plain base name only.
        let tag = String(UUID().uuidString.prefix(8))
        let path = files.appendingPathComponent("form.bin").path
        try makeRandomFile(at: path, size: 100)
        for name in ["../escaped-\(tag)", "..", "a/escaped-\(tag)", ".escaped-\(tag)"] {
            let result = try Command.run(
                "/usr/bin/curl",
                [
                    "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", servers.receiverAuthorization, "-F",
                    "file=@\(path);filename=\(name)",
                    "\(servers.receiverURL)/form",
                ],
                timeout: 20)
            #expect(result.stdout.hasSuffix("\n400"), "form filename \(name) is refused: \(result)")
        }
        let parent = (servers.receiverDirectory as NSString).deletingLastPathComponent
        #expect(Self.find("escaped-\(tag)", under: parent).isEmpty)
    }

    // MARK: Secrets off the command line (finding 7)

    @Test func secretsFromFilesUploadAndLooseFilesAreWarnedAbout() throws {
        let servers = try TestServers.load()
        let password = files.appendingPathComponent("pw").path
        try "\(servers.password)\n".write(toFile: password, atomically: false, encoding: .utf8)
        chmod(password, 0o600)
        let headers = files.appendingPathComponent("headers").path
        try "# sent with every request\nX-Trace: from-a-file\n".write(
            toFile: headers, atomically: false, encoding: .utf8)
        chmod(headers, 0o644)
        // A config with header lines that others can read, and a password file others can read.
        let loose = files.appendingPathComponent("loose-pw").path
        try "x\n".write(toFile: loose, atomically: false, encoding: .utf8)
        chmod(loose, 0o644)
        let config =
            "[remote r]\nurl = \(servers.nginxURL)/private/\nuser = u\npassword_file = \(loose)\nheader = X-Token: t\n"
        let daemon = try DaemonProcess(name: "access-secret-files", config: config)
        chmod(daemon.configPath, 0o644)
        try daemon.start()
        defer { daemon.stop() }
        let source = files.appendingPathComponent("from-files.bin").path
        try makeRandomFile(at: source, size: 20_000)
        let add = try daemon.ctl([
            "add", source, "--to", "\(servers.nginxURL)/private/", "--user", servers.user, "--password-file", password,
            "--header-file", headers,
        ])
        #expect(add.status == 0, "\(add)")
        #expect(add.stderr.contains("\(headers) is readable by others (mode 644)"), "uploadctl warns: \(add)")
        let id = try #require(JobID(add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let job = try daemon.waitFor(id)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256("\(servers.nginxRoot)/private/from-files.bin") == Command.sha256(source))
        let status = try daemon.ctl(["status"]).stdout
        #expect(status.contains("readable by others (mode 644) and has header lines"), "\(status)")
        #expect(status.contains("[remote r]: \(loose) is readable by others (mode 644)"), "\(status)")
    }

    /// `add --wait` runs for as long as its uploads do, and every user's `ps` showed its
    /// `--user NAME:PASSWORD`, `--header 'Authorization: ...'` and `https://user:pw@` all along.
    /// uploadctl now writes over them once parsed, and says how to keep them off the command line.
    @Test func secretsOnTheCommandLineLeaveWhatPsShowsAndAreWarnedAbout() throws {
        let server = try HostileServer(mode: "trickle")
        let daemon = try DaemonProcess(name: "access-argv")
        try daemon.start()
        defer { daemon.stop() }
        let tag = String(UUID().uuidString.prefix(8))
        let source = files.appendingPathComponent("argv.bin").path
        try makeRandomFile(at: source, size: 10_000)
        let withPassword = server.url.replacingOccurrences(of: "://", with: "://u:URLPW-\(tag)@")
        var seen: Set<JobID> = []
        for (secret, arguments) in [
            ("USERPW-\(tag)", ["--to", "\(server.url)/a/", "--user", "bob:USERPW-\(tag)"]),
            ("BEARER-\(tag)", ["--to", "\(server.url)/b/", "--header=Authorization: Bearer BEARER-\(tag)"]),
            ("URLPW-\(tag)", ["--to", "\(withPassword)/c/"]),
        ] {
            let out = files.appendingPathComponent("argv-\(UUID().uuidString.prefix(6))").path
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: uploadctl)
            process.arguments = ["--socket", daemon.socket, "add", source, "--protocol", "put", "--wait"] + arguments
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            defer {
                // SIGKILL: a child spawned from a test thread inherits its blocked signals.
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            // The upload hangs on the trickling answer: uploadctl waits, its arguments in /proc.
            let waiting = eventually(timeout: 10) {
                (try? daemon.ctlJSON(JobList.self, ["list", "--state", "running"]))?.jobs.contains {
                    !seen.contains($0.id)
                } == true
            }
            #expect(waiting, "no upload ran: \(String(describing: try? String(contentsOfFile: out, encoding: .utf8)))")
            let cmdline = String(
                decoding: (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/cmdline")))
                    ?? Data(), as: UTF8.self)
            let shown = cmdline.replacingOccurrences(of: "\0", with: " ")
            #expect(cmdline.contains("--wait"), "\(shown)")
            #expect(!cmdline.contains(secret), "ps shows the secret: \(shown)")
            let said = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            #expect(
                said.split(separator: "\n").filter { $0.contains("warning: a password or token on the command line") }
                    .count == 1, "\(said)")
            for id in try daemon.ctlJSON(JobList.self, ["list"]).jobs.map(\.id) where !seen.contains(id) {
                seen.insert(id)
                _ = try daemon.ctl(["cancel", "\(id)"])
            }
        }
    }
}
