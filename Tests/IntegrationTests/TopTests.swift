import Foundation
import Testing
import UploadCore
import UploadWire

/// `uploadctl top` in a real terminal (tmux): bars that move, keys that act, a resize, a clean exit,
/// and a daemon that dies under it.
@Suite(.serialized)
final class TopTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("top-files")
        daemon = try DaemonProcess(name: "top", config: "[daemon]\ntransfers = 1\nrate_limit = 1M\n")
        try daemon.start()
    }

    deinit { daemon.stop() }

    var uploadctl: String { TestPaths.binaries.appendingPathComponent("uploadctl").path }

    /// The line of job `id` on the screen (a row has a bar; the message line does not).
    func row(_ id: JobID, in screen: String) -> String? {
        screen.split(separator: "\n").map(String.init).first { $0.hasPrefix("\(id) ") && $0.contains("[") }
    }

    /// The bytes a row says were sent: "1.25 MiB / 8.00 MiB" gives 1.25.
    func mebibytes(_ row: String?) -> Double? {
        guard let row, let range = row.range(of: " MiB / ") else { return nil }
        return Double(row[..<range.lowerBound].split(separator: " ").last ?? "")
    }

    @Test func theListMovesAndItsKeysAct() throws {
        // One upload on the wire (slowly), then a finished PUT to delete, then two waiting their turn.
        let done = files.appendingPathComponent("done.bin").path
        try makeRandomFile(at: done, size: 1000)
        let finished = try daemon.add([done], to: "\(servers.nginxURL)/dav/top/", ["--protocol", "put"])[0]
        #expect(try daemon.waitFor(finished).state == .completed)
        let big = files.appendingPathComponent("big.bin").path
        try makeRandomFile(at: big, size: 8 << 20)
        let uploading = try daemon.add([big], to: "\(servers.nginxURL)/dav/top/", ["--protocol", "put"])[0]
        let small = files.appendingPathComponent("small.txt").path
        try "small\n".write(toFile: small, atomically: true, encoding: .utf8)
        let first = try daemon.add([small], to: "\(servers.nginxURL)/dav/top/first/", ["--protocol", "put"])[0]
        let second = try daemon.add([small], to: "\(servers.nginxURL)/dav/top/second/", ["--protocol", "put"])[0]

        let pane = try TmuxPane(width: 100, height: 24)
        try pane.run("\(uploadctl) --socket \(daemon.socket) top")
        let shown = pane.waitFor { $0.contains("uploadd · ") && $0.contains("running") }
        try #require(shown.met, "top did not come up:\n\(shown.screen)")
        print("tmux capture-pane of top:\n\(shown.screen)")

        // The bar moves.
        let before = mebibytes(row(uploading, in: shown.screen)) ?? 0
        let later = pane.waitFor { (self.mebibytes(self.row(uploading, in: $0)) ?? 0) > before + 0.5 }
        #expect(later.met, "the upload's bytes did not move on screen:\n\(later.screen)")

        // Jobs show in the order they run: the upload, first, second, then the finished one. Home
        // and two downs select second; + raises its priority; p pauses it.
        try pane.keys("Home")
        try pane.keys("Down")
        try pane.keys("Down")
        try pane.keys("+")
        #expect(eventually(timeout: 10) { (try? self.daemon.job(second))?.priority == 1 }, "+ raised the priority")
        try pane.keys("p")
        #expect(eventually(timeout: 10) { (try? self.daemon.job(second))?.state == .paused }, "p paused it")
        let paused = pane.waitFor { self.row(second, in: $0)?.contains("paused") == true }
        #expect(paused.met, "\(paused.screen)")
        #expect(try daemon.job(first).state == .queued)

        // End selects the finished upload; D then y deletes it from the server.
        try pane.keys("End")
        try pane.keys("D")
        let asked = pane.waitFor { $0.contains("delete job \(finished)") }
        #expect(asked.met, "D asks first:\n\(asked.screen)")
        try pane.keys("y")
        let stored = "\(servers.nginxRoot)/dav/top/done.bin"
        #expect(eventually(timeout: 10) { !FileManager.default.fileExists(atPath: stored) }, "deleted from nginx")
        let gone = pane.waitFor { self.row(finished, in: $0) == nil }
        #expect(gone.met, "the deleted job left the list:\n\(gone.screen)")

        // Enter opens the details; a key goes back.
        try pane.keys("Enter")
        let details = pane.waitFor { $0.contains("history:") }
        #expect(details.met, "\(details.screen)")
        print("tmux capture-pane of top's detail pane:\n\(details.screen)")
        try pane.keys("Escape")

        // A smaller terminal: it draws again within 60 columns.
        try pane.resize(width: 60, height: 20)
        let small60 = pane.waitFor { screen in
            screen.contains("uploadd · ") && self.row(uploading, in: screen) != nil
                && screen.split(separator: "\n").allSatisfy { TerminalWidth.of(String($0)) <= 60 }
        }
        #expect(small60.met, "after a resize to 60x20:\n\(small60.screen)")

        // q leaves a working shell behind.
        try pane.keys("q")
        let quit = pane.waitFor {
            $0.split(separator: "\n").last.map { $0.hasPrefix(TmuxPane.prompt.trimmingCharacters(in: .whitespaces)) }
                ?? false
        }
        #expect(quit.met, "q gives the prompt back:\n\(quit.screen)")
        try pane.run("echo terminal-ok")
        #expect(pane.waitFor { $0.contains("\nterminal-ok") }.met, "the shell echoes again (the terminal was restored)")
    }

    /// `add --wait` and `watch` draw a bar per job in flight on a terminal, and print lines when piped.
    @Test func waitingShowsBarsOnATerminalAndLinesInAPipe() throws {
        let file = files.appendingPathComponent("bars.bin").path
        try makeRandomFile(at: file, size: 3 << 20)
        let destination = "\(servers.nginxURL)/dav/top/bars/"
        let pane = try TmuxPane(width: 100, height: 20)
        try pane.run(
            "\(uploadctl) --socket \(daemon.socket) add \(file) --to \(destination) --protocol put --wait; echo exit=$?"
        )
        // The name is padded to a fixed column, so that the bar never moves.
        let bar = pane.waitFor { $0.contains(" bars.bin ") && $0.contains("[#") && $0.contains(" MiB / 3.00 MiB") }
        #expect(bar.met, "a bar while it uploads:\n\(bar.screen)")
        print("tmux capture-pane of add --wait:\n\(bar.screen)")
        let done = pane.waitFor(timeout: 30) { $0.contains("exit=0") }
        #expect(done.met && done.screen.contains(" completed"), "\(done.screen)")
        #expect(!done.screen.contains("[#"), "the bar goes once the job ended:\n\(done.screen)")

        // watch ID on a terminal: the same bars.
        let id = try daemon.add([file], to: destination, ["--protocol", "put"])[0]
        try pane.run("clear; \(uploadctl) --socket \(daemon.socket) watch \(id); echo watch-exit=$?")
        let watched = pane.waitFor { $0.contains("\(id) bars.bin ") && $0.contains("[#") }
        #expect(watched.met, "\(watched.screen)")
        print("tmux capture-pane of watch:\n\(watched.screen)")
        #expect(pane.waitFor(timeout: 30) { $0.contains("watch-exit=0") }.met)

        // Piped: lines, no bars.
        let piped = try daemon.ctl(["add", file, "--to", destination, "--protocol", "put", "--wait"])
        #expect(piped.status == 0 && !piped.stdout.contains("[#") && !piped.stdout.contains("\u{1B}"), "\(piped)")
    }

    @Test func aDaemonThatDiesUnderItEndsItWithAMessage() throws {
        let pane = try TmuxPane(width: 80, height: 20)
        try pane.run("\(uploadctl) --socket \(daemon.socket) top; echo exit=$?")
        #expect(pane.waitFor { $0.contains("uploadd · ") }.met)
        daemon.crash()
        let ended = pane.waitFor { $0.contains("exit=69") }
        #expect(ended.met, "\(ended.screen)")
        #expect(ended.screen.contains("the list stopped (is uploadd running?)"), "\(ended.screen)")
        try pane.run("echo terminal-ok")
        #expect(pane.waitFor { $0.contains("\nterminal-ok") }.met, "the terminal was restored")
        try daemon.start()
    }
}

/// Display columns of captured text (tmux pads nothing; wide characters take two).
enum TerminalWidth {
    static func of(_ text: String) -> Int { text.unicodeScalars.count }
}
