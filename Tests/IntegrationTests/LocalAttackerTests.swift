import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Another local user against the daemon's user (the security review's findings 1, 4 and 6): the
/// attacker is `nobody` (acting through setpriv), the victim is the user running the tests.
/// Every test here failed on uploadd 0.2.
@Suite(.serialized, .enabled(if: geteuid() == 0, "needs root to act as another user (setpriv --reuid=nobody)"))
final class LocalAttackerTests {
    /// Under /tmp so that `nobody` can reach it (the repository's folders may be private).
    let root: String
    let victim: String
    let shared: String
    let secret: String
    let files: URL

    static let attacker: uid_t = 65534

    init() throws {
        root = "/tmp/uploadd-attack-\(UUID().uuidString.prefix(8))"
        victim = root + "/victim"
        shared = root + "/shared"
        secret = victim + "/secret"
        files = try TestPaths.scratch("attack-files")
        try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
        chmod(root, 0o755)
        chmod(victim, 0o700)
        try "precious\n".write(toFile: secret, atomically: false, encoding: .utf8)
        chmod(secret, 0o600)
        // A folder shared with the attacker's group, setgid, as people share folders: mode 2775.
        mkdir(shared, 0o775)
        chown(shared, 0, Self.attacker)
        chmod(shared, 0o2775)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Runs a command as the attacker.
    @discardableResult
    func asAttacker(_ arguments: [String]) throws -> CommandResult {
        let result = try Command.run(
            "/usr/bin/setpriv",
            ["--reuid=\(Self.attacker)", "--regid=\(Self.attacker)", "--clear-groups", "--"] + arguments)
        guard result.status == 0 else { throw TestFailure("as the attacker, \(arguments) failed: \(result)") }
        return result
    }

    func source(_ name: String, _ text: String = "the report\n") throws -> String {
        let path = files.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    static func owner(_ path: String) -> uid_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_uid : nil
    }

    static func isSymlink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    // MARK: Finding 1: file:// writes

    /// The attacker plants symlinks and writable files under every name the old daemon used for its
    /// temp file (`.uploadd-ID.part`): nothing of the victim's is written through them.
    @Test func plantedTempNamesAreNeverWrittenThrough() throws {
        for id in 1...10 { try asAttacker(["/bin/ln", "-s", secret, "\(shared)/.uploadd-\(id).part"]) }
        for id in 11...20 {
            try asAttacker(["/bin/sh", "-c", "umask 0; : > \(shared)/.uploadd-\(id).part"])
        }
        let daemon = try DaemonProcess(name: "attack-temp")
        try daemon.start()
        defer { daemon.stop() }
        let report = try source("report.txt")
        let ids = try daemon.add([report], to: "file://\(shared)/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(
            try String(contentsOfFile: secret, encoding: .utf8) == "precious\n",
            "the victim's file was written through a symlink")
        #expect(try String(contentsOfFile: "\(shared)/report.txt", encoding: .utf8) == "the report\n")
        #expect(Self.owner("\(shared)/report.txt") == getuid(), "the upload is the victim's own file")
        for id in 11...20 {
            #expect(
                FileManager.default.contents(atPath: "\(shared)/.uploadd-\(id).part")?.isEmpty == true,
                "planted file \(id) was used")
        }
        let temps = try FileManager.default.contentsOfDirectory(atPath: shared).filter {
            $0.hasPrefix(".uploadd-") && !$0.hasPrefix(".uploadd-1") && !$0.hasPrefix(".uploadd-2")
                && !(1...20).map({ ".uploadd-\($0).part" }).contains($0)
        }
        #expect(temps.isEmpty, "temp files left behind: \(temps)")
    }

    /// `shared/drop -> ~victim/private`: the attacker's folder symlink is refused, not followed.
    @Test func anotherUsersFolderSymlinkIsRefused() throws {
        try asAttacker(["/bin/ln", "-s", victim, "\(shared)/drop"])
        let daemon = try DaemonProcess(name: "attack-folder")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try source("notes.txt")], to: "file://\(shared)/drop/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        #expect(
            job.error?.message.contains("symlink owned by another user (uid \(Self.attacker))") == true,
            "\(String(describing: job.error))")
        #expect(
            !FileManager.default.fileExists(atPath: "\(victim)/notes.txt"), "the upload landed in the victim's folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim) == ["secret"])
    }

    /// A symlink planted at the final name is replaced by the upload, never written through.
    @Test func aSymlinkAtTheFinalNameIsReplacedNotFollowed() throws {
        try asAttacker(["/bin/ln", "-s", secret, "\(shared)/summary.txt"])
        let daemon = try DaemonProcess(name: "attack-final")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try source("summary.txt", "summary\n")], to: "file://\(shared)/")
        #expect(try daemon.waitFor(ids[0]).state == .completed)
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "precious\n")
        #expect(!Self.isSymlink("\(shared)/summary.txt"))
        #expect(try String(contentsOfFile: "\(shared)/summary.txt", encoding: .utf8) == "summary\n")
    }

    /// The user's own symlinks (`~/uploads -> /mnt/nas`) still work.
    @Test func theUsersOwnFolderSymlinkIsFollowed() throws {
        let target = root + "/nas"
        mkdir(target, 0o755)
        #expect(symlink(target, "\(shared)/mine") == 0)
        let daemon = try DaemonProcess(name: "attack-own")
        try daemon.start()
        defer { daemon.stop() }
        let ids = try daemon.add([try source("mine.txt")], to: "file://\(shared)/mine/sub/")
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(FileManager.default.fileExists(atPath: "\(target)/sub/mine.txt"))
    }

    // MARK: Finding 4: state and cache folders

    private func startFails(_ daemon: DaemonProcess, saying words: String) throws {
        let result = try CrashSupport.runUploadd(daemon)
        #expect(result.status != 0, "uploadd started: \(result)")
        #expect(result.stderr.contains(words), "\(result)")
    }

    @Test func aStateFolderOthersCanWriteToIsRefused() throws {
        let daemon = try DaemonProcess(name: "attack-state-mode")
        mkdir(daemon.stateDirectory, 0o700)
        chmod(daemon.stateDirectory, 0o777)
        try startFails(
            daemon,
            saying: "refusing \(daemon.stateDirectory) as the state directory: others can write to it (mode 777)")
    }

    @Test func aStateFolderThatIsASymlinkIsRefused() throws {
        let daemon = try DaemonProcess(name: "attack-state-link")
        let elsewhere = daemon.root.appendingPathComponent("elsewhere").path
        mkdir(elsewhere, 0o700)
        #expect(symlink(elsewhere, daemon.stateDirectory) == 0)
        try startFails(daemon, saying: "is a symlink")
    }

    @Test func aStateFolderOfAnotherUserIsRefused() throws {
        let daemon = try DaemonProcess(name: "attack-state-owner")
        mkdir(daemon.stateDirectory, 0o700)
        chown(daemon.stateDirectory, Self.attacker, Self.attacker)
        try startFails(daemon, saying: "belongs to uid \(Self.attacker)")
    }

    /// `lock -> victim's file`: the lock is never opened through a symlink, so nothing is truncated.
    @Test func aLockSymlinkTruncatesNothing() throws {
        let daemon = try DaemonProcess(name: "attack-lock")
        mkdir(daemon.stateDirectory, 0o700)
        #expect(symlink(secret, daemon.stateDirectory + "/lock") == 0)
        try startFails(daemon, saying: "lock")
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "precious\n")
    }

    /// `snapshots -> ~/Documents`: refused before the orphan sweep could delete anything there.
    @Test func aSnapshotFolderSymlinkIsRefusedAndNothingIsSwept() throws {
        let daemon = try DaemonProcess(name: "attack-snapshots")
        mkdir(daemon.cacheDirectory, 0o700)
        #expect(symlink(victim, daemon.cacheDirectory + "/snapshots") == 0)
        try startFails(daemon, saying: "snapshot folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim) == ["secret"])
    }

    /// The sweep of orphaned copies removes only what the cache makes: numbered files of ours.
    @Test func theOrphanSweepLeavesWhatIsNotItsOwn() throws {
        let daemon = try DaemonProcess(name: "attack-sweep")
        let snapshots = daemon.cacheDirectory + "/snapshots"
        try FileManager.default.createDirectory(atPath: snapshots, withIntermediateDirectories: true)
        chmod(daemon.cacheDirectory, 0o700)
        chmod(snapshots, 0o700)
        try "orphan".write(toFile: snapshots + "/41", atomically: false, encoding: .utf8)
        try "not a snapshot".write(toFile: snapshots + "/notes.txt", atomically: false, encoding: .utf8)
        #expect(symlink(secret, snapshots + "/42") == 0)
        try "theirs".write(toFile: snapshots + "/43", atomically: false, encoding: .utf8)
        chown(snapshots + "/43", Self.attacker, Self.attacker)
        try daemon.start()
        defer { daemon.stop() }
        #expect(!FileManager.default.fileExists(atPath: snapshots + "/41"), "a real orphan is swept")
        #expect(FileManager.default.fileExists(atPath: snapshots + "/notes.txt"))
        #expect(Self.isSymlink(snapshots + "/42"))
        #expect(FileManager.default.fileExists(atPath: snapshots + "/43"))
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "precious\n")
    }

    // MARK: Finding 6 and the fallback socket folder

    /// uploadctl talks only to a daemon of its own user (or root): an attacker's socket at the path
    /// it was given gets nothing, passwords included.
    @Test func uploadctlRefusesASocketServedByAnotherUser() throws {
        let evil = root + "/evil"
        mkdir(evil, 0o755)
        chown(evil, Self.attacker, Self.attacker)
        let socket = evil + "/control.sock"
        let received = evil + "/received"
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(1)
            print("ready", flush=True)
            c, _ = s.accept(); c.settimeout(5)
            data = b""
            try:
                while True:
                    chunk = c.recv(65536)
                    if not chunk: break
                    data += chunk
            except OSError:
                pass
            open(sys.argv[2], "wb").write(data)
            """
        let listener = ChildProcess()
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        listener.arguments = [
            "--reuid=\(Self.attacker)", "--regid=\(Self.attacker)", "--clear-groups", "--", "/usr/bin/python3", "-c",
            script,
            socket, received,
        ]
        try listener.run()
        defer { if listener.isRunning { kill(listener.processIdentifier, SIGKILL) } }
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: socket) })
        let report = try source("pw.txt")
        let result = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadctl").path,
            ["--socket", socket, "add", report, "--to", "https://example.invalid/", "--user", "me:hunter2"])
        #expect(result.status == 69, "\(result)")
        #expect(result.stderr.contains("served by uid \(Self.attacker)"), "\(result)")
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: received) })
        let got = (try? String(contentsOfFile: received, encoding: .utf8)) ?? "?"
        #expect(got.isEmpty, "the attacker received: \(got)")
    }

    /// `--socket /tmp/x.sock` must not make the daemon chmod /tmp (or any folder it did not make).
    @Test func aSocketInAFolderTheDaemonDidNotMakeIsRefusedNotChmodded() throws {
        let daemon = try DaemonProcess(name: "attack-socket-dir")
        let open = root + "/open"
        mkdir(open, 0o777)
        chmod(open, 0o1777)
        let result = try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadd").path,
            [
                "--state-dir", daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--socket",
                open + "/x.sock",
                "--config", daemon.configPath,
            ], timeout: 15)
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("refusing to put the control socket in \(open)"), "\(result)")
        var info = stat()
        #expect(stat(open, &info) == 0 && info.st_mode & 0o7777 == 0o1777, "the folder's mode was changed")
    }
}
