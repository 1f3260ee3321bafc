import Foundation
import Testing
import UploadCore
import UploadWire

/// PUT to a real nginx (WebDAV), checked by SHA-256 of what the server stored.
@Suite(.serialized)
final class PutUploadTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        servers = try TestServers.load()
        daemon = try DaemonProcess(name: "put")
        files = try TestPaths.scratch("put-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    @Test func filesOfEverySizeArriveIntact() throws {
        let sizes = [0, 1, 3 << 20 + 17, 130 << 20]
        var paths: [String] = []
        for (index, size) in sizes.enumerated() {
            let path = files.appendingPathComponent("sized-\(index)-\(size).bin").path
            try makeRandomFile(at: path, size: size)
            paths.append(path)
        }
        let folder = "sizes-\(UUID().uuidString.prefix(6))"
        let ids = try daemon.add(paths, to: "\(servers.nginxURL)/dav/\(folder)/")
        let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "300"], timeout: 320)
        #expect(wait.status == 0, "\(wait)")
        for (id, path) in zip(ids, paths) {
            let job = try daemon.job(id)
            #expect(job.state == .completed)
            #expect(job.protocol == .put)
            #expect(job.bytesAcked == job.bytesTotal)
            let name = (path as NSString).lastPathComponent
            #expect(job.result?.url == "\(servers.nginxURL)/dav/\(folder)/\(name)")
            let stored = "\(servers.nginxRoot)/dav/\(folder)/\(name)"
            #expect(try Command.sha256(stored) == Command.sha256(path), "\(name) differs on the server")
        }
        // The cached snapshots are gone once the jobs completed.
        let cached = try FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots")
        #expect(cached.isEmpty, "snapshots left behind: \(cached)")
    }

    /// Small files of one add are copied into one pack; each job sends its own bytes as they were
    /// at add, though the originals change right after, and the pack goes with the last upload.
    @Test func smallFilesOfOneAddShareAPackAndSendTheirOwnBytes() throws {
        let sizes = [0, 1, 65_536, 200_003, 1 << 20, (1 << 20) + 1, 4_097, 77]
        var paths: [String] = []
        var hashes: [String] = []
        for (index, size) in sizes.enumerated() {
            let path = files.appendingPathComponent("packed-\(index).bin").path
            try makeRandomFile(at: path, size: size)
            paths.append(path)
            hashes.append(try Command.sha256(path))
        }
        // Slow enough (2.6 MiB at 256 KiB/s) that the pack is there to see after add.
        let daemon = try DaemonProcess(name: "put-packed", config: "[daemon]\nrate_limit = 256K\n")
        try daemon.start()
        defer { daemon.stop() }
        let folder = "packed-\(UUID().uuidString.prefix(6))"
        let ids = try daemon.add(paths, to: "\(servers.nginxURL)/dav/\(folder)/")
        let cache = daemon.cacheDirectory + "/snapshots"
        let packs = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasPrefix("pack-") }
        #expect(packs.count == 1, "one pack for the small copies: \(packs)")
        // The file over 1 MiB has a copy of its own.
        #expect(FileManager.default.fileExists(atPath: "\(cache)/\(ids[5])"))
        for path in paths { try makeRandomFile(at: path, size: 333) }

        let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "120"], timeout: 140)
        #expect(wait.status == 0, "\(wait)")
        for (index, id) in ids.enumerated() {
            let job = try daemon.job(id)
            #expect(job.state == .completed)
            #expect(job.snapshot == "copy")
            #expect(job.bytesTotal == Int64(sizes[index]))
            let stored = "\(servers.nginxRoot)/dav/\(folder)/packed-\(index).bin"
            #expect(try Command.sha256(stored) == hashes[index], "packed-\(index).bin differs on the server")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: cache)
        #expect(left.isEmpty, "the pack is gone with the last upload: \(left)")
    }

    /// A big file uploads while its copy is made; a crash before the copy is saved and the add
    /// answered leaves no job and no copy, and the file can be added again.
    @Test func aBigFileUploadsWhileItIsCopiedAndACrashBeforeItsAddIsAnsweredLeavesNothing() throws {
        let path = files.appendingPathComponent("alongside.bin").path
        let block = files.appendingPathComponent("alongside-block.bin").path
        try makeRandomFile(at: block, size: 8 << 20)
        let blockBytes = try Data(contentsOf: URL(fileURLWithPath: block))
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        for _ in 0..<48 { try handle.write(contentsOf: blockBytes) }  // 384 MiB: a copy that takes a while to save
        try handle.close()
        // 32 MiB/s: the upload has far to go when the copy is done, so the copy is saved, not skipped.
        let daemon = try DaemonProcess(name: "put-alongside", config: "[daemon]\nrate_limit = 32M\n")
        try daemon.start()
        defer { daemon.stop() }
        let folder = "alongside-\(UUID().uuidString.prefix(6))"
        let output = files.appendingPathComponent("alongside-add.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let add = ChildProcess()
        add.executableURL = TestPaths.binaries.appendingPathComponent("uploadctl")
        add.arguments = ["--socket", daemon.socket, "add", path, "--to", "\(servers.nginxURL)/dav/\(folder)/"]
        add.standardOutput = try FileHandle(forWritingTo: output)
        add.standardError = FileHandle.nullDevice
        try add.run()
        defer { if add.isRunning { add.terminate() } }

        var answeredBeforeBytesWent = true
        let sending = eventually(timeout: 30) {
            guard let job = try? daemon.job(JobID(1)), job.bytesSent > 0 else { return false }
            answeredBeforeBytesWent = !add.isRunning
            return true
        }
        daemon.crash()
        add.waitUntilExit()
        #expect(sending, "the upload started: \(daemon.log(tail: 20))")
        #expect(!answeredBeforeBytesWent, "bytes went out before the add was answered (the copy was still being made)")
        let answered = add.terminationStatus == 0
        #expect(!answered, "the crash came before the copy was saved, so before the answer")

        try daemon.start()
        let jobs = try daemon.ctlJSON(JobList.self, ["list"]).jobs
        #expect(jobs.isEmpty == !answered, "only an answered add is kept: \(jobs.map(\.id))")
        let cache = daemon.cacheDirectory + "/snapshots"
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache).isEmpty, "no copy is left behind")

        _ = try daemon.ctl(["limit", "off"])
        let again = try daemon.add([path], to: "\(servers.nginxURL)/dav/\(folder)/")
        #expect(try daemon.waitFor(again[0], timeout: 180).state == .completed)
        #expect(try Command.sha256("\(servers.nginxRoot)/dav/\(folder)/alongside.bin") == Command.sha256(path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache).isEmpty)
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A file under 64 KiB goes out in the same send as the request's head (libcurl's POSTFIELDS):
    /// it is still a PUT, with the type the file's name gives (as a streamed one gets, never
    /// libcurl's form type), every byte of it, and its bytes counted as sent.
    @Test func aSmallFileGoesWithTheHeadAsTheSamePutAStreamedOneIs() throws {
        let server = try HostileServer(mode: "post-foreign-url")
        defer { server.stop() }
        let small = files.appendingPathComponent("note-small.txt").path
        let streamed = files.appendingPathComponent("note-streamed.txt").path
        try makeRandomFile(at: small, size: 4_096)
        try makeRandomFile(at: streamed, size: 64 << 10)
        let ids = try daemon.add([small, streamed], to: "\(server.url)/up/")
        for id in ids {
            let job = try daemon.waitFor(id)
            #expect(job.state == .completed, "\(String(describing: job.error))")
            #expect(job.bytesSent == job.bytesTotal, "the bytes sent are counted")
        }
        let puts = try server.requests(on: .main).filter { $0.method == "PUT" }
        let byName = Dictionary(puts.map { (($0.path as NSString).lastPathComponent, $0) }, uniquingKeysWith: { $1 })
        #expect(puts.count == 2, "one request each: \(puts)")
        #expect(byName["note-small.txt"]?.bodyBytes == 4_096)
        #expect(byName["note-streamed.txt"]?.bodyBytes == 64 << 10)
        let type = byName["note-small.txt"]?.header("content-type")
        #expect(type != nil && type == byName["note-streamed.txt"]?.header("content-type"))
        #expect(type != "application/x-www-form-urlencoded")
    }

    @Test func basicAuthWithTheRightPasswordUploads() throws {
        let path = files.appendingPathComponent("private.bin").path
        try makeRandomFile(at: path, size: 100_000)
        let ids = try daemon.add(
            [path], to: "\(servers.nginxURL)/private/", ["--user", "\(servers.user):\(servers.password)"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256("\(servers.nginxRoot)/private/private.bin") == Command.sha256(path))
        // The password is nowhere in what clients see.
        let shown = try daemon.ctl(["--json", "show", "\(ids[0])"]).stdout + daemon.ctl(["list"]).stdout
        #expect(!shown.contains(servers.password))
    }

    @Test func aWrongPasswordFailsFastWithThe401() throws {
        let path = files.appendingPathComponent("denied.bin").path
        try makeRandomFile(at: path, size: 10_000)
        let started = Date()
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/private/", ["--user", "\(servers.user):wrong"])
        let wait = try daemon.ctl(["wait", "\(ids[0])", "--timeout", "30"])
        #expect(wait.status == 1)
        let job = try daemon.job(ids[0])
        #expect(job.state == .failed)
        #expect(job.attempts == 1, "a 401 is not retried")
        #expect(job.error?.status == 401)
        #expect(job.error?.message.contains("401") == true)
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(wait.stderr.contains("401"), "wait names the failure: \(wait)")
    }

    @Test func deleteRemovesTheFileFromTheServer() throws {
        let path = files.appendingPathComponent("to-delete.bin").path
        try makeRandomFile(at: path, size: 50_000)
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/deletions/")
        #expect(try daemon.waitFor(ids[0]).state == .completed)
        let stored = "\(servers.nginxRoot)/dav/deletions/to-delete.bin"
        #expect(FileManager.default.fileExists(atPath: stored))
        let delete = try daemon.ctl(["delete", "\(ids[0])"])
        #expect(delete.status == 0, "\(delete)")
        #expect(!FileManager.default.fileExists(atPath: stored))
        #expect(try daemon.ctl(["show", "\(ids[0])"]).status == 1, "the deleted job is gone")
    }

    @Test func aMissingDirectoryOnTheServerIsAClearFailure() throws {
        let path = files.appendingPathComponent("nowhere.bin").path
        try makeRandomFile(at: path, size: 1000)
        // nginx only allows PUT under /dav/ and /private/: anywhere else is 405, which is not retried.
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/no-dav-here/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        #expect(job.error?.status == 405)
    }
}
