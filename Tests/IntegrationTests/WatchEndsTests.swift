import Foundation
import Testing
import UploadCore
import UploadWire

/// Issue 49, item 7: `watch` says a job's end once, though its hook changes the job again after
/// it ended (it printed "completed" twice), on a terminal (bars) and in a pipe (lines).
@Suite(.serialized)
final class WatchEndsTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        files = try TestPaths.scratch("watch-ends-files")
        daemon = try DaemonProcess(name: "watch-ends", config: "[daemon]\non_complete = sleep 1\n")
        try daemon.start()
    }

    deinit { daemon.stop() }

    /// Adds a file while `watch` runs, waits for its hook to have run, and counts its ends.
    func ends(watching command: String, name: String, in pane: TmuxPane) throws -> (count: Int, screen: String) {
        try pane.run("clear; \(command)")
        Thread.sleep(forTimeInterval: 1)
        let file = files.appendingPathComponent(name).path
        try "\(name)\n".write(toFile: file, atomically: true, encoding: .utf8)
        let uploads = files.appendingPathComponent("uploads")
        try FileManager.default.createDirectory(at: uploads, withIntermediateDirectories: true)
        let id = try daemon.add([file], to: "file://\(uploads.path)/")[0]
        let hookRan = eventually(timeout: 30) {
            (try? self.daemon.job(id))?.history?.contains { $0.message.contains("hook") } ?? false
        }
        #expect(hookRan, "the hook ran")
        Thread.sleep(forTimeInterval: 1)
        let screen = try pane.capture()
        try pane.keys("C-c")
        return (screen.components(separatedBy: "\(id) completed").count - 1, screen)
    }

    @Test func anEndIsSaidOnce() throws {
        let pane = try TmuxPane(width: 80, height: 20)
        let ctl = "\(TestPaths.binaries.appendingPathComponent("uploadctl").path) --socket \(daemon.socket)"
        try pane.run("U() { \(ctl) \"$@\"; }; clear")
        let bars = try ends(watching: "U watch", name: "on-a-terminal.txt", in: pane)
        #expect(bars.count == 1, "\(bars.screen)")
        let lines = try ends(watching: "U watch | cat", name: "in-a-pipe.txt", in: pane)
        #expect(lines.count == 1, "\(lines.screen)")
    }
}
