import Foundation
import Testing
import UploadCore
import UploadWire

/// A daemon runs for weeks: after jobs are done and cleared, its idle memory comes back to where
/// it was, round after round (the quick version of the bench's "long life" scenario).
@Suite(.serialized)
final class LongLifeTests {
    /// RssAnon of a process, in KiB (the heap: what freed-but-kept memory inflates).
    static func anonymousKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("RssAnon:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func idleMemoryComesBackAfterJobsAreCleared() throws {
        let daemon = try DaemonProcess(name: "long-life")
        try daemon.start()
        defer { daemon.stop() }
        let files = try TestPaths.scratch("long-life-files")
        var paths: [String] = []
        for index in 0..<800 {
            let path = files.appendingPathComponent("line-\(index).txt").path
            try "line \(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            paths.append(path)
        }
        var idle: [Int] = []
        for round in 1...5 {
            let out = files.appendingPathComponent("out-\(round)").path
            let added = try daemon.ctl(
                ["add"] + paths + ["--to", "file://\(out)/", "--snapshot", "none", "--wait"], timeout: 300)
            #expect(added.status == 0, "round \(round): \(added.stderr.suffix(500))")
            #expect(try daemon.ctl(["clear"]).status == 0)
            Thread.sleep(forTimeInterval: 2.5)  // the trim comes a second after the queue goes idle
            idle.append(Self.anonymousKiB(daemon.pid))
        }
        print(
            "long life: idle RssAnon after each round of 800 jobs: \(idle.map { "\($0) KiB" }.joined(separator: ", "))")
        // Against the second round: the first warms up what any run keeps (the allocator's arenas,
        // caches), and comes out a few hundred KiB lower or higher from one build to the next. A
        // leak of a few hundred bytes a job still shows over the three rounds after it.
        #expect(idle.last! <= idle[1] * 115 / 100 + 1024, "idle memory keeps growing round over round: \(idle) KiB")
    }
}
