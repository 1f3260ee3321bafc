import Foundation
import Testing
import UploadWire

/// Messages and exit codes that said the wrong thing, or nothing (issue 49, item 7).
@Suite(.serialized)
final class MessagesTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        daemon = try DaemonProcess(name: "messages")
        files = try TestPaths.scratch("messages-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    func write(_ name: String, _ text: String = "content\n") throws -> String {
        let path = files.appendingPathComponent(name).path
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    var out: String { "file://\(files.path)/out/" }

    /// An empty `add -` and an `--exclude` that leaves nothing used to both say "the folders
    /// named hold no files".
    @Test func anAddThatFindsNothingSaysWhy() throws {
        let empty = try daemon.ctl(["add", "-", "--to", out])
        #expect(empty.status == 1, "\(empty)")
        #expect(empty.stderr.contains("no paths came on standard input"), "\(empty)")
        _ = try write("excl/a.txt")
        _ = try write("excl/b.txt")
        let excluded = try daemon.ctl(["add", files.path + "/excl", "--exclude", "*.txt", "--to", out])
        #expect(excluded.status == 1, "\(excluded)")
        #expect(excluded.stderr.contains("--exclude left out 2 files"), "\(excluded)")
        #expect(!excluded.stderr.contains("hold no files"), "\(excluded)")
    }

    /// A missing file is named once, and a daemon's refusal is worded for people.
    @Test func refusalsNameTheFileOnceWithoutJSONRPCWords() throws {
        let missing = try daemon.ctl(["add", "/nonexistent", "--to", out])
        #expect(missing.stderr.contains("/nonexistent does not exist"), "\(missing)")
        #expect(!missing.stderr.contains("/nonexistent: /nonexistent"), "\(missing)")
        let source = try write("plain.txt")
        let badBatch = try daemon.ctl(["add", source, "--to", out, "--image", "max=1"])
        #expect(badBatch.status == 64, "\(badBatch)")
        #expect(!badBatch.stderr.contains("invalid params"), "\(badBatch)")
    }

    /// A name with a newline, found in a folder: one line, and no hint to name the file in --to.
    @Test func aFolderFileWithANewlineIsOneLineWithAFolderHint() throws {
        let servers = try TestServers.load()
        _ = try write("nl/new\nline.txt")
        let result = try daemon.ctl(["add", files.path + "/nl", "--to", "\(servers.nginxURL)/dav/msgs/"])
        #expect(result.status == 64, "\(result)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains("line.txt") }
        #expect(lines.count == 1 && lines[0].contains("new\\nline.txt"), "\(result)")
        #expect(!result.stderr.contains("--to .../NAME"), "\(result)")
        #expect(result.stderr.contains("--exclude"), "\(result)")
    }

    /// `pause --all` with nothing to pause said nothing; `delete --batch 99` exited 0 where
    /// `wait --batch 99` exits 64.
    @Test func noOpsSaySoAndUnknownBatchesAreUsageErrors() throws {
        for (command, verb) in [("pause", "pause"), ("cancel", "cancel"), ("remove", "remove")] {
            let result = try daemon.ctl([command, "--all"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains("nothing to \(verb): no job"), "\(result)")
        }
        for command in ["delete", "pause", "cancel"] {
            let result = try daemon.ctl([command, "--batch", "99"])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("batch 99 has no jobs"), "\(result)")
        }
    }

    /// "uploadctl: job 1: job 1 is completed: …" named the job twice.
    @Test func aJobThatCannotBeCanceledIsNamedOnce() throws {
        let id = try daemon.add([try write("done.txt")], to: out)[0]
        #expect(try daemon.waitFor(id).state == .completed)
        let result = try daemon.ctl(["cancel", "\(id)", "\(id)"])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("job \(id) is completed"), "\(result)")
        #expect(!result.stderr.contains("job \(id): job \(id)"), "\(result)")
    }

    /// `limit 1` meant one byte a second.
    @Test func aLimitBelowTheFloorIsRefused() throws {
        let result = try daemon.ctl(["limit", "1"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("below the lowest, 1 KiB/s"), "\(result)")
        #expect(try daemon.ctl(["limit", "1K"]).status == 0)
        #expect(try daemon.ctl(["limit", "off"]).status == 0)
    }

    /// `--version`, and `--json status` that always has the limit (null for none).
    @Test func versionAndTheLimitInJSONStatus() throws {
        let version = try daemon.ctl(["--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("uploadctl "), "\(version)")
        let status = try daemon.ctl(["--json", "status"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object.keys.contains("bandwidth_limit"), "\(status)")
    }

    /// A bad SPEC is said once for an add of many files; an empty or repeated one is refused.
    @Test func imageSpecMistakesAreSaidOnce() throws {
        let paths = try (0..<5).map { try write("spec/f\($0).txt") }
        let bad = try daemon.ctl(["add"] + paths + ["--to", out, "--image", "size=9"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr.components(separatedBy: "unknown 'size=9'").count == 2, "\(bad)")
        let empty = try daemon.ctl(["add", paths[0], "--to", out, "--image", ""])
        #expect(empty.status == 64 && empty.stderr.contains("image SPEC is empty"), "\(empty)")
        let twice = try daemon.ctl(["add", paths[0], "--to", out, "--image", "max=100,max=200"])
        #expect(twice.status == 64 && twice.stderr.contains("both set max; give it once"), "\(twice)")
    }

    /// `format=keep` made a PNG larger (libvips writes it again): with nothing else asked, the
    /// original is sent instead.
    @Test func aKeptFormatThatComesOutLargerSendsTheOriginal() throws {
        let source = files.appendingPathComponent("indexed.png").path
        try TestImages.run("/usr/bin/convert", ["-size", "800x600", "gradient:red-blue", "PNG8:" + source])
        let id = try daemon.add([source], to: "file://\(files.path)/kept/", ["--image", "format=keep"])[0]
        #expect(try daemon.waitFor(id).state == .completed)
        let sent = try Data(contentsOf: files.appendingPathComponent("kept/indexed.png"))
        #expect(sent == (try Data(contentsOf: URL(fileURLWithPath: source))), "\(sent.count) bytes sent")
    }

    /// `uploadd --config` of a file that does not exist ran on the defaults; `--check-config`
    /// stopped at the first line it could not read.
    @Test func uploaddConfigMistakesAreAllReported() throws {
        let uploadd = TestPaths.binaries.appendingPathComponent("uploadd").path
        let missing = try Command.run(uploadd, ["--check-config", "--config", "/nonexistent.conf"])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stderr.contains("/nonexistent.conf: no such file"), "\(missing)")
        let config = try write("bad.conf", "[daemon]\ntransfers 3\n[daemon\nrate_limit\n")
        let checked = try Command.run(uploadd, ["--check-config", "--config", config])
        #expect(checked.status == 1, "\(checked)")
        for line in ["line 2:", "line 3:", "line 4:"] { #expect(checked.stderr.contains(line), "\(checked)") }
    }
}
