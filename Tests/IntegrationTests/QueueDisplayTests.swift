import Foundation
import Testing
import UploadCore
import UploadWire

/// Issue 49, items 3, 4 and 7: the queue shown in the order it runs, lines that fit 80 and 60
/// columns, and what waiting jobs wait for, with a real daemon and a real terminal (tmux). One
/// slow upload holds the only transfer slot, so the other jobs stay queued.
@Suite(.serialized)
final class QueueDisplayTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL
    var uploadctl: String { TestPaths.binaries.appendingPathComponent("uploadctl").path }
    var ctl: String { "\(uploadctl) --socket \(daemon.socket)" }

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("queue-display-files")
        daemon = try DaemonProcess(name: "queue-display", config: "[daemon]\ntransfers = 1\nrate_limit = 200K\n")
        try daemon.start()
    }

    deinit { daemon.stop() }

    /// A finished job, then one uploading slowly, then `count` small ones queued behind it.
    func queue(_ count: Int) throws -> (finished: JobID, running: JobID, queued: [JobID]) {
        let done = files.appendingPathComponent("done.bin").path
        try makeRandomFile(at: done, size: 1000)
        let finished = try daemon.add([done], to: "\(servers.nginxURL)/dav/queue/", ["--protocol", "put"])[0]
        #expect(try daemon.waitFor(finished).state == .completed)
        let deep = files.appendingPathComponent(String(repeating: "folder/", count: 6))
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        let big = deep.appendingPathComponent("deep.bin").path
        try makeRandomFile(at: big, size: 16 << 20)
        let running = try daemon.add([big], to: "\(servers.nginxURL)/dav/queue/a/long/folder/", ["--protocol", "put"])[
            0]
        _ = try daemon.waitFor(running, state: .running, timeout: 30)
        let smalls = try (0..<count).map { index -> String in
            let path = files.appendingPathComponent("small-\(index).txt").path
            try "small \(index)\n".write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let queued =
            smalls.isEmpty ? [] : try daemon.add(smalls, to: "\(servers.nginxURL)/dav/queue/", ["--protocol", "put"])
        return (finished, running, queued)
    }

    func positions() throws -> [JobID: Int] {
        let list = try daemon.ctlJSON(JobList.self, ["list"])
        return Dictionary(uniqueKeysWithValues: list.jobs.compactMap { job in job.position.map { (job.id, $0) } })
    }

    /// The IDs of the rows on a screen or in `list`'s output, top to bottom.
    func ids(in text: String) -> [JobID] {
        text.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first.flatMap { JobID(String($0)) }
        }
    }

    /// Item 3: `list` shows the order jobs run in, and `move` visibly changes it.
    @Test func listShowsTheQueueInTheOrderItRuns() throws {
        let (finished, running, queued) = try queue(4)
        #expect(try daemon.ctl(["move", "\(queued[3])", "--top"]).status == 0)
        #expect(try positions() == [queued[3]: 1, queued[0]: 2, queued[1]: 3, queued[2]: 4])
        let list = try daemon.ctl(["list"])
        #expect(ids(in: list.stdout) == [running, queued[3], queued[0], queued[1], queued[2], finished], "\(list)")
    }

    /// Item 3: K in top moves the selected job one place per press, on screen and in the daemon.
    @Test func topMovesAJobOnePlacePerPress() throws {
        let (_, running, queued) = try queue(4)
        let pane = try TmuxPane(width: 100, height: 20)
        try pane.run("\(ctl) top")
        #expect(pane.waitFor { $0.contains("uploadd · ") && $0.contains("small-3.txt") }.met)
        // The last queued job, selected by going down from the running one.
        for _ in 0..<4 { try pane.keys("Down") }
        var expected = [queued[0], queued[1], queued[2]]
        for press in 1...3 {
            try pane.keys("K")
            expected.insert(queued[3], at: 3 - press)
            let order = [running] + expected
            let moved = pane.waitFor { Array(self.ids(in: $0).prefix(5)) == order }
            #expect(moved.met, "after \(press) presses of K:\n\(moved.screen)")
            #expect(try positions()[queued[3]] == 4 - press)
            expected.remove(at: 3 - press)
        }
        try pane.keys("q")
    }

    /// Item 7: d and x ask for y first, as D does; anything else keeps the jobs.
    @Test func topAsksBeforeRemovingOrClearing() throws {
        let (finished, _, queued) = try queue(1)
        #expect(try daemon.ctl(["pause", "\(queued[0])"]).status == 0)
        let pane = try TmuxPane(width: 100, height: 20)
        try pane.run("\(ctl) top")
        #expect(pane.waitFor { $0.contains("small-0.txt") }.met)
        try pane.keys("Down")
        try pane.keys("d")
        let asked = pane.waitFor { $0.contains("remove job \(queued[0])") && $0.contains("[y/N]") }
        #expect(asked.met, "d asks first:\n\(asked.screen)")
        try pane.keys("n")
        try pane.keys("x")
        let clearAsked = pane.waitFor { $0.contains("clear 1 finished jobs") }
        #expect(clearAsked.met, "x asks first:\n\(clearAsked.screen)")
        try pane.keys("n")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try daemon.job(queued[0]).state == .paused, "n kept the paused job")
        #expect(try daemon.job(finished).state == .completed, "n kept the finished job")
        try pane.keys("q")
    }

    /// Item 4: list, top, watch and help at 80 and 60 columns keep what identifies each job, and
    /// top says when the terminal is too narrow.
    @Test(arguments: [80, 60])
    func everythingFits(width: Int) throws {
        let (_, running, queued) = try queue(1)
        // The host and port; at 60 columns the scheme gives way.
        let host = servers.nginxURL.replacingOccurrences(of: "http://", with: "")
        let pane = try TmuxPane(width: width, height: 30)
        // A short name for uploadctl, so that the command lines typed fit too; the shell's
        // arithmetic marks the end of each command's output (the line typed does not match it).
        try pane.run("U() { \(ctl) \"$@\"; }; clear")
        func fits(_ screen: String) -> Bool {
            screen.split(separator: "\n").allSatisfy { TerminalWidth.of(String($0)) <= width }
        }
        try pane.run("U list; echo list-$((40+2))")
        let list = pane.waitFor { $0.contains("list-42") }
        #expect(list.met && fits(list.screen), "\(list.screen)")
        let row = list.screen.split(separator: "\n").first { $0.hasPrefix("\(running) ") }.map(String.init) ?? ""
        #expect(row.contains("running") && row.contains("deep.bin -> ") && row.contains(host), "\(list.screen)")

        try pane.run("clear; U add --help; echo help-$((40+2))")
        let help = pane.waitFor { $0.contains("help-42") }
        #expect(help.met && fits(help.screen), "\(help.screen)")

        try pane.run("clear; U watch")
        let watch = pane.waitFor { $0.contains("\(running) deep.bin") && $0.contains("[#") }
        #expect(watch.met && fits(watch.screen), "a job running before watch began shows its name:\n\(watch.screen)")
        try pane.keys("C-c")

        try pane.run("clear; U top")
        let top = pane.waitFor { self.ids(in: $0).contains(queued[0]) }
        let topRow = top.screen.split(separator: "\n").first { $0.hasPrefix("\(running) ") }.map(String.init) ?? ""
        #expect(
            top.met && fits(top.screen) && topRow.contains("running") && topRow.contains("deep.bin"), "\(top.screen)")
        try pane.resize(width: 40, height: 20)
        let narrow = pane.waitFor { $0.contains("too narrow") }
        #expect(narrow.met, "\(narrow.screen)")
        try pane.keys("q")
    }

    /// Item 7: Ctrl-C during `add --wait` says that the upload goes on.
    @Test func interruptingAWaitSaysTheUploadGoesOn() throws {
        _ = try queue(0)
        let file = files.appendingPathComponent("waited.txt").path
        try "waited\n".write(toFile: file, atomically: true, encoding: .utf8)
        let pane = try TmuxPane(width: 80, height: 20)
        try pane.run("\(ctl) add \(file) --to \(servers.nginxURL)/dav/queue/ --protocol put --wait; echo exit=$?")
        Thread.sleep(forTimeInterval: 1)
        try pane.keys("C-c")
        let said = pane.waitFor { $0.contains("exit=") }
        #expect(said.screen.contains("the uploads go on in uploadd"), "\(said.screen)")
        let job = try daemon.ctlJSON(JobList.self, ["list"]).jobs.first { $0.source == file }
        #expect(job?.state == .queued, "the job is still there")
    }
}

/// Item 7: a job waiting to retry says why in `list`, on a terminal and in a pipe.
@Suite(.serialized)
final class WaitingReasonTests {
    let daemon: DaemonProcess

    init() throws {
        daemon = try DaemonProcess(name: "waiting-reason")
        try daemon.start()
    }

    deinit { daemon.stop() }

    @Test func aRetryingJobSaysWhy() throws {
        let file = try TestPaths.scratch("waiting-reason-files").appendingPathComponent("a.txt").path
        try "a\n".write(toFile: file, atomically: true, encoding: .utf8)
        // Nothing listens on port 1 of 127.0.0.1: the connection is refused, and the job retries.
        let id = try daemon.add([file], to: "http://127.0.0.1:1/up/", ["--protocol", "put"])[0]
        #expect(eventually(timeout: 30) { ((try? self.daemon.job(id))?.attempts ?? 0) >= 1 })
        let piped = try daemon.ctl(["list"])
        let row = piped.stdout.split(separator: "\n").first { $0.hasPrefix("\(id) ") } ?? ""
        #expect(row.contains(" queued (retrying in") && row.contains("connect"), "\(piped)")
        let pane = try TmuxPane(width: 80, height: 10)
        try pane.run("\(TestPaths.binaries.appendingPathComponent("uploadctl").path) --socket \(daemon.socket) list")
        let shown = pane.waitFor { $0.contains("    retrying in") }
        #expect(shown.met, "\(shown.screen)")
    }

    /// Issue 49, item 7: an attempt fails a third of the way in (a 503); while the job waits for its retry,
    /// the `--wait` bar starts again from what the server kept (nothing, for a PUT) and says why,
    /// not the last attempt's 33% and speed.
    @Test func theWaitBarOfARetryingJobStartsOverAndSaysWhy() throws {
        let slow = try HostileServer(
            mode: "slow-read",
            options: ["--read-bytes", "65536", "--read-interval", "0.05", "--fail-after", "1048576"])
        defer { slow.stop() }
        // The server's 503 asks for a retry in 5 s: the bar has that long to show it.
        let retrying = try DaemonProcess(name: "wait-bar-retry")
        try retrying.start()
        defer { retrying.stop() }
        let file = try TestPaths.scratch("waiting-reason-files").appendingPathComponent("three.bin").path
        try makeRandomFile(at: file, size: 3 << 20)
        let pane = try TmuxPane(width: 100, height: 10)
        let uploadctl = TestPaths.binaries.appendingPathComponent("uploadctl").path
        try pane.run("\(uploadctl) --socket \(retrying.socket) add \(file) --to \(slow.url)/up/ --protocol put --wait")
        let waiting = pane.waitFor(timeout: 30) { $0.contains("retrying in") }
        let bar = waiting.screen.split(separator: "\n").first { $0.contains("three.bin") && $0.contains("[") } ?? ""
        #expect(waiting.met, "\(waiting.screen)\n\((try? retrying.ctl(["show", "1"]).stdout) ?? "")")
        #expect(bar.contains("[--------------------]") && bar.contains("  0.0%"), "a stale bar: \(bar)")
        #expect(bar.contains("0.0% retrying in ") && bar.contains("s: HTTP 503"), "no reason: \(bar)")
        #expect(!bar.contains("/s"), "a speed while nothing is sent: \(bar)")
        let done = pane.waitFor(timeout: 60) { $0.contains("completed") }
        #expect(done.met, "\(done.screen)")
    }
}
