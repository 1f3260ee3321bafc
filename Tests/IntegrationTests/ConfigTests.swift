import Foundation
import Glibc
import Testing
import UploadCore

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
        let config = """
            [remote vault]
            protocol = put
            url = \(servers.nginxURL)/private/remote/
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

        let unknown = try daemon.add([path], to: "nosuchremote:x/")
        let failed = try daemon.waitFor(unknown[0])
        #expect(failed.state == .failed)
        #expect(failed.error?.message.contains("no remote named 'nosuchremote'") == true)
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
