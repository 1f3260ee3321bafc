import Foundation
import Testing
import UploadCore
import UploadPlatform
import UploadWire

@testable import UploadDaemon

@Suite("Watched folders: rules, settling, the scan")
struct WatchedFolderUnitTests {
    @Test func aFolderSectionIsReadWithItsDefaults() throws {
        let config = try DaemonConfig.parse(
            """
            [remote nas]
            url = https://nas.example/dav/

            [folder shots]
            path = ~/Pictures/Screenshots/
            to = nas:screenshots/
            include = *.png *.jpg
            settle = 500ms
            image = max=2048
            priority = 5

            [folder "docs"]
            path = /srv/docs
            to = file:///backup/docs/
            recursive = no
            exclude = *.bak
            follow = yes
            """, home: "/home/u")
        let shots = try #require(config.folders["shots"])
        #expect(shots.path == "/home/u/Pictures/Screenshots")
        #expect(shots.destination == "nas:screenshots/" && shots.recursive && !shots.followSymlinks)
        #expect(shots.include == ["*.png", "*.jpg"] && shots.exclude == FolderRule.defaultExcludes)
        #expect(shots.settle == .milliseconds(500) && shots.settleNanoseconds == 500_000_000)
        #expect(shots.image == "max=2048" && shots.priority == 5)
        let docs = try #require(config.folders["docs"])
        #expect(!docs.recursive && docs.followSymlinks && docs.exclude == ["*.bak"] && docs.include.isEmpty)
        #expect(docs.settle == .seconds(2))
        var moved = docs
        moved.line += 10
        #expect(moved == docs, "a section moved in the file is the same rule: reload keeps its watches")
        moved.settle = .seconds(3)
        #expect(moved != docs)
    }

    @Test func aFolderRuleSaysWhatIsWrongWithIt() {
        func errors(_ text: String) -> String {
            (#expect(throws: DaemonConfig.LoadError.self) { try DaemonConfig.parse(text, home: "/home/u") })?.message
                ?? ""
        }
        let missing = errors("[folder a]\nrecursive = maybe\n")
        #expect(missing.contains("line 2: [folder a] recursive must be yes or no"))
        #expect(missing.contains("[folder a] needs a path") && missing.contains("[folder a] needs a 'to' destination"))
        #expect(errors("[folder a]\npath = rel/dir\nto = file:///x/\n").contains("path must be absolute"))
        #expect(errors("[folder a]\npath = /a\nto = file:///x/name.jpg\n").contains("to must be a folder"))
        #expect(errors("[folder a]\npath = /a\nto = nas:x/\n").contains("no [remote nas] is configured"))
        for settle in ["50ms", "2h", "0x10", "1e3", "inf", "-5s", "s", ""] {
            #expect(
                errors("[folder a]\npath = /a\nto = file:///x/\nsettle = \(settle)\n").contains("settle must be a time")
            )
        }
        #expect(DaemonConfig.parseSettle("1h") == .seconds(3600) && DaemonConfig.parseSettle("1.5m") == .seconds(90))
        #expect(DaemonConfig.parseSettle("3") == .seconds(3) && DaemonConfig.parseSettle("250ms") == .milliseconds(250))
        #expect(
            errors("[folder a]\npath = /a\nto = file:///x/\nafter = trash\n").contains(
                "after must be keep, delete or move:DIR"))
        #expect(errors("[folder a]\npath = /a\nto = file:///x/\nafter = move:done\n").contains("DIR absolute"))
        #expect(
            errors("[folder a]\npath = /a\nto = file:///x/\nafter = move:/a/done\n").contains(
                "inside the watched folder"))
        let after = try? DaemonConfig.parse(
            "[folder a]\npath = /a\nto = file:///x/\nafter = move:~/done/\n[folder b]\npath = /b\nto = file:///y/\nafter = delete\n",
            home: "/home/u")
        #expect(after?.folders["a"]?.after == .move("/home/u/done") && after?.folders["b"]?.after == .delete)
        #expect(
            errors("[folder a]\npath = /a\nto = file:///x/\n[folder b]\npath = /a/b\nto = file:///y/\n").contains(
                "[folder b] watches files [folder a] (line 1) watches too"))
        #expect(errors("[foldr a]\n").contains("(did you mean [folder]?)"))
    }

    @Test func aFileIsDueOnceAfterItsLastEvent() {
        var tracker = SettleTracker()
        let shot = SettleTracker.Key(folder: "f", path: "a.png")
        let settle: Int64 = 2_000
        tracker.arm(shot, at: 0, after: settle)
        tracker.arm(shot, at: 1_000, after: settle)  // written again, in a second open
        tracker.arm(SettleTracker.Key(folder: "f", path: ".a.png.tmp"), at: 1_500, after: settle)
        tracker.forget(SettleTracker.Key(folder: "f", path: ".a.png.tmp"))  // renamed away
        #expect(tracker.nextDeadline == 3_000)
        #expect(tracker.takeDue(at: 2_999).isEmpty)
        #expect(tracker.takeDue(at: 3_000) == [shot])
        #expect(tracker.takeDue(at: 9_000).isEmpty && tracker.nextDeadline == nil)
        tracker.arm(SettleTracker.Key(folder: "f", path: "d/x"), at: 0, after: 1)
        tracker.arm(SettleTracker.Key(folder: "f", path: "dx"), at: 0, after: 1)
        tracker.forget(folder: "f", under: "d")
        #expect(tracker.takeDue(at: 5) == [SettleTracker.Key(folder: "f", path: "dx")])
    }

    @Test func aFileIsQuietOnceItsLastChangeIsSettleAgo() {
        #expect(FileQuietness.of(changedNanoseconds: 1_000, now: 3_000, settle: 2_000) == .quiet)
        #expect(
            FileQuietness.of(changedNanoseconds: 1_500, now: 3_000, settle: 2_000) == .changing(waitNanoseconds: 500))
        #expect(FileQuietness.of(changedNanoseconds: 9_000, now: 3_000, settle: 2_000) == .quiet, "a clock set back")
    }

    @Test func theLedgerAndTheQueueKeepAVersionFromBeingTakenTwice() {
        var intake = FolderIntake()
        let a = FolderWatcher.Settled(
            relativePath: "a.png", identity: SourceIdentity(device: 1, inode: 10), size: 5, modifiedNanoseconds: 7)
        let b = FolderWatcher.Settled(
            relativePath: "b.png", identity: SourceIdentity(device: 1, inode: 11), size: 5, modifiedNanoseconds: 7)
        var state = JournalState()
        state.apply(
            .folderFiles(
                FolderLedgerRecord(
                    folder: "f",
                    files: [
                        FolderFile(
                            key: FolderFileKey(device: 1, inode: 10), path: "/f/a.png", size: 5, modifiedNanoseconds: 7,
                            state: .done, job: JobID(1))
                    ])))
        let ledger = state.folderLedgers["f"]
        #expect(intake.admit([a, b], folder: "f", ledger: ledger, job: { _ in nil }) == [b])
        #expect(intake.admit([b], folder: "f", ledger: ledger, job: { _ in nil }).isEmpty, "b is being added")
        intake.added([b], folder: "f")
        var changed = a
        changed.size = 6
        #expect(intake.admit([changed, b], folder: "f", ledger: ledger, job: { _ in nil }) == [changed, b])
    }

    /// A walk of `top` by `rule` that takes every file it finds, as quiet.
    static func scan(_ top: String, _ rule: FolderRule, watch: (String) -> Bool = { _ in true }) -> FolderScan {
        var scan = FolderScan(rule: rule)
        scan.walk(open(top, O_RDONLY | O_DIRECTORY), folder: "", watch: watch) { path, info in
            FolderWatcher.Settled(
                relativePath: path, identity: SourceIdentity(info), size: Int64(info.st_size), modifiedNanoseconds: 0)
        }
        return scan
    }

    @Test func theScanTakesTheRulesFilesAndWatchesItsFolders() throws {
        let root = try TemporaryDirectory()
        let top = root.path + "/watched"
        for path in ["a.png", "b.txt", ".hidden.png", "x.png.tmp", "sub/c.png", ".git/d.png", "open/e.png"] {
            let url = URL(fileURLWithPath: top + "/" + path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: url)
        }
        chmod(top + "/open", 0o777)
        #expect(symlink(top + "/a.png", top + "/link.png") == 0)
        var rule = FolderRule(name: "w", path: top, destination: "file:///out/")
        rule.include = ["*.png"]
        var watched: [String] = []
        let scan = Self.scan(top, rule) { folder in
            watched.append(folder)
            return true
        }
        #expect(scan.settled.map(\.relativePath) == ["a.png", "sub/c.png"])
        #expect(watched == ["", "sub"])
        #expect(scan.problems.count == 1 && scan.problems[0].hasPrefix("open: a folder others may write to"))
        rule.followSymlinks = true
        rule.trustOthers = true
        let trusting = Self.scan(top, rule)
        #expect(trusting.settled.map(\.relativePath) == ["a.png", "link.png", "open/e.png", "sub/c.png"])
        #expect(trusting.settled[0].identity == trusting.settled[1].identity, "a followed link is its file")
    }

    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can give a symlink to another user, the attacker here"
        ))
    func anotherUsersSymlinkIsNeverFollowed() throws {
        let root = try TemporaryDirectory()
        let top = root.path + "/watched"
        mkdir(top, 0o755)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: root.path + "/id_ed25519"))
        #expect(symlink(root.path + "/id_ed25519", top + "/theirs.png") == 0)
        #expect(lchown(top + "/theirs.png", 65534, 65534) == 0)
        var rule = FolderRule(name: "w", path: top, destination: "file:///out/")
        rule.followSymlinks = true
        rule.trustOthers = true
        let scan = Self.scan(top, rule)
        #expect(scan.settled.isEmpty, "trust_others trusts others' files, never their symlinks")
        #expect(scan.problems.count == 1 && scan.problems[0].contains("a symlink of another user (uid 65534)"))
    }

    @Test func aFolderOthersMayWriteToIsRefused() throws {
        let root = try TemporaryDirectory()
        chmod(root.path, 0o700)
        let shared = root.path + "/shared"
        mkdir(shared, 0o755)
        chmod(shared, 0o1777)
        let rule = FolderRule(name: "s", path: shared, destination: "file:///out/")
        #expect(FolderTrust.refusal(of: rule)?.contains("other users may write to it (mode 1777)") == true)
        var trusting = rule
        trusting.trustOthers = true
        #expect(FolderTrust.refusal(of: trusting) == nil)
        chmod(shared, 0o755)
        #expect(FolderTrust.refusal(of: rule) == nil)
    }

    @Test func inotifySaysWhatHappenedInAFolder() throws {
        let root = try TemporaryDirectory()
        let inotify = try Inotify()
        let watch = try inotify.addWatch(root.path, mask: UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO))
        try Data("x".utf8).write(to: URL(fileURLWithPath: root.path + "/.a.tmp"))
        #expect(rename(root.path + "/.a.tmp", root.path + "/a b.png") == 0)
        // IN_CLOSE_WRITE comes with the file's last reference: a fork in another thread of this
        // process (tests spawn helpers) holds the file until its exec, and the event then comes
        // after the rename, under the new name. So: read until both came, whatever their order.
        var events: [Inotify.Event] = []
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while !(events.contains { $0.has(IN_CLOSE_WRITE) } && events.contains { $0.has(IN_MOVED_TO) }),
            MonotonicClock.nanoseconds() < deadline
        {
            var descriptor = pollfd(fd: inotify.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            events += inotify.readEvents()
        }
        #expect(events.allSatisfy { $0.watch == watch })
        #expect(events.contains { $0.has(IN_MOVED_TO) && $0.name == "a b.png" })
        #expect(events.contains { $0.has(IN_CLOSE_WRITE) && [".a.tmp", "a b.png"].contains($0.name) })
        #expect(throws: Inotify.Failure.self) { try inotify.addWatch(root.path + "/missing", mask: UInt32(IN_CREATE)) }
    }
}
