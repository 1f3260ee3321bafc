import Foundation
import Testing
import UploadCore
import UploadWire

/// Issue 48, "Servers as users have them": uploads to the matrix of real servers in their default
/// configurations (`ServerMatrix`) and to the scripted server's answers no friendly server gives
/// (`ScriptedServer`): folders made whatever a missing one is answered with, a probe that cannot
/// hang, HTTP as RFC 9110 has it (417, 303), servers that never answer 100 Continue, and `delete`
/// telling the truth. What every server of the matrix must do (new folders, redirects, a wrong
/// password, delete, `remotes --test`, a kill mid-upload) is ConformanceTests.
@Suite(.serialized)
final class ServersAsUsersHaveThemTests {
    let matrix: ServerMatrix
    let scripted: ScriptedServer
    let files: URL
    /// A path segment of this run's own, so that the scripted server's log and files are ours.
    let run = "t\(UUID().uuidString.prefix(8).lowercased())"

    init() throws {
        matrix = try ServerMatrix.load()
        scripted = try ScriptedServer.load()
        files = try TestPaths.scratch("servers-as-users")
    }

    func file(_ name: String, size: Int = 50_000) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    /// A daemon that gives up quickly, with `extra` appended to its config.
    func daemon(_ name: String, extra: String = "") throws -> DaemonProcess {
        let config = "[daemon]\nretry_attempts = 2\nretry_for = 0\nretry_base_delay = 100\n"
        let daemon = try DaemonProcess(name: name, config: config + extra)
        try daemon.start()
        return daemon
    }

    // MARK: 1. Folders on any WebDAV server
    //
    // A PUT into new folders on every WebDAV server of the matrix, 307/308 followed and a
    // cross-origin redirect refused, and `remotes --test` with right and wrong credentials on
    // every server: ConformanceTests.

    /// The scripted server's four answers to a PUT into a missing folder, with PROPFIND and MKCOL
    /// as WebDAV has them.
    @Test(arguments: [404, 409, 424, 500])
    func aMissingFolderAnsweredWith(status: Int) throws {
        let daemon = try daemon("missing-\(status)")
        defer { daemon.stop() }
        let source = try file("m\(status).bin")
        let prefix = "/missing-\(status)/\(run)/"
        let id = try daemon.add([source], to: "\(scripted.url)\(prefix)x/y/", ["--protocol", "put"])[0]
        let job = try daemon.waitFor(id, timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.attempts == 1)
        let stored = "\(scripted.directory)/missing-\(status)/\(run)/x/y/m\(status).bin"
        #expect(try Command.sha256(stored) == Command.sha256(source))
        let methods = try scripted.requests(under: prefix).map(\.method)
        #expect(methods.filter { $0 == "PUT" }.count == 2, "\(methods)")
        // Up from x/y/ until a folder exists, then down: at most two MKCOL per folder.
        #expect((1...6).contains(methods.filter { $0 == "MKCOL" }.count), "\(methods)")
    }

    // MARK: 2. A probe that cannot hang

    /// OPTIONS answered with a body that never ends: `auto` decides from the head at once, and
    /// `remotes --test` too.
    @Test func anEndlessOptionsBodyHoldsNeitherAutoNorTheRemoteCheck() throws {
        let daemon = try daemon(
            "endless", extra: "[remote endless]\nurl = \(scripted.url)/endless-options/\(run)/check/\n")
        defer { daemon.stop() }
        let started = ContinuousClock.now
        let id = try daemon.add([try file("endless.bin")], to: "\(scripted.url)/endless-options/\(run)/e/")[0]
        let job = try daemon.waitFor(id, timeout: 40)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.protocol == .put)
        #expect(ContinuousClock.now - started < .seconds(15), "\(ContinuousClock.now - started)")
        let checkStarted = ContinuousClock.now
        let check = try daemon.ctl(["remotes", "--test", "endless"], timeout: 60)
        #expect(check.status == 0 && check.stdout.hasPrefix("endless: ok: "), "\(check)")
        #expect(ContinuousClock.now - checkStarted < .seconds(10))
    }

    // MARK: 3. HTTP as RFC 9110 has it

    /// A server that refuses `Expect: 100-continue` with 417 gets the request again without it.
    @Test func a417IsSentAgainWithoutExpect() throws {
        let daemon = try daemon("expect-417")
        defer { daemon.stop() }
        let source = try file("big417.bin", size: 2 << 20)
        let prefix = "/expect-417/\(run)/"
        let id = try daemon.add([source], to: "\(scripted.url)\(prefix)", ["--protocol", "put"])[0]
        let job = try daemon.waitFor(id, timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256("\(scripted.directory)/expect-417/\(run)/big417.bin") == Command.sha256(source))
        let statuses = try scripted.requests(under: prefix).map(\.status)
        #expect(statuses.first == 417 && statuses.last == 201, "\(statuses)")
    }

    /// A POST answered 303 See Other stored the file: the job completes with the Location as its
    /// URL, and nothing is fetched from it.
    @Test func a303AfterAPostIsASuccessWhoseLocationIsTheResult() throws {
        let daemon = try daemon("see-other")
        defer { daemon.stop() }
        let source = try file("seen.bin")
        let prefix = "/see-other/\(run)/"
        let id = try daemon.add([source], to: "\(scripted.url)\(prefix)", ["--protocol", "post"])[0]
        let job = try daemon.waitFor(id, timeout: 60)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.result?.url == "\(scripted.url)/see-other/result/\(run)/body", "\(String(describing: job.result))")
        let requests = try scripted.requests(under: "/see-other/")
        #expect(!requests.contains { $0.method == "GET" }, "\(requests.map(\.method))")
    }

    // MARK: 10. Servers that never answer 100 Continue

    /// After the first body that waited for a 100 Continue that never came, bodies go to that
    /// server without `Expect`.
    @Test func aServerThatNeverAnswers100IsSentBodiesWithoutExpect() throws {
        let daemon = try daemon("no-continue")
        defer { daemon.stop() }
        let prefix = "/no-continue/\(run)/"
        var ids: [JobID] = []
        for index in 0..<3 {
            let source = try file("slow\(index).bin", size: 5 << 20)
            ids += try daemon.add([source], to: "\(scripted.url)\(prefix)", ["--protocol", "put"])
            #expect(try daemon.waitFor(ids[index], timeout: 60).state == .completed)
        }
        let puts = try scripted.requests(under: prefix).filter { $0.method == "PUT" }
        #expect(puts.count == 3)
        #expect(puts.first?.header("expect") == "100-continue", "the first still asks")
        #expect(puts.dropFirst().allSatisfy { $0.header("expect") == nil }, "\(puts.map { $0.header("expect") })")
    }

    // MARK: 11. delete, remotes --test, server messages, the file field

    @Test func deleteSaysWhenTheFileWasNotOnTheServer() throws {
        let daemon = try daemon("delete-404")
        defer { daemon.stop() }
        let id = try daemon.add([try file("gone.bin")], to: "\(scripted.url)/store/\(run)/", ["--protocol", "put"])[0]
        #expect(try daemon.waitFor(id).state == .completed)
        try FileManager.default.removeItem(atPath: "\(scripted.directory)/store/\(run)/gone.bin")
        let delete = try daemon.ctl(["delete", "\(id)"])
        #expect(delete.status == 0, "\(delete)")
        #expect(delete.stdout == "\(id) it was not on the server (404)\n", "\(delete)")
    }

    @Test(.enabled(if: geteuid() == 0, "root only: anyone else is refused /proc by access(2) already"))
    func remotesTestAsRootDoesNotCallProcWritable() throws {
        let daemon = try daemon("remotes-proc", extra: "[remote proc]\nurl = file:///proc/\n")
        defer { daemon.stop() }
        let check = try daemon.ctl(["remotes", "--test", "proc"])
        #expect(check.status == 1 && check.stderr.contains("not writable"), "\(check)")
    }

    /// Python's http.server puts what went wrong in its reason phrase and an HTML page titled
    /// "Error response": the message keeps the server's own words.
    @Test func aServersOwnWordsSurviveAGenericErrorPage() throws {
        let server = try matrix.server("uploadserver")
        let daemon = try daemon("messages")
        defer { daemon.stop() }
        let id = try daemon.add(
            [try file("words.bin")], to: server.url,
            ["--protocol", "post", "--user", "\(server.user ?? ""):\(server.password ?? "")"])[0]
        let job = try daemon.waitFor(id)
        #expect(job.state == .failed)
        #expect(job.error?.message.contains("Field \"files\" not found") == true, "\(String(describing: job.error))")
    }

    /// `--file-field` names the form part: uploadserver wants `files`, PHP's form `userfile`.
    @Test func theFileFieldOfAPostIsChosenWithFileField() throws {
        let daemon = try daemon("file-field")
        defer { daemon.stop() }
        for name in ["uploadserver", "php-upload"] {
            let server = try matrix.server(name)
            let source = try file("field-\(name)-\(run).bin")
            let id = try daemon.add(
                [source], to: server.url,
                [
                    "--protocol", "post", "--file-field", server.fileField ?? "file", "--user",
                    "\(server.user ?? ""):\(server.password ?? "")",
                ])[0]
            let job = try daemon.waitFor(id)
            #expect(job.state == .completed, "\(name): \(String(describing: job.error))")
            if let stored = server.storedPath("field-\(name)-\(run).bin") {
                #expect(try Command.sha256(stored) == Command.sha256(source), "\(name)")
            }
        }
    }
}
