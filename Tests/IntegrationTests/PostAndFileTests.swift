import Foundation
import Testing
import UploadCore
import UploadWire

/// multipart POST to the reference receiver, and file:// copies with no server at all.
@Suite(.serialized)
final class PostAndFileTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        servers = try TestServers.load()
        daemon = try DaemonProcess(name: "post")
        files = try TestPaths.scratch("post-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    @Test(arguments: [0, 1, 2 << 20 + 5, 110 << 20])
    func multipartPostStreamsTheFileWithItsFields(size: Int) throws {
        let name = "form-\(size)-\(UUID().uuidString.prefix(8)).jpg"  // the receiver never replaces a file
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        let ids = try daemon.add(
            [path], to: "\(servers.receiverURL)/form",
            [
                "--protocol", "post", "--field", "album=holiday", "--field", "n=1", "--header",
                servers.receiverAuthorization,
            ])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.result?.status == 201)
        #expect(job.result?.url == "\(servers.receiverURL)/files/\(name)")
        let body = try #require(job.result?.body)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(answer["sha256"] as? String == (try Command.sha256(path)))
        #expect(answer["fields"] as? [String: String] == ["album": "holiday", "n": "1"])
        #expect(answer["field_name"] as? String == "file")
        #expect(answer["content_type"] as? String == "image/jpeg", "the MIME type comes from the file name")
        #expect(try Command.sha256("\(servers.receiverDirectory)/\(name)") == Command.sha256(path))
    }

    @Test func fileDestinationCopiesAtomically() throws {
        let target = try TestPaths.scratch("file-dest")
        let path = files.appendingPathComponent("copy-me.bin").path
        try makeRandomFile(at: path, size: 20 << 20)
        let ids = try daemon.add([path], to: "file://\(target.path)/sub/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed)
        #expect(job.protocol == .file)
        #expect(job.result?.url == "file://\(target.path)/sub/copy-me.bin")
        #expect(try Command.sha256(target.path + "/sub/copy-me.bin") == Command.sha256(path))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: target.path + "/sub").filter {
            $0.hasPrefix(".")
        }
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers)")
    }

    /// A destination without a trailing slash that names a folder puts the file in it (the upload
    /// looks, not the scheduler); `delete` removes the file where the upload put it, even after
    /// the remote was moved to another folder (it resolved the destination again, and unlinked a
    /// file of the same name there that uploadd never wrote).
    /// A daemon that died mid-copy left its temporary file in the user's folder; the first copy
    /// into that folder after a start removes it, and nothing else: not a file of that name written
    /// since the daemon started (another uploadd may be writing it), nor one merely like it.
    @Test func theFirstCopyIntoAFolderRemovesWhatADeadDaemonLeftThere() throws {
        let folder = try TestPaths.scratch("file-leftovers")
        let leftover = folder.appendingPathComponent(".uploadd-7-0123456789abcdef.part").path
        let inProgress = folder.appendingPathComponent(".uploadd-8-fedcba9876543210.part").path
        let lookalike = folder.appendingPathComponent(".uploadd-notes.part").path
        for path in [leftover, inProgress, lookalike] {
            try "partial".write(toFile: path, atomically: false, encoding: .utf8)
        }
        var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, leftover, &old, 0) == 0 && utimensat(AT_FDCWD, lookalike, &old, 0) == 0)
        let daemon = try DaemonProcess(name: "file-leftovers")
        try daemon.start()
        defer { daemon.stop() }
        // Written after the daemon started, as another daemon's copy in progress would be.
        sleep(1)
        try "partial, growing".write(toFile: inProgress, atomically: false, encoding: .utf8)
        // The first copy into the folder comes a second later: the daemon's start is its own, not
        // its first copy's (which once took a file written in between for a leftover).
        sleep(1)
        let path = files.appendingPathComponent("after-a-crash.bin").path
        try makeRandomFile(at: path, size: 1000)
        let id = try daemon.add([path], to: "file://\(folder.path)/")[0]
        #expect(try daemon.waitFor(id).state == .completed)
        #expect(!FileManager.default.fileExists(atPath: leftover), "the dead daemon's copy is still there")
        #expect(FileManager.default.fileExists(atPath: inProgress), "a copy written since the start was removed")
        #expect(FileManager.default.fileExists(atPath: lookalike), "a file uploadd did not make was removed")
        #expect(daemon.logLines(containing: "left by a copy uploadd did not finish").count == 1)
    }

    @Test func deleteRemovesTheFileWhereTheUploadPutIt() throws {
        let first = try TestPaths.scratch("file-first")
        let second = try TestPaths.scratch("file-second")
        let daemon = try DaemonProcess(name: "file-moved", config: "[remote box]\nurl = file://\(first.path)\n")
        try daemon.start()
        defer { daemon.stop() }
        let path = files.appendingPathComponent("moved.bin").path
        try makeRandomFile(at: path, size: 1000)
        let id = try daemon.add([path], to: "box:")[0]
        let job = try daemon.waitFor(id)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.result?.url == "file://\(first.path)/moved.bin")
        try "[remote box]\nurl = file://\(second.path)\n".write(
            toFile: daemon.configPath, atomically: true, encoding: .utf8)
        #expect(try daemon.ctl(["reload"]).status == 0)
        try "not uploadd's".write(toFile: second.path + "/moved.bin", atomically: true, encoding: .utf8)
        let delete = try daemon.ctl(["delete", "\(id)"])
        #expect(delete.status == 0, "\(delete)")
        #expect(!FileManager.default.fileExists(atPath: first.path + "/moved.bin"), "the uploaded file is still there")
        #expect(FileManager.default.fileExists(atPath: second.path + "/moved.bin"), "another file was deleted")
    }
}
