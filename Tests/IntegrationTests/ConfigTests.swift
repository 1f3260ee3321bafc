import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Remotes from the config, and SIGHUP reloading it.
@Suite(.serialized)
final class ConfigTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("config-files")
    }

    @Test func aRemoteSuppliesURLUserAndPasswordFile() throws {
        let passwordFile = files.appendingPathComponent("password").path
        try "\(servers.password)\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        // nginx checks the password; a server that records requests sees the header (and the
        // password again), sent by a remote configured the same way.
        let recorder = try HostileServer(
            mode: "post-foreign-url", options: ["--url", "http://127.0.0.1:{main}/stored"])
        defer { recorder.stop() }
        let config = """
            [remote vault]
            protocol = put
            url = \(servers.nginxURL)/private/remote/
            user = \(servers.user)
            password_file = \(passwordFile)
            header = X-Uploaded-By: uploadd-tests

            [remote recorded]
            protocol = put
            url = \(recorder.url)/recorded/
            user = \(servers.user)
            password_file = \(passwordFile)
            header = X-Uploaded-By: uploadd-tests
            """
        let daemon = try DaemonProcess(name: "remote", config: config)
        try daemon.start()
        defer { daemon.stop() }
        let path = files.appendingPathComponent("via-remote.bin").path
        try makeRandomFile(at: path, size: 200_000)
        let ids = try daemon.add([path], to: "vault:nested/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.result?.url == "\(servers.nginxURL)/private/remote/nested/via-remote.bin")
        #expect(try Command.sha256("\(servers.nginxRoot)/private/remote/nested/via-remote.bin") == Command.sha256(path))
        // The password stays in its file: the journal holds the remote's name, not the secret.
        let journal = try Data(contentsOf: URL(fileURLWithPath: daemon.stateDirectory + "/journal"))
        #expect(!String(decoding: journal, as: UTF8.self).contains(servers.password))

        let recorded = try daemon.waitFor(try daemon.add([path], to: "recorded:nested/")[0])
        #expect(recorded.state == .completed, "\(String(describing: recorded.error))")
        let puts = try recorder.requests(on: .main).filter { $0.method == "PUT" }
        #expect(puts.count == 1, "\(puts)")
        if let put = puts.first {
            #expect(put.path == "/recorded/nested/via-remote.bin", "\(put)")
            #expect(put.header("X-Uploaded-By") == "uploadd-tests", "the remote's header arrived: \(put)")
            let credentials = Data("\(servers.user):\(servers.password)".utf8).base64EncodedString()
            #expect(
                put.header("Authorization") == "Basic \(credentials)", "the password file's password arrived: \(put)")
            #expect(put.bodyBytes == 200_000, "\(put)")
        }

        // A remote the config does not name is refused at add (a usage error), naming those it has.
        let unknown = try daemon.ctl(["add", path, "--to", "nosuchremote:x/"])
        #expect(unknown.status == 64, "\(unknown)")
        #expect(unknown.stderr.contains("no remote named 'nosuchremote' (configured: recorded, vault)"), "\(unknown)")
    }

    @Test func sighupReloadsTheConfig() throws {
        let daemon = try DaemonProcess(name: "reload", config: "[daemon]\ntransfers = 2\n")
        try daemon.start()
        defer { daemon.stop() }
        #expect(try daemon.ctlJSON(DaemonStatus.self, ["status"]).maxTransfers == 2)
        try "[daemon]\ntransfers = 5\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        #expect(eventually(timeout: 10) { (try? daemon.ctlJSON(DaemonStatus.self, ["status"]).maxTransfers) == 5 })
        // A broken config is refused and the old one stays.
        try "[daemon]\ntransfers = lots\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let reload = try daemon.ctl(["reload"])
        #expect(reload.status == 1)
        #expect(reload.stderr.contains("transfers"), "\(reload)")
        #expect(try daemon.ctlJSON(DaemonStatus.self, ["status"]).maxTransfers == 5)
        #expect(try daemon.ctl(["status"]).status == 0, "still serving")
    }
}
