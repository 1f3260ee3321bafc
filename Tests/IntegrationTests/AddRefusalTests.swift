import Foundation
import Testing
import UploadWire

/// Adds that used to look fine and did something else (issue 49, item 6): they are refused, with
/// what to do instead, before anything is queued.
@Suite(.serialized)
final class AddRefusalTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        daemon = try DaemonProcess(name: "add-refusal")
        files = try TestPaths.scratch("add-refusal-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    func write(_ name: String, _ text: String) throws -> String {
        let path = files.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    func jobCount() throws -> Int { try daemon.ctlJSON(JobList.self, ["--json", "list"]).jobs.count }

    /// Two files with one `--client-token`: the first was queued and uploaded before the second
    /// was refused.
    @Test func aClientTokenWithTwoFilesQueuesNothing() throws {
        let (small, five) = (try write("small.bin", "small\n"), try write("five.bin", "five\n"))
        let result = try daemon.ctl(
            ["add", small, five, "--to", "file://\(files.path)/out-a/", "--client-token", "xyz"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("--client-token names one job"), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(try jobCount() == 0)
    }

    /// A token sent again with another file is another upload, not a retry: refused, not
    /// answered with the first job. The same add again still gets the first job.
    @Test func aClientTokenReusedForAnotherFileIsRefused() throws {
        let (small, five) = (try write("small-b.bin", "small\n"), try write("five-b.bin", "five\n"))
        let destination = "file://\(files.path)/out-b/"
        let first = try daemon.add([small], to: destination, ["--client-token", "tok-b"])
        let again = try daemon.add([small], to: destination, ["--client-token", "tok-b"])
        #expect(again == first)
        let other = try daemon.ctl(["add", five, "--to", destination, "--client-token", "tok-b"])
        #expect(other.status == 64, "\(other)")
        #expect(other.stderr.contains("client token 'tok-b' was given for job \(first[0])"), "\(other)")
        #expect(other.stderr.contains("with another file"), "\(other)")
        let elsewhere = try daemon.ctl([
            "add", small, "--to", "file://\(files.path)/out-b2/", "--client-token", "tok-b",
        ])
        #expect(elsewhere.status == 64 && elsewhere.stderr.contains("another destination"), "\(elsewhere)")
        #expect(try jobCount() == 1)
    }

    /// Several files to one file name all "completed", and only the last one's content was left.
    @Test func severalFilesToOneFileNameAreRefused() throws {
        let (a, b) = (try write("a.bin", "a\n"), try write("b.bin", "b\n"))
        let result = try daemon.ctl(["add", a, b, "--to", "file://\(files.path)/one.bin", "--wait"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("names one file (one.bin)"), "\(result)")
        #expect(result.stderr.contains("end it with /"), "\(result)")
        #expect(try jobCount() == 0)
        // A folder that exists is a folder, slash or not; one file to a file name is fine.
        let folder = files.appendingPathComponent("existing").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for id in try daemon.add([a, b], to: "file://\(folder)") + daemon.add([a], to: "file://\(files.path)/one.bin") {
            #expect(try daemon.waitFor(id).state == .completed)
        }
        #expect(FileManager.default.fileExists(atPath: folder + "/b.bin"))
    }
}
