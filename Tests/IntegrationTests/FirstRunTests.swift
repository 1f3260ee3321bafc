import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// The first run without a login session (containers, `su`, cron, SSH without pam_systemd): with
/// no XDG_RUNTIME_DIR the daemon and uploadctl meet in /tmp/uploadd-UID, which both refuse when
/// someone else could have prepared it.
@Suite(.serialized)
final class FirstRunTests {
    let fallback = SocketLocation.fallbackDirectory()
    let daemon: DaemonProcess

    init() throws {
        daemon = try DaemonProcess(name: "first-run")
        try Self.removeFallback()
    }

    deinit { try? Self.removeFallback() }

    static func removeFallback() throws {
        let path = SocketLocation.fallbackDirectory()
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFLNK {
            unlink(path)
        } else {
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// The environment of a shell with no session: no runtime directory, no socket variable.
    var sessionless: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in ["XDG_RUNTIME_DIR", "UPLOADD_SOCKET", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"]
        {
            environment[key] = nil
        }
        return environment
    }

    var uploadd: String { TestPaths.binaries.appendingPathComponent("uploadd").path }
    var uploadctl: String { TestPaths.binaries.appendingPathComponent("uploadctl").path }
    var daemonArguments: [String] {
        ["--state-dir", daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--config", daemon.configPath]
    }

    func ctl(_ arguments: [String]) throws -> CommandResult {
        try Command.run(uploadctl, arguments, environment: sessionless, timeout: 60)
    }

    @Test func withoutARuntimeDirectoryBothMeetInTmp() throws {
        let log = daemon.root.appendingPathComponent("first-run.log").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: uploadd)
        process.arguments = daemonArguments
        process.environment = sessionless
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        #expect(eventually(timeout: 20) { (try? self.ctl(["status"]))?.status == 0 }, "uploadctl reaches it")
        let socket = fallback + "/control.sock"
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(said.contains("serving on \(socket)"), "the daemon says where it listens: \(said)")
        var info = stat()
        #expect(lstat(fallback, &info) == 0 && info.st_mode & 0o7777 == 0o700 && info.st_uid == getuid())
        let status = try ctl(["status"])
        #expect(status.stdout.contains("socket: \(socket)"), "\(status)")

        let file = daemon.root.appendingPathComponent("hello.txt").path
        try "hello\n".write(toFile: file, atomically: false, encoding: .utf8)
        let out = daemon.root.appendingPathComponent("uploads").path
        let added = try ctl(["add", file, "--to", "file://\(out)/", "--wait"])
        #expect(added.status == 0, "\(added)")
        #expect(try String(contentsOfFile: out + "/hello.txt", encoding: .utf8) == "hello\n")
    }

    @Test func withNoDaemonTheMessageNamesThePathTried() throws {
        let result = try ctl(["status"])
        #expect(result.status == 69)
        #expect(result.stderr.contains("cannot reach uploadd at \(fallback)/control.sock"), "\(result)")
    }

    enum Hostile: String, CaseIterable {
        case symlink, foreignOwner, openMode
    }

    /// Prepared by someone else: a symlink, another owner, or a mode that lets others in. The
    /// daemon refuses to start there and uploadctl refuses to connect, each saying why.
    @Test(arguments: Hostile.allCases.filter { $0 != .foreignOwner || geteuid() == 0 })
    func aFallbackFolderPreparedBySomeoneElseIsRefused(_ hostile: Hostile) throws {
        let elsewhere = daemon.root.appendingPathComponent("elsewhere").path
        switch hostile {
        case .symlink:
            mkdir(elsewhere, 0o700)
            #expect(symlink(elsewhere, fallback) == 0)
        case .foreignOwner:
            mkdir(fallback, 0o700)
            chown(fallback, 65534, 65534)
        case .openMode:
            mkdir(fallback, 0o700)
            chmod(fallback, 0o755)
        }
        let result = try Command.run(uploadd, daemonArguments, environment: sessionless, timeout: 15)
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("refusing to put the control socket in \(fallback)"), "\(result)")
        let expected = ["symlink": "is a symlink", "foreignOwner": "belongs to uid 65534", "openMode": "mode 755"]
        #expect(result.stderr.contains(expected[hostile.rawValue]!), "\(result)")
        let client = try ctl(["status"])
        #expect(client.status == 69, "\(client)")
        #expect(client.stderr.contains("refusing to talk to \(fallback)/control.sock"), "\(client)")
    }
}
