import Foundation
import Testing
import UploadCore
import UploadWire

/// `uploadctl remotes [--test]` against real servers, and `uploadd --check-config`.
@Suite(.serialized)
final class RemoteCheckTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("remote-check")
    }

    func secret(_ name: String, _ value: String) throws -> String {
        let path = files.appendingPathComponent(name).path
        try "\(value)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    @Test func remotesAreListedWithoutSecretsAndTestedGoodAndBad() throws {
        let s3 = try #require(servers.s3, "the S3 server is not running")
        let config = """
            [remote dav]
            url = \(servers.nginxURL)/dav/
            protocol = put
            [remote denied]
            url = \(servers.nginxURL)/private/
            user = someone
            password_file = \(try secret("wrong-password", "not-the-password"))
            [remote closed]
            url = http://127.0.0.1:9/
            [remote folder]
            url = file://\(files.path)/new/
            [remote bucket]
            protocol = s3
            url = s3://\(s3.bucket)/check/
            endpoint = \(s3.endpoint)
            region = \(s3.region)
            access_key_id = \(s3.accessKey)
            secret_access_key_file = \(try secret("s3-secret", s3.secretKey))
            [remote wrongkey]
            protocol = s3
            url = s3://\(s3.bucket)/check/
            endpoint = \(s3.endpoint)
            region = \(s3.region)
            access_key_id = \(s3.accessKey)
            secret_access_key_file = \(try secret("s3-wrong", "not-\(s3.secretKey)"))
            """
        let daemon = try DaemonProcess(name: "remote-check", config: config)
        try daemon.start()
        defer { daemon.stop() }

        let list = try daemon.ctlJSON(RemoteList.self, ["remotes"])
        #expect(list.remotes.map(\.name) == ["bucket", "closed", "dav", "denied", "folder", "wrongkey"])
        let table = try daemon.ctl(["remotes"])
        #expect(table.status == 0 && table.stdout.contains("denied") && table.stdout.contains("someone"))
        #expect(!table.stdout.contains("not-the-password") && !table.stdout.contains(s3.secretKey), "\(table)")

        for good in ["dav", "folder", "bucket"] {
            let checked = try daemon.ctl(["remotes", "--test", good])
            #expect(checked.status == 0 && checked.stdout.hasPrefix("\(good): ok: "), "\(checked)")
        }
        let denied = try daemon.ctl(["remotes", "--test", "denied"])
        #expect(denied.status == 1 && denied.stderr.contains("refused the credentials (HTTP 401"), "\(denied)")
        let closed = try daemon.ctl(["remotes", "--test", "closed"])
        #expect(closed.status == 1 && closed.stderr.contains("cannot reach the server"), "\(closed)")
        let wrongKey = try daemon.ctl(["remotes", "--test", "wrongkey"])
        #expect(wrongKey.status == 1 && wrongKey.stderr.contains("refused the credentials (HTTP 403"), "\(wrongKey)")
        let unknown = try daemon.ctl(["remotes", "--test", "nas"])
        #expect(unknown.status == 64 && unknown.stderr.contains("the remotes are bucket, closed"), "\(unknown)")
    }

    @Test func checkConfigNamesEachBadLineAndStartsNothing() throws {
        let path = files.appendingPathComponent("bad.conf").path
        try """
        [daemon]
        transfers = 3
        notify = sometimes

        [remote nas]
        url = \(servers.nginxURL)/dav/
        on_complete = notify-send 'unclosed
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let uploadd = TestPaths.binaries.appendingPathComponent("uploadd").path
        let bad = try Command.run(uploadd, ["--check-config", "--config", path])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\(path): line 3: notify must be failures, all or none"), "\(bad)")
        #expect(bad.stderr.contains("\(path): line 7: [remote nas] on_complete must be a command"), "\(bad)")

        try "[daemon]\nnotfy = all\n[remote nas]\nurl = file:///tmp/\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        let warned = try Command.run(uploadd, ["--check-config", "--config", path])
        #expect(warned.status == 0 && warned.stdout.contains("OK (1 remote)"), "\(warned)")
        #expect(
            warned.stderr.contains("line 2: unknown key 'notfy' in [daemon] ignored (did you mean notify?)"),
            "\(warned)")
    }
}
