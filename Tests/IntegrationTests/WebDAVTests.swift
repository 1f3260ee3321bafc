import Foundation
import Testing
import UploadCore
import UploadWire

/// A WebDAV server that is not nginx (WsgiDAV, RFC 4918 behaviour): a PUT into a folder that does
/// not exist gets 409, and uploadd makes the folders with MKCOL first.
@Suite(.serialized)
final class WebDAVTests {
    let servers: TestServers
    let dav: SecondDAV
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        servers = try TestServers.load()
        dav = try #require(servers.dav2, "the second WebDAV server is not running (contrib/test/servers.py starts it)")
        daemon = try DaemonProcess(
            name: "webdav", config: "[daemon]\nretry_attempts = 2\nretry_for = 0\nretry_base_delay = 100\n")
        files = try TestPaths.scratch("webdav-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    func file(_ name: String, size: Int = 50_000) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    var login: [String] { ["--user", "\(dav.user):\(dav.password)"] }

    @Test func aPutIntoNestedNewFoldersMakesThemAndDeleteRemovesTheFile() throws {
        let folder = "new-\(UUID().uuidString.prefix(6))/nested/deeper"
        let first = try file("first.bin")
        let second = try file("second.bin")
        let ids = try daemon.add([first, second], to: "\(dav.url)/\(folder)/", login)
        for (id, path) in zip(ids, [first, second]) {
            let job = try daemon.waitFor(id)
            #expect(job.state == .completed, "\(String(describing: job.error))")
            #expect(job.protocol == .put)
            let stored = "\(dav.root)/\(folder)/\((path as NSString).lastPathComponent)"
            #expect(try Command.sha256(stored) == Command.sha256(path))
        }
        // Whichever of the two got the 409 first made the folders (they run side by side).
        let histories = try ids.map { try daemon.job($0).history ?? [] }
        #expect(
            histories.contains { $0.contains { $0.message.contains("made the missing folders") } }, "\(histories)")

        let delete = try daemon.ctl(["delete", "\(ids[0])"])
        #expect(delete.status == 0, "\(delete)")
        #expect(!FileManager.default.fileExists(atPath: "\(dav.root)/\(folder)/first.bin"))
        #expect(FileManager.default.fileExists(atPath: "\(dav.root)/\(folder)/second.bin"))
    }

    @Test func aWrongPasswordFailsWithThe401() throws {
        let ids = try daemon.add([try file("denied.bin")], to: "\(dav.url)/denied/", ["--user", "\(dav.user):wrong"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        #expect(job.error?.status == 401)
        #expect(job.attempts == 1)
    }

    @Test func aServerThatRefusesMKCOLFailsTheJobSayingWhy() throws {
        let ids = try daemon.add([try file("nowhere.bin")], to: "\(dav.noMkcolURL)/missing/folder/", login)
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        let message = job.error?.message ?? ""
        #expect(
            message.contains("does not exist on the server and could not be created (MKCOL answered 403"), "\(message)")
        #expect(job.attempts == 1, "a refused MKCOL is not retried")
        // Into a folder that exists there, the same upload works.
        try FileManager.default.createDirectory(
            atPath: dav.noMkcolRoot + "/existing", withIntermediateDirectories: true)
        let existing = try daemon.add([try file("there.bin")], to: "\(dav.noMkcolURL)/existing/", login)
        #expect(try daemon.waitFor(existing[0]).state == .completed)
    }
}
