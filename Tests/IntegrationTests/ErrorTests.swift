import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Bad input gets a clear error, and the daemon keeps serving.
@Suite(.serialized)
final class ErrorTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        daemon = try DaemonProcess(name: "errors")
        files = try TestPaths.scratch("error-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    private func expectServing() throws {
        #expect(try daemon.ctl(["status"]).status == 0, "the daemon still serves")
    }

    @Test func aMissingFileIsRefusedAtAdd() throws {
        let result = try daemon.ctl(["add", files.path + "/no-such-file", "--to", "file:///tmp/x/"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("does not exist"), "\(result)")
        try expectServing()
    }

    /// A folder is added file by file (EverydayTests); one with nothing to upload says so.
    @Test func anEmptyFolderAddsNothingAndSaysSo() throws {
        let empty = files.appendingPathComponent("empty-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(
            at: empty.appendingPathComponent(".hidden"), withIntermediateDirectories: true)
        try Data("h".utf8).write(to: empty.appendingPathComponent(".hidden/h.txt"))
        let result = try daemon.ctl(["add", empty.path, "--to", "file:///tmp/x/"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("nothing to add") && result.stderr.contains("--hidden"), "\(result)")
        try expectServing()
    }

    /// A file the daemon may not read is refused at add, with the file and the reason. As root
    /// (CI), mode 000 does not stop reading: that daemon runs without CAP_DAC_OVERRIDE and
    /// CAP_DAC_READ_SEARCH (setpriv), so the mode applies to it as to anyone.
    @Test func anUnreadableFileIsRefusedAtAdd() throws {
        let path = files.appendingPathComponent("secret.bin").path
        try makeRandomFile(at: path, size: 10)
        #expect(chmod(path, 0) == 0)
        defer { chmod(path, 0o600) }
        let daemon = try DaemonProcess(name: "errors-unreadable")
        let unprivileged = try UploaddWithoutFileCapabilities(daemon)
        defer { unprivileged.stop() }
        let result = try daemon.ctl(["add", path, "--to", "file://\(files.path)/unreadable-out/"])
        #expect(result.status == 1, "\(result)")
        let message = "cannot read \(path): Permission denied"
        #expect(result.stderr.contains(message), "the message names the file and why: \(result)")
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.isEmpty, "nothing was queued")
        #expect(try daemon.ctl(["status"]).status == 0, "the daemon still serves")
    }

    @Test func aBadURLIsAUsageOrParamsError() throws {
        let path = files.appendingPathComponent("ok.bin").path
        try makeRandomFile(at: path, size: 10)
        let result = try daemon.ctl(["add", path, "--to", "http://"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("destination"), "\(result)")
        try expectServing()
    }

    @Test func anUnknownCommandIsAUsageError() throws {
        let result = try daemon.ctl(["frobnicate"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("frobnicate"))
        try expectServing()
    }

    @Test func anUnknownJobIsAClearFailure() throws {
        let result = try daemon.ctl(["show", "999999"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("999999"))
    }

    @Test func anUnreachableDaemonExits69() throws {
        let result = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadctl").path,
            ["--socket", files.path + "/nothing.sock", "status"])
        #expect(result.status == 69)
        #expect(result.stderr.contains("nothing.sock"))
    }

    @Test func aSecondDaemonOnTheSameStateDirectoryRefusesToStart() throws {
        let second = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadd").path,
            [
                "--state-dir", daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--socket",
                files.path + "/second.sock",
            ],
            timeout: 20)
        #expect(second.status == 1)
        #expect(second.stderr.contains("already running"), "\(second)")
        try expectServing()
    }

    /// Copies are named by job ID and every daemon numbers its jobs from 1: a second daemon on
    /// the same cache would take the first one's copies for orphans and delete them at its start.
    @Test func aSecondDaemonOnTheSameCacheDirectoryRefusesToStartAndLeavesTheCopiesAlone() throws {
        let source = files.appendingPathComponent("kept-\(UUID().uuidString.prefix(6)).txt")
        try Data("the only copy\n".utf8).write(to: source)
        // Port 9 refuses the connection: the job retries, and keeps its copy, until the test ends.
        let added = try daemon.ctl(["add", source.path, "--to", "http://127.0.0.1:9/up/", "--snapshot", "copy"])
        #expect(added.status == 0, "\(added)")
        let copies = try FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots")
        #expect(!copies.isEmpty, "the job has its copy")
        let ownState = files.appendingPathComponent("second-state-\(UUID().uuidString.prefix(6))").path
        let second = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadd").path,
            ["--state-dir", ownState, "--cache-dir", daemon.cacheDirectory, "--socket", files.path + "/second.sock"],
            timeout: 20)
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("uses the cache directory \(daemon.cacheDirectory)")
                && second.stderr.contains("--cache-dir"), "\(second)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots") == copies)
        try expectServing()
    }

    @Test func malformedRequestsOnTheSocketGetJSONRPCErrors() throws {
        let lines = [
            "not json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"job.nope\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"job.get\",\"params\":{\"id\":\"seven\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"job.list\",\"params\":{\"bogus\":1}}", "[]",
        ]
        let answers = try RawSocket.exchange(daemon.socket, lines)
        #expect(answers.count == lines.count)
        let codes = answers.map { ($0["error"] as? [String: Any])?["code"] as? Int }
        #expect(codes == [-32700, -32601, -32602, -32602, -32600])
        try expectServing()
    }
}

/// A minimal NDJSON client for sending what uploadctl never would.
enum RawSocket {
    static func exchange(_ path: String, _ lines: [String]) throws -> [[String: Any]] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw TestFailure("cannot connect to \(path)") }
        var answers: [[String: Any]] = []
        var pending: [UInt8] = []
        for line in lines {
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            while !pending.contains(UInt8(ascii: "\n")) {
                var buffer = [UInt8](repeating: 0, count: 65536)
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { throw TestFailure("the daemon closed the connection") }
                pending += buffer[0..<count]
            }
            let newline = pending.firstIndex(of: UInt8(ascii: "\n"))!
            let answer = try JSONSerialization.jsonObject(with: Data(pending[..<newline])) as? [String: Any] ?? [:]
            pending.removeSubrange(...newline)
            answers.append(answer)
        }
        return answers
    }
}
