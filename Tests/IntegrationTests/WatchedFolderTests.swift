import Foundation
import Glibc
import TestSupport
import Testing
import UploadCore
import UploadWire

/// `[folder NAME]`: files that appear in a watched folder go to nginx's WebDAV once, whole, and
/// only once, across restarts, against a real daemon.
@Suite(.serialized)
final class WatchedFolderTests {
    let servers: TestServers
    let inbox: String
    let run = "watched-\(UUID().uuidString.prefix(8))"
    let daemon: DaemonProcess

    init() throws {
        servers = try TestServers.load()
        inbox = try TestPaths.scratch("watched-inbox").path
        daemon = try DaemonProcess(name: "watched", config: Self.config(inbox: inbox, to: "", settle: "1s"))
        try writeConfig(settle: "1s")
    }

    deinit { daemon.stop() }

    static func config(inbox: String, to: String, settle: String, extra: String = "") -> String {
        """
        [folder inbox]
        path = \(inbox)
        to = \(to)
        protocol = put
        settle = \(settle)
        \(extra)
        """
    }

    var destination: String { "\(servers.nginxURL)/dav/\(run)/" }
    var received: String { "\(servers.nginxRoot)/dav/\(run)" }

    func writeConfig(settle: String, extra: String = "") throws {
        try Self.config(inbox: inbox, to: destination, settle: settle, extra: extra)
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
    }

    /// A config whose folder sends to a port nothing listens on: its jobs wait, retrying.
    func writeConfigToADownServer(settle: String) throws {
        try Self.config(inbox: inbox, to: "http://127.0.0.1:9/down/", settle: settle)
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
    }

    /// The jobs of the folder, by source path inside it.
    func jobs() throws -> [String: [JobInfo]] {
        Dictionary(
            grouping: try daemon.ctlJSON(JobList.self, ["list"]).jobs.filter { $0.source.hasPrefix(inbox + "/") }
        ) {
            String($0.source.dropFirst(inbox.count + 1))
        }
    }

    /// Waits until each of `paths` has a completed job, and returns the jobs by path.
    @discardableResult
    func waitForUploads(_ paths: [String], timeout: Double = 60) throws -> [String: [JobInfo]] {
        var last: [String: [JobInfo]] = [:]
        let done = try eventually(timeout: timeout) {
            last = try jobs()
            return paths.allSatisfy { last[$0]?.contains { $0.state == .completed } == true }
        }
        guard done else {
            let missing = paths.filter { last[$0]?.contains { $0.state == .completed } != true }
            throw TestFailure(
                "\(missing.count) of \(paths.count) not uploaded, such as \(missing.prefix(5)): \(missing.prefix(5).map { last[$0] as Any })\nlog:\n\(daemon.log(tail: 30))"
            )
        }
        return last
    }

    func write(_ path: String, _ text: String, append: Bool = false) throws {
        let url = URL(fileURLWithPath: inbox + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if append, let handle = try? FileHandle(forWritingTo: url) {
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
        } else {
            try Data(text.utf8).write(to: url)
        }
    }

    /// A file written in three parts, a second apart, goes once, whole; one saved by
    /// write-then-rename goes under its final name only.
    @Test func aFileGoesOnceWholeAfterItsLastWrite() throws {
        try writeConfig(settle: "2s")
        try daemon.start()
        for part in 1...3 {
            try write("slow.txt", "part \(part)\n", append: part > 1)
            Thread.sleep(forTimeInterval: 1)
        }
        try write(".photo.jpg.tmp", "the whole photo\n")
        #expect(rename(inbox + "/.photo.jpg.tmp", inbox + "/photo.jpg") == 0)
        try write("new/deeper/x.txt", "in folders made since the start\n")  // made with its folders at once
        let jobs = try waitForUploads(["slow.txt", "photo.jpg", "new/deeper/x.txt"])
        Thread.sleep(forTimeInterval: 3)  // anything else would have been taken by now
        #expect(
            try self.jobs().mapValues(\.count) == ["slow.txt": 1, "photo.jpg": 1, "new/deeper/x.txt": 1], "\(jobs)")
        #expect(try String(contentsOfFile: received + "/slow.txt", encoding: .utf8) == "part 1\npart 2\npart 3\n")
        #expect(try String(contentsOfFile: received + "/photo.jpg", encoding: .utf8) == "the whole photo\n")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: received).sorted() == ["new", "photo.jpg", "slow.txt"])
    }

    /// Files that appear while uploadd is down go after it starts; nothing goes twice, not after a
    /// restart and not after the jobs are cleared; a file changed after its upload goes again.
    @Test func filesOfTheDowntimeGoOnceAndAChangedFileGoesAgain() throws {
        try daemon.start()
        try write("first.txt", "first\n")
        try waitForUploads(["first.txt"])
        #expect(daemon.stop() == 0)
        let dropped = (1...20).map { "day\($0 % 3)/file-\($0).txt" }
        for path in dropped { try write(path, "contents of \(path)\n") }
        try daemon.start()
        try waitForUploads(dropped)
        for path in dropped {
            #expect(try String(contentsOfFile: received + "/" + path, encoding: .utf8) == "contents of \(path)\n")
        }
        #expect(daemon.stop() == 0)
        try daemon.start()
        #expect(try daemon.ctl(["clear"]).status == 0)
        #expect(daemon.stop() == 0)
        try daemon.start()
        Thread.sleep(forTimeInterval: 2)
        let retaken = try jobs().keys.sorted()
        #expect(retaken.isEmpty, "taken again after a restart")
        try write("first.txt", "first, edited\n")
        try waitForUploads(["first.txt"])
        #expect(try jobs().mapValues(\.count) == ["first.txt": 1])
        #expect(try String(contentsOfFile: received + "/first.txt", encoding: .utf8) == "first, edited\n")
    }

    /// `uploadctl folders` lists the folder with what it took; `folders pause` stops it taking
    /// files, across a restart, until `folders resume`, which takes what came meanwhile.
    @Test func foldersListsAPausedFolderTakesNothingUntilResumed() throws {
        try daemon.start()
        try waitForWatching()
        try write("a.txt", "a\n")
        let uploaded = try waitForUploads(["a.txt"])
        #expect(uploaded["a.txt"]?.first?.folder == "inbox", "a folder's job carries its name")
        var folder = try #require(try daemon.ctlJSON(FolderList.self, ["folders"]).folders.first)
        #expect(folder.name == "inbox" && folder.path == inbox && folder.state == .watching)
        #expect(folder.taken == 1 && folder.uploaded == 1 && folder.queued == 0 && folder.failed == 0)
        #expect(folder.lastUpload?.source == inbox + "/a.txt")
        #expect(try daemon.ctl(["folders"]).stdout.contains("inbox  watching"))

        let paused = try daemon.ctl(["folders", "pause", "inbox"])
        #expect(paused.status == 0 && paused.stdout.contains("inbox: paused"), "\(paused)")
        try write("b.txt", "b\n")
        Thread.sleep(forTimeInterval: 2.5)  // settle is 1 s
        #expect(try jobs()["b.txt"] == nil, "a paused folder takes nothing")
        #expect(daemon.stop() == 0)
        try daemon.start()
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try jobs()["b.txt"] == nil, "the pause holds across a restart")
        folder = try #require(try daemon.ctlJSON(FolderList.self, ["folders"]).folders.first)
        #expect(folder.state == .paused)

        #expect(try daemon.ctl(["folders", "resume", "inbox"]).status == 0)
        try waitForUploads(["b.txt"], timeout: 30)
        #expect(try jobs().mapValues(\.count) == ["a.txt": 1, "b.txt": 1])
        let unknown = try daemon.ctl(["folders", "pause", "nosuch"])
        #expect(
            unknown.status != 0 && unknown.stderr.contains("no [folder nosuch] in the config; its folders are inbox"))
    }

    /// A file changed in place while its upload has not ended (a server that is down): the new
    /// version is taken, and the older version's job canceled, so that it cannot land on the
    /// server after the newer one.
    @Test func aNewVersionCancelsTheOlderVersionsUnfinishedJob() throws {
        try writeConfigToADownServer(settle: "500ms")
        try daemon.start()
        try waitForWatching()
        try write("a.txt", "first\n")
        let first = try eventually(timeout: 20) { (try jobs()["a.txt"]?.count ?? 0) == 1 }
        #expect(first, "the first version is taken")
        try write("a.txt", "second, longer\n")
        var versions: [JobInfo] = []
        let replaced = try eventually(timeout: 20) {
            versions = (try jobs()["a.txt"] ?? []).sorted { $0.id < $1.id }
            return versions.count == 2 && versions[0].state == .canceled
        }
        #expect(replaced, "the older version's job is canceled: \(versions.map { ($0.id, $0.state) })")
        #expect(versions.last.map { !$0.state.isTerminal } == true, "the newer one waits for the server")
        // Saved anew by write-then-rename (another inode, the same name): the same.
        try write(".a.txt.tmp", "third, longer still\n")
        #expect(rename(inbox + "/.a.txt.tmp", inbox + "/a.txt") == 0)
        let renamed = try eventually(timeout: 20) {
            versions = (try jobs()["a.txt"] ?? []).sorted { $0.id < $1.id }
            return versions.count == 3 && versions[1].state == .canceled
        }
        #expect(renamed, "the version saved over is canceled too: \(versions.map { ($0.id, $0.state) })")
    }

    /// `match = content`: a file touched, or saved again unchanged by write-then-rename, does not
    /// go again, also after a restart; a changed content does.
    @Test func aFolderMatchingContentUploadsAChangeOnly() throws {
        try writeConfig(settle: "300ms", extra: "match = content")
        try daemon.start()
        try waitForWatching()
        try write("a.txt", "same words\n")
        try waitForUploads(["a.txt"])
        Thread.sleep(forTimeInterval: 0.1)
        let touched = open(inbox + "/a.txt", O_WRONLY)  // opened for writing and closed: IN_CLOSE_WRITE
        #expect(futimens(touched, nil) == 0)  // touched: now
        close(touched)
        func leftAlone(_ times: Int) throws -> Bool {
            try eventually(timeout: 10) {
                daemon.log(tail: 50).components(separatedBy: "unchanged in content: left alone").count - 1 >= times
            }
        }
        #expect(try leftAlone(1), "the touched file is seen and left alone: \(daemon.log(tail: 20))")
        try write(".a.txt.tmp", "same words\n")
        #expect(rename(inbox + "/.a.txt.tmp", inbox + "/a.txt") == 0)  // a new inode, the same words
        #expect(try leftAlone(2), "the file saved again is seen and left alone: \(daemon.log(tail: 20))")
        #expect(try jobs()["a.txt"]?.count == 1, "not uploaded again")
        #expect(daemon.stop() == 0)
        try daemon.start()
        try waitForWatching(times: 2)
        Thread.sleep(forTimeInterval: 1)
        #expect(try jobs()["a.txt"]?.count == 1, "not taken again at the start-up scan")
        try write("a.txt", "other words\n")
        let again = try eventually(timeout: 20) {
            (try jobs()["a.txt"] ?? []).filter { $0.state == .completed }.count == 2
        }
        #expect(again, "a change of content goes")
        #expect(try String(contentsOfFile: received + "/a.txt", encoding: .utf8) == "other words\n")
    }

    /// A folder of 100,000 files is scanned at start by the watcher's own thread: the control
    /// socket answers throughout, and uploadd said READY before the scan.
    @Test func aFolderOf100000FilesIsScannedWithoutHoldingTheSocket() throws {
        for day in 0..<100 {
            let folder = inbox + "/day\(day)"
            mkdir(folder, 0o755)
            for index in 0..<1000 {
                let fd = open(folder + "/f\(index).txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
                #expect(fd >= 0)
                close(fd)
            }
        }
        try Self.config(inbox: inbox, to: "file://\(inbox)-out/", settle: "1s")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        try daemon.start()
        let scanStarted = Date()
        var slowest = 0.0
        var asks = 0
        var failed = 0
        let scanned = eventually(timeout: 600) {
            let started = Date()
            if (try? daemon.ctl(["status"]))?.status != 0 { failed += 1 }
            slowest = max(slowest, Date().timeIntervalSince(started))
            asks += 1
            return daemon.log(tail: 100_000).contains("[folder inbox] watching \(inbox)")
        }
        #expect(failed == 0)
        let scan = Date().timeIntervalSince(scanStarted)
        #expect(scanned, "the scan ended: \(daemon.log(tail: 10))")
        print("100,000 files: a scan of \(scan) s, \(asks) statuses during it, the slowest \(slowest) s")
        // Held for the whole scan, one status would have waited for all of it. The scheduler
        // takes the files as they come, a chunk of up to 1,000 at a time: a status waits for one
        // chunk's turn at most (with a task per chunk, it waited for all that were queued: 2.5 s).
        #expect(asks >= 3 && slowest < 2, "the control socket answered during the scan")
        let taken = try daemon.statusJSON()["jobs"]
        #expect(taken != nil)
        #expect(daemon.stop() == 0)
    }

    /// `folders pause` pauses the folder's unfinished jobs, and `folders resume` resumes those
    /// (across a restart too), never a job the user paused by itself.
    @Test func aFoldersResumeResumesTheJobsItsPausePaused() throws {
        try writeConfigToADownServer(settle: "300ms")
        try daemon.start()
        try waitForWatching()
        try write("mine.txt", "paused by me\n")
        try write("folder.txt", "paused with the folder\n")
        let both = try eventually(timeout: 20) { try jobs().count == 2 }
        #expect(both)
        let mine = try #require(try jobs()["mine.txt"]?.first?.id)
        let folders = try #require(try jobs()["folder.txt"]?.first?.id)
        #expect(try daemon.ctl(["pause", "\(mine)"]).status == 0)
        #expect(try daemon.ctl(["folders", "pause", "inbox"]).status == 0)
        #expect(try daemon.job(folders).state == .paused)
        #expect(daemon.stop() == 0)
        try daemon.start()
        #expect(try daemon.ctl(["folders", "resume", "inbox"]).status == 0)
        #expect(try daemon.job(folders).state != .paused, "the job the folder's pause paused is resumed")
        #expect(try daemon.job(mine).state == .paused, "the job paused by itself stays paused")
    }

    /// `reload` adds a rule while files arrive (its folder is scanned, then watched) and removes it
    /// (files after it stay).
    @Test func reloadAddsAndRemovesAFolderWhileFilesArrive() throws {
        try "".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        try daemon.start()
        try write("before.txt", "before\n")
        // A file every 20 ms, all through: (name, when written).
        let written = NSLock()
        nonisolated(unsafe) var stream: [(name: String, at: Date)] = []
        nonisolated(unsafe) var stop = false
        let writer = Thread { [inbox] in
            var index = 0
            while !written.withLock({ stop }) {
                let name = "stream-\(index).txt"
                try? Data(name.utf8).write(to: URL(fileURLWithPath: inbox + "/" + name))
                written.withLock { stream.append((name, Date())) }
                index += 1
                usleep(20_000)
            }
        }
        writer.start()
        defer { written.withLock { stop = true } }
        Thread.sleep(forTimeInterval: 1)
        #expect(try jobs().isEmpty)
        try writeConfig(settle: "1s")
        #expect(try daemon.ctl(["reload"]).status == 0)
        let added = Date()
        Thread.sleep(forTimeInterval: 4)
        let removing = Date()
        try "".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        #expect(try daemon.ctl(["reload"]).status == 0)
        let removed = Date()
        Thread.sleep(forTimeInterval: 3)
        written.withLock { stop = true }
        let files = written.withLock { stream }
        // Written while the rule was there and settled before it went: taken, by the scan or an
        // event. Written after it went: not taken. Any: at most once.
        let taken = files.filter { $0.at > added && $0.at < removing.addingTimeInterval(-2) }.map(\.name)
        let jobs = try waitForUploads(["before.txt"] + taken)
        #expect(jobs.filter { $0.value.count != 1 }.isEmpty, "taken twice")
        let afterRemoval = Set(files.filter { $0.at > removed }.map(\.name))
        #expect(!afterRemoval.isEmpty && afterRemoval.isDisjoint(with: jobs.keys), "taken after the rule went")
        #expect(files.count > 100 && taken.count > 20, "\(files.count) written, \(taken.count) taken")
    }

    /// A folder others may write to is refused, and says why; a folder removed and made again is
    /// watched again.
    @Test func anOpenFolderIsRefusedAndARemadeFolderIsWatchedAgain() throws {
        chmod(inbox, 0o777)
        try daemon.start()
        try write("planted.txt", "planted\n")
        Thread.sleep(forTimeInterval: 2)
        #expect(try jobs().isEmpty)
        #expect(daemon.log(tail: 200).contains("(mode 777); chmod go-w \(inbox)"))
        chmod(inbox, 0o755)  // tried again within 5 s, with no reload
        try waitForWatching(times: 1)
        try waitForUploads(["planted.txt"], timeout: 30)
        // Removed: the folder waits to be made again, and says so in status.
        try FileManager.default.removeItem(atPath: inbox)
        let waiting = try eventually(timeout: 20) {
            (try daemon.statusJSON()["folder_problems"]).map { "\($0)".contains("does not exist") } == true
        }
        #expect(waiting, "status says the folder is gone: \(daemon.log(tail: 20))")
        // Made again: watched again, and a file written then goes by its event.
        mkdir(inbox, 0o755)
        try waitForWatching(times: 2)
        try write("again.txt", "again\n")
        try waitForUploads(["again.txt"], timeout: 30)
    }

    /// uploadd killed with SIGKILL at random moments while files are dropped in, settle, upload
    /// and are deleted (`after = delete`): every file goes, whole, and has exactly one job; none
    /// is deleted before its upload is on the server (and its end journaled); at the end every
    /// one is deleted. An add that was not durable when the daemon died is forgotten with it,
    /// and the start-up scan takes the file again; one that was is its record, and the file is
    /// not taken twice. `UPLOADD_TEST_SEED=N` repeats a run; `UPLOADD_TEST_CRASH_AT` points
    /// (`folder-action-due`, `folder-action-done`) are hit by other rounds' kills too.
    @Test func aCrashAtAnyMomentTakesEachFileExactlyOnceAndDeletesItAfter() throws {
        try writeConfig(settle: "200ms", extra: "after = delete")
        var random = SeededRandom()
        print("watched-folder crash loop: seed \(random.seed) (UPLOADD_TEST_SEED=\(random.seed) repeats it)")
        try daemon.start()
        var dropped: [String: Data] = [:]
        /// Every file no longer in the folder is on the server, whole.
        func checkNothingDeletedEarly(_ when: String) {
            for (name, bytes) in dropped where access(inbox + "/" + name, F_OK) != 0 {
                #expect(
                    FileManager.default.contents(atPath: received + "/" + name) == bytes,
                    "\(name) deleted before its upload was whole on the server (\(when))")
            }
        }
        for round in 0..<12 {
            for index in 0..<Int.random(in: 1...4, using: &random) {
                let name = "round\(round)/file-\(index).bin"
                let size =
                    Int.random(in: 0...9, using: &random) == 0 ? 3 << 20 : Int.random(in: 1...300_000, using: &random)
                let bytes = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
                dropped[name] = bytes
                try FileManager.default.createDirectory(
                    atPath: inbox + "/round\(round)", withIntermediateDirectories: true)
                if Bool.random(using: &random) {
                    try bytes.write(to: URL(fileURLWithPath: inbox + "/round\(round)/.file-\(index).tmp"))
                    #expect(rename(inbox + "/round\(round)/.file-\(index).tmp", inbox + "/" + name) == 0)
                } else {
                    try bytes.write(to: URL(fileURLWithPath: inbox + "/" + name))
                }
            }
            usleep(UInt32.random(in: 50_000...800_000, using: &random))
            daemon.crash()
            checkNothingDeletedEarly("after the kill of round \(round)")
            try daemon.start()
        }
        let uploads = try waitForUploads(dropped.keys.sorted(), timeout: 120)
        let twice = uploads.filter { $0.value.count != 1 }.mapValues(\.count)
        #expect(twice.isEmpty, "taken more than once")
        #expect(Set(uploads.keys) == Set(dropped.keys))
        for (name, bytes) in dropped {
            #expect(FileManager.default.contents(atPath: received + "/" + name) == bytes, "\(name) on the server")
        }
        let left = try eventually(timeout: 30) {
            let files = FileManager.default.enumerator(atPath: inbox)?.compactMap { $0 as? String } ?? []
            return files.allSatisfy { !$0.hasSuffix(".bin") && !$0.contains(".uploadd-deleting.") }
        }
        #expect(left, "every file is deleted once uploaded: \(FileManager.default.subpaths(atPath: inbox) ?? [])")
        #expect(daemon.stop() == 0)
        try daemon.start()
        let status = try daemon.statusJSON()
        #expect(status["journal_damage"] == nil, "a clean restart finds no damage")
        #expect(try jobs().mapValues(\.count) == uploads.mapValues(\.count), "nothing taken again after the deletes")
    }

    /// `after` is the rule's when the file was taken: a rule changed from `keep` to `delete`
    /// deletes the files taken after the change, never those taken before.
    @Test func aRuleChangedToDeleteLeavesTheFilesTakenBefore() throws {
        try writeConfig(settle: "300ms")
        try daemon.start()
        try waitForWatching()
        try write("kept.txt", "kept\n")
        try waitForUploads(["kept.txt"])
        try writeConfig(settle: "300ms", extra: "after = delete")
        #expect(try daemon.ctl(["reload"]).status == 0)
        try waitForWatching(times: 2)
        try write("deleted.txt", "deleted\n")
        try waitForUploads(["deleted.txt"])
        #expect(try eventually(timeout: 10) { access(inbox + "/deleted.txt", F_OK) != 0 }, "deleted once uploaded")
        #expect(daemon.stop() == 0)
        try daemon.start()
        Thread.sleep(forTimeInterval: 1)
        #expect(access(inbox + "/kept.txt", F_OK) == 0, "taken under keep: kept, also after a restart")
    }

    /// `after = move:DIR` moves each file once uploaded; a file changed after its upload is left
    /// where it is (and goes again, as a new version), and a crash between the upload's end and
    /// the move moves it at the next start, without an upload again.
    @Test func afterMoveMovesOnlyTheUploadedVersionAlsoAcrossACrash() throws {
        let done = inbox + "-done"
        try writeConfig(settle: "500ms", extra: "after = move:\(done)")
        try daemon.start()
        try waitForWatching()
        try write("a.txt", "a\n")
        try waitForUploads(["a.txt"])
        let moved = try eventually(timeout: 10) { access(done + "/a.txt", F_OK) == 0 }
        #expect(moved && access(inbox + "/a.txt", F_OK) != 0, "moved once uploaded: \(daemon.log(tail: 10))")
        // Killed at the moment the move is due: moved at the next start, not uploaded again.
        #expect(daemon.stop() == 0)
        daemon.extraEnvironment = ["UPLOADD_TEST_CRASH_AT": "folder-action-due"]
        try daemon.start()
        try write("b.txt", "b\n")
        #expect(eventually(timeout: 30) { daemon.diedOfSIGKILL }, "the daemon died where the move was due")
        #expect(access(inbox + "/b.txt", F_OK) == 0, "not moved before the crash")
        daemon.crash()
        daemon.extraEnvironment = [:]
        try daemon.start()
        let movedAfter = try eventually(timeout: 20) { access(done + "/b.txt", F_OK) == 0 }
        #expect(movedAfter, "moved at the next start: \(daemon.log(tail: 10))")
        #expect(try jobs().mapValues(\.count) == ["a.txt": 1, "b.txt": 1], "uploaded once each")
        // Moved by hand into the folder again: the same version, not taken again.
        #expect(rename(done + "/b.txt", inbox + "/b.txt") == 0)
        Thread.sleep(forTimeInterval: 2)
        #expect(try jobs().mapValues(\.count) == ["a.txt": 1, "b.txt": 1], "the same version is not taken again")
    }

    /// Out of inotify watches (three allowed, in a user namespace of the daemon's own): `status`
    /// says so, naming the sysctl, and the files of the folders left unwatched still go, found by
    /// the scan every 5 seconds.
    @Test func runningOutOfWatchesIsSaidAndTheFilesStillGo() throws {
        for day in 1...5 { mkdir(inbox + "/day\(day)", 0o755) }
        daemon.launcher = [
            "/usr/bin/unshare", "-U", "-r", "--", "/bin/sh", "-c",
            "echo 3 > /proc/sys/user/max_inotify_watches && exec \"$@\"", "sh",
        ]
        try daemon.start()
        var problems: [String] = []
        let said = try eventually(timeout: 20) {
            problems = (try daemon.statusJSON()["folder_problems"] as? [String]) ?? []
            return !problems.isEmpty
        }
        #expect(said)
        #expect(
            problems.first?.hasPrefix("[folder inbox] the inotify watches allowed to this user are used up") == true)
        #expect(problems.first?.contains("fs.inotify.max_user_watches = 3") == true, "\(problems)")
        let text = try daemon.ctl(["status"]).stdout
        #expect(text.contains("folder not watched: [folder inbox]"), "\(text)")
        try write("day5/late.txt", "late\n")
        try waitForUploads(["day5/late.txt"], timeout: 30)
    }

    /// The kernel's queue of events overflows (the watcher stops reading through a test seam, and
    /// more files come than `fs.inotify.max_queued_events` holds events of): the scan that
    /// follows the overflow finds every file, and each goes once.
    @Test func aQueueOverflowLosesNoFile() throws {
        let limit =
            Int(
                try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16384
        let stall = daemon.root.appendingPathComponent("stall").path
        daemon.extraEnvironment["UPLOADD_TEST_FOLDER_STALL"] = stall
        try daemon.start()
        try waitForWatching()
        FileManager.default.createFile(atPath: stall, contents: nil)
        // Two events a file (made, then closed after writing): past the limit by a margin.
        let names = (0..<(limit / 2 + 500)).map { "f\($0).txt" }
        for name in names { try write(name, name) }
        try FileManager.default.removeItem(atPath: stall)
        try waitForUploads(names, timeout: 180)
        #expect(daemon.log(tail: 100_000).contains("the kernel's event queue overflowed"))
        let twice = try jobs().filter { $0.value.count != 1 }.mapValues(\.count)
        #expect(twice.isEmpty, "taken more than once")
    }

    /// Until the start-up scan has watched the folder, a file written may be found by the scan
    /// or not at all: tests that need events wait for it, that is for the daemon to have said
    /// `[folder inbox] watching PATH` `times` times since it started (once per start, and once
    /// more each time the folder is watched again) with no problem in status.
    func waitForWatching(times: Int = 1) throws {
        let line = "[folder inbox] watching \(inbox)"
        let watching = try eventually(timeout: 20) {
            (try daemon.statusJSON()["folder_problems"]) == nil
                && daemon.log(tail: 100_000).components(separatedBy: line).count - 1 >= times
        }
        if !watching { throw TestFailure("the folder is not watched: \(daemon.log(tail: 20))") }
    }
}
