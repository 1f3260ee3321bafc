import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Servers that lie (the security review's findings 2, 3, 8 and 9), played by
/// contrib/test/hostile.py: numbers out of range, URLs on other origins, answers that never end,
/// and text meant for the user's terminal. Every test here failed on uploadd 0.2.
@Suite(.serialized)
final class HostileServerTests {
    let files: URL

    init() throws {
        files = try TestPaths.scratch("hostile-files")
    }

    func file(_ name: String, size: Int = 100_000) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    // MARK: Finding 3: numbers from a server

    /// An Upload-Offset of -2^63 made 0.2 trap, and trap again at every restart while it replayed
    /// the job. Every such value now fails the attempt with a clear message, and the daemon lives.
    @Test(arguments: ["-9223372036854775808", "-1", "99999999999999999999", "length+1", "abc", "+5"])
    func anImpossibleTusOffsetFailsTheAttemptNotTheDaemon(offset: String) throws {
        let server = try HostileServer(
            mode: "tus-bad-offset", options: ["--offset=\(offset)", "--offset-on=post,head,patch"])
        let daemon = try DaemonProcess(
            name: "hostile-offset", config: "[daemon]\nretry_attempts = 2\nretry_for = 0\nretry_base_delay = 100\n")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try file("offset.bin")], to: "\(server.url)/files/", ["--protocol", "tus"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .failed)
        #expect(job.error?.message.contains("Upload-Offset") == true, "\(String(describing: job.error))")
        #expect(daemon.process?.isRunning == true, "the daemon died")
        // And it starts again on the same journal (no crash loop).
        daemon.stop()
        try daemon.start()
        #expect(try daemon.job(ids[0]).state == .failed)
    }

    /// A PATCH answered with an Upload-Offset past the bytes it carried: the server claims bytes it
    /// never got, and the job completed with the file cut short on the server. It now fails.
    @Test func aTusOffsetPastTheChunkSentFailsTheAttempt() throws {
        let server = try HostileServer(
            mode: "tus-bad-offset", options: ["--offset=length", "--offset-on=patch"])
        let daemon = try DaemonProcess(
            name: "hostile-ahead", config: "[daemon]\nretry_attempts = 1\nretry_for = 0\n")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add(
            [try file("ahead.bin")], to: "\(server.url)/files/", ["--protocol", "tus", "--chunk-size", "16K"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .failed)
        #expect(job.error?.message.contains("Upload-Offset") == true, "\(String(describing: job.error))")
        let patches = try server.requests(on: .main).filter { $0.method == "PATCH" }
        #expect(patches.count == 1, "\(patches)")
    }

    /// A server whose PATCH answers 409 however its HEAD answers kept the job in a loop of HEAD
    /// and PATCH for ever, holding its slot. The attempt now ends after a few rounds.
    @Test func aTusServerThatAlwaysConflictsEndsTheAttempt() throws {
        let server = try HostileServer(
            mode: "tus-bad-offset", options: ["--patch-conflict", "--offset=0", "--offset-on=post"])
        let daemon = try DaemonProcess(
            name: "hostile-conflict", config: "[daemon]\nretry_attempts = 1\nretry_for = 0\n")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try file("conflict.bin")], to: "\(server.url)/files/", ["--protocol", "tus"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .failed)
        #expect(job.error?.message.contains("409") == true, "\(String(describing: job.error))")
        let patches = try server.requests(on: .main).filter { $0.method == "PATCH" }
        // Three 409s are taken as the server's word (HEAD, then PATCH again); the fourth ends it.
        #expect(patches.count == 4, "\(patches.count) PATCHes")
    }

    /// A relative Location resolves against the destination, user and password included: the
    /// job's result (shown, logged, given to hooks) carried the password.
    @Test func aTusResultURLDoesNotCarryThePassword() throws {
        let server = try HostileServer(mode: "tus-foreign-location", options: ["--location", "/files/{id}"])
        let daemon = try DaemonProcess(name: "hostile-userinfo")
        try daemon.start()
        defer { daemon.stop() }
        let destination = server.url.replacingOccurrences(of: "://", with: "://me:s3cret@") + "/files/"
        let ids = try daemon.add([try file("userinfo.bin")], to: destination, ["--protocol", "tus"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        let url = job.result?.url ?? ""
        #expect(url.hasSuffix("/files/xyz") && !url.contains("s3cret"), "\(url)")
    }

    // MARK: Finding 2: credentials and data to other origins

    static let secretHeader = "X-Api-Key: k-secret-123"

    func credentialsLeaked(to server: HostileServer) throws -> [HostileServer.Request] {
        try server.requests(on: .other).filter { $0.header("authorization") != nil || $0.header("x-api-key") != nil }
    }

    @Test func aTusLocationOnAnotherOriginIsRefused() throws {
        let server = try HostileServer(mode: "tus-foreign-location")
        let daemon = try DaemonProcess(name: "hostile-location")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add(
            [try file("location.bin")], to: "\(server.url)/files/",
            ["--protocol", "tus", "--user", "me:s3cret", "--header", Self.secretHeader])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .failed)
        #expect(job.error?.message.contains("another origin") == true, "\(String(describing: job.error))")
        let other = try server.requests(on: .other)
        #expect(other.isEmpty, "something went to the other origin: \(other)")
    }

    /// A remote that allows it sends the file to the other origin, but never the credentials.
    @Test func aRemoteMayAllowAnotherOriginWithoutItsCredentials() throws {
        let server = try HostileServer(mode: "tus-foreign-location")
        let secretFile = files.appendingPathComponent("password").path
        try "s3cret\n".write(toFile: secretFile, atomically: false, encoding: .utf8)
        chmod(secretFile, 0o600)
        let config = """
            [remote cdn]
            url = \(server.url)/files/
            protocol = tus
            user = me
            password_file = \(secretFile)
            header = \(Self.secretHeader)
            allow_cross_origin = yes
            """
        let daemon = try DaemonProcess(name: "hostile-allowed", config: config)
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try file("allowed.bin")], to: "cdn:")
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(!(try server.requests(on: .other)).isEmpty, "the upload went to the other origin")
        #expect(try credentialsLeaked(to: server).isEmpty, "credentials went to the other origin")
        let main = try server.requests(on: .main)
        #expect(
            main.contains { $0.header("authorization") != nil && $0.header("x-api-key") != nil },
            "the destination got them")
    }

    /// A POST answer names a URL on another origin; `delete` must not send DELETE there.
    @Test func aDeleteURLOnAnotherOriginIsRefused() throws {
        let server = try HostileServer(mode: "post-foreign-url")
        let daemon = try DaemonProcess(name: "hostile-delete")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add(
            [try file("form.bin")], to: "\(server.url)/upload", ["--protocol", "post", "--user", "me:s3cret"])
        #expect(try daemon.waitFor(ids[0]).state == .completed)
        let delete = try daemon.ctl(["delete", "\(ids[0])"])
        #expect(delete.status != 0, "\(delete)")
        #expect(delete.stderr.contains("another origin"), "\(delete)")
        let other = try server.requests(on: .other)
        #expect(other.isEmpty, "\(other)")
    }

    // MARK: Finding 9: answers that never end

    @Test func anEndlessAnswerIsCutAtTheResponseDeadline() throws {
        let server = try HostileServer(mode: "trickle", options: ["--interval", "0.5"])
        let config = "[daemon]\nresponse_timeout = 2\nretry_attempts = 1\nretry_for = 0\ntransfers = 1\n"
        let daemon = try DaemonProcess(name: "hostile-trickle", config: config)
        try daemon.start()
        defer { daemon.stop() }
        let started = Date()
        let ids = try daemon.add([try file("trickle.bin")], to: "\(server.url)/put/", ["--protocol", "put"])
        let job = try daemon.waitFor(ids[0], timeout: 60)
        #expect(job.state == .failed)
        #expect(
            job.error?.message.contains("no complete answer 2 s after the request was sent") == true,
            "\(String(describing: job.error))")
        #expect(Date().timeIntervalSince(started) < 30)
        // The slot is free again: the next job runs.
        let out = files.appendingPathComponent("out").path
        let next = try daemon.add([try file("next.bin")], to: "file://\(out)/")
        #expect(try daemon.waitFor(next[0], timeout: 30).state == .completed)
    }

    /// ListParts that never stops saying "truncated" is cut at S3's 10,000 parts.
    @Test func anEndlessPartListingIsCappedAtTenThousandParts() throws {
        let server = try HostileServer(mode: "s3-endless-parts")
        let secret = files.appendingPathComponent("s3-secret").path
        try "secret\n".write(toFile: secret, atomically: false, encoding: .utf8)
        chmod(secret, 0o600)
        let config = """
            [daemon]
            retry_attempts = 3
            retry_for = 0
            retry_base_delay = 100
            [remote evil]
            url = s3://bucket/prefix/
            endpoint = \(server.url)
            region = us-east-1
            access_key_id = AKID
            secret_access_key_file = \(secret)
            multipart_threshold = 1M
            """
        let daemon = try DaemonProcess(name: "hostile-parts", config: config)
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try file("parts.bin", size: 12 << 20)], to: "evil:")
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .failed)
        let listings = try server.requests().filter { $0.method == "GET" && $0.path.contains("uploadId=") }
        #expect(!listings.isEmpty, "no ListParts was sent: \(String(describing: job.error))")
        #expect(listings.count <= 3 * 11, "\(listings.count) ListParts pages")
        #expect(
            job.history?.contains { $0.message.contains("more than 10000 parts") } == true,
            "\(String(describing: job.history))")
    }

    // MARK: Finding 8: text for the terminal

    @Test func escapeSequencesFromAServerNeverReachTheTerminal() throws {
        let server = try HostileServer(mode: "escape-body")
        let daemon = try DaemonProcess(name: "hostile-escape", config: "[daemon]\nretry_attempts = 1\nretry_for = 0\n")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try file("escape.bin")], to: "\(server.url)/x/", ["--protocol", "put"])
        #expect(try daemon.waitFor(ids[0]).state == .failed)
        for arguments in [["show", "\(ids[0])"], ["list"], ["wait", "\(ids[0])"]] {
            let result = try daemon.ctl(arguments)
            let output = result.stdout + result.stderr
            #expect(
                !output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x07 },
                "\(arguments): \(output)")
            if arguments[0] == "show" { #expect(output.contains("\\x1b]0;pwned"), "shown escaped: \(output)") }
        }
        // The daemon's log (a terminal's under `uploadd` run by hand, `tail -f`, `journalctl`) too.
        daemon.stop()
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        #expect(
            !log.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x07 },
            "the log holds the server's escapes raw: \(log.suffix(2000))")
        #expect(log.contains("\\x1b]0;pwned\\x07\\x1b[2J"), "the log shows them escaped: \(log.suffix(2000))")
        try daemon.start()
        let json = try daemon.ctl(["--json", "show", "\(ids[0])"])
        #expect(
            json.stdout.contains("\\u001b") || json.stdout.contains("\\u001B"),
            "--json keeps the data, escaped by JSON: \(json)")
    }

    // MARK: Issue 47: the server's URL in a hook's environment

    /// UPLOAD_URL is the server's text: a hook that pastes it into a shell line, a chat message or
    /// a log got line breaks and escape sequences of the server's choosing. It now gets only a
    /// well-formed http(s) URL, else nothing, and the job's history says why.
    @Test(arguments: [
        ("http://127.0.0.1:{other}/files/1", true), ("http://127.0.0.1:{other}/f\nEVIL=1", false),
        ("http://127.0.0.1:{other}/\u{1b}]0;pwned\u{07}", false), ("javascript:alert(1)", false),
        ("http://127.0.0.1:{other}/a b", false),
    ])
    func aHookGetsOnlyAWellFormedResultURL(template: String, passed: Bool) throws {
        let server = try HostileServer(mode: "post-foreign-url", options: ["--url", template])
        let record = try TestPaths.scratch("hook-url")
        let daemon = try DaemonProcess(
            name: "hostile-hook-url",
            config: """
                [daemon]
                retry_attempts = 1
                on_complete = sh -c 'printf %s "$UPLOAD_URL" > "$0/$UPLOAD_ID.url"' \(record.path)

                """)
        try daemon.start()
        defer { daemon.stop() }
        let id = try daemon.add(
            [try file("hook-url.bin", size: 1_000)], to: "\(server.url)/up/", ["--protocol", "post"])[0]
        #expect(try daemon.waitFor(id).state == .completed)
        let path = record.appendingPathComponent("\(id).url").path
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: path) })
        #expect(
            eventually(timeout: 10) { (try? daemon.job(id))?.history?.contains { $0.message.contains("hook") } == true }
        )
        let given = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(none)"
        let sent = template.replacingOccurrences(of: "{other}", with: "\(server.otherPort)")
        let history = try daemon.job(id).history ?? []
        if passed {
            #expect(given == sent)
        } else {
            #expect(given == "", "UPLOAD_URL was \(given.debugDescription)")
            #expect(
                history.contains { $0.message.hasPrefix("UPLOAD_URL was left empty: the server's URL") },
                "\(history.map(\.message))")
        }
    }
}
