import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Files others can write are never trusted (issue 47, item 2): with the config at mode 666,
/// another user wrote `on_complete = sh -c "id > /tmp/pwned"` and the victim's daemon ran it.
/// The config, the folders above it, hook programs, secret files and the folders above the state,
/// cache and socket folders are checked as ssh's StrictModes checks ~/.ssh. Each test here failed
/// before those checks.
@Suite(.serialized)
final class StrictModesTests {
    let files: URL

    static let otherUser: uid_t = 65534

    init() throws {
        files = try TestPaths.scratch("strict-files")
    }

    /// uploadd run to its end (it is expected to refuse to start) with these options.
    func runUploadd(_ arguments: [String]) throws -> CommandResult {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        return try Command.run(
            TestPaths.binaries.appendingPathComponent("uploadd").path, arguments, environment: environment, timeout: 15)
    }

    func options(_ daemon: DaemonProcess, config: String? = nil, cache: String? = nil) -> [String] {
        [
            "--state-dir", daemon.stateDirectory, "--cache-dir", cache ?? daemon.cacheDirectory, "--socket",
            daemon.socket, "--config", config ?? daemon.configPath,
        ]
    }

    func checkConfig(_ path: String) throws -> CommandResult {
        try runUploadd(["--check-config", "--config", path])
    }

    /// A file to upload, and a folder to upload it to with file://.
    func upload(_ daemon: DaemonProcess, _ name: String) throws -> JobID {
        let source = files.appendingPathComponent(name).path
        try "the report\n".write(toFile: source, atomically: false, encoding: .utf8)
        let target = files.appendingPathComponent("uploaded").path
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        return try daemon.add([source], to: "file://\(target)/")[0]
    }

    // MARK: The config file

    @Test func aConfigOthersCanWriteIsRefusedAtStartAndByCheckConfig() throws {
        let daemon = try DaemonProcess(name: "strict-config", config: "[daemon]\ntransfers = 2\n")
        chmod(daemon.configPath, 0o666)
        let started = try runUploadd(options(daemon))
        #expect(started.status == 1, "\(started)")
        let expected =
            "refusing the config file \(daemon.configPath): its group and others can write to it (mode 666); chmod go-w \(daemon.configPath)"
        #expect(started.stderr.contains(expected), "\(started)")

        let checked = try checkConfig(daemon.configPath)
        #expect(checked.status == 1, "\(checked)")
        #expect(checked.stderr.contains(expected), "\(checked)")
        #expect(!checked.stdout.contains("OK"), "\(checked)")

        // Group-writable alone is refused too, as ssh does (user private groups included).
        chmod(daemon.configPath, 0o620)
        let group = try checkConfig(daemon.configPath)
        #expect(group.status == 1 && group.stderr.contains("chmod g-w \(daemon.configPath)"), "\(group)")

        chmod(daemon.configPath, 0o644)
        try daemon.start()
        daemon.stop()
    }

    @Test func aConfigInAFolderOthersCanWriteIsRefused() throws {
        let daemon = try DaemonProcess(name: "strict-config-folder")
        let open = files.appendingPathComponent("open").path
        mkdir(open, 0o755)
        chmod(open, 0o777)
        let config = open + "/uploadd.conf"
        try "[daemon]\ntransfers = 2\n".write(toFile: config, atomically: false, encoding: .utf8)
        chmod(config, 0o644)
        let expected =
            "refusing the config file \(config): its group and others can write to \(open), a folder above it (mode 777)"
        let started = try runUploadd(options(daemon, config: config))
        #expect(started.status == 1, "\(started)")
        #expect(started.stderr.contains(expected) && started.stderr.contains("chmod go-w \(open)"), "\(started)")
        let checked = try checkConfig(config)
        #expect(checked.status == 1 && checked.stderr.contains(expected), "\(checked)")

        // A symlink to it from a safe place changes nothing: the file's real folders are checked.
        let link = files.appendingPathComponent("link.conf").path
        #expect(symlink(config, link) == 0)
        let viaLink = try checkConfig(link)
        #expect(viaLink.status == 1 && viaLink.stderr.contains("chmod go-w \(open)"), "\(viaLink)")

        // With the sticky bit (as /tmp has), only the file's owner can replace it: accepted.
        chmod(open, 0o1777)
        let sticky = try checkConfig(config)
        #expect(sticky.status == 0, "\(sticky)")
    }

    /// The attack, through a reload: refused, the reload says why, status shows it, and the
    /// hook of the config in use stays.
    @Test func aReloadOfAConfigOthersCanWriteIsRefusedAndTheOldHooksStay() throws {
        let record = files.appendingPathComponent("hook-record").path
        try FileManager.default.createDirectory(atPath: record, withIntermediateDirectories: true)
        let pwned = files.appendingPathComponent("pwned").path
        let daemon = try DaemonProcess(
            name: "strict-reload",
            config: "[daemon]\non_complete = sh -c 'echo ran > \"$0/$UPLOAD_ID.ok\"' \(record)\n")
        try daemon.start()
        defer { daemon.stop() }

        try "[daemon]\non_complete = sh -c \"id > \(pwned)\"\n".write(
            toFile: daemon.configPath, atomically: false, encoding: .utf8)
        chmod(daemon.configPath, 0o666)
        let reload = try daemon.ctl(["reload"])
        #expect(reload.status == 1, "\(reload)")
        #expect(reload.stderr.contains("chmod go-w \(daemon.configPath)"), "\(reload)")
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(
            status.configErrors?.contains { $0.contains("refusing the config file") } == true,
            "\(String(describing: status.configErrors))")

        let id = try upload(daemon, "after-reload.txt")
        #expect(try daemon.waitFor(id).state == .completed)
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: "\(record)/\(id).ok") })
        #expect(!FileManager.default.fileExists(atPath: pwned), "the refused config's hook ran")
    }

    // MARK: Hook programs

    @Test func aHookProgramOthersCanWriteIsRefusedAtLoadAndBeforeItRuns() throws {
        let record = files.appendingPathComponent("hook-ran").path
        let hook = files.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\necho ran > \(record)\n".write(toFile: hook, atomically: false, encoding: .utf8)
        chmod(hook, 0o777)
        let daemon = try DaemonProcess(name: "strict-hook", config: "[daemon]\non_complete = \(hook)\n")
        let started = try runUploadd(options(daemon))
        #expect(started.status == 1, "\(started)")
        #expect(
            started.stderr.contains(
                "refusing the [daemon] on_complete program \(hook): its group and others can write to it (mode 777); chmod go-w \(hook)"
            ), "\(started)")

        // Safe at load, made writable later: refused again right before it would run.
        chmod(hook, 0o755)
        try daemon.start()
        defer { daemon.stop() }
        chmod(hook, 0o777)
        let id = try upload(daemon, "hooked.txt")
        #expect(try daemon.waitFor(id).state == .completed)
        #expect(
            eventually(timeout: 20) {
                (try? daemon.job(id))?.history?.contains {
                    $0.message.contains("on_complete hook") && $0.message.contains("chmod go-w \(hook)")
                } == true
            }, "\(String(describing: try? daemon.job(id).history))")
        #expect(!FileManager.default.fileExists(atPath: record), "the hook ran")
    }

    // MARK: Secret files

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aPasswordFileOfAnotherUserIsRefused() throws {
        let password = files.appendingPathComponent("password").path
        try "hunter2\n".write(toFile: password, atomically: false, encoding: .utf8)
        chmod(password, 0o600)
        chown(password, Self.otherUser, Self.otherUser)
        let target = files.appendingPathComponent("uploaded").path
        let daemon = try DaemonProcess(
            name: "strict-password",
            config: "[remote r]\nurl = file://\(target)/\nuser = me\npassword_file = \(password)\n")
        let expected =
            "refusing the [remote r] password_file \(password): it belongs to uid \(Self.otherUser) (nobody), not to you (uid \(getuid())) or root"
        let started = try runUploadd(options(daemon))
        #expect(started.status == 1 && started.stderr.contains(expected), "\(started)")
        let checked = try checkConfig(daemon.configPath)
        #expect(checked.status == 1 && checked.stderr.contains(expected), "\(checked)")

        // Ours at load, another user's when a job reads it: the job fails, saying why.
        chown(password, getuid(), getgid())
        try daemon.start()
        defer { daemon.stop() }
        chown(password, Self.otherUser, Self.otherUser)
        let source = files.appendingPathComponent("with-password.txt").path
        try "the report\n".write(toFile: source, atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let id = try daemon.add([source], to: "r:")[0]
        let job = try daemon.waitFor(id)
        #expect(job.state == .failed, "\(job)")
        #expect(job.error?.message.contains(expected) == true, "\(String(describing: job.error))")
    }

    @Test func keyAndCAFilesOthersCanWriteAreRefusedAtLoadAndWhenAJobUsesThem() throws {
        let key = files.appendingPathComponent("s3-key").path
        let ca = files.appendingPathComponent("ca.pem").path
        try "secret\n".write(toFile: key, atomically: false, encoding: .utf8)
        try "-----BEGIN CERTIFICATE-----\n".write(toFile: ca, atomically: false, encoding: .utf8)
        chmod(key, 0o602)
        chmod(ca, 0o664)
        let target = files.appendingPathComponent("uploaded").path
        let daemon = try DaemonProcess(
            name: "strict-key-ca",
            config: """
                [remote s3]
                url = s3://bucket/
                access_key_id = AKIA
                secret_access_key_file = \(key)
                [remote local]
                url = file://\(target)/
                ca_file = \(ca)
                """)
        let checked = try checkConfig(daemon.configPath)
        #expect(checked.status == 1, "\(checked)")
        #expect(
            checked.stderr.contains(
                "refusing the [remote s3] secret_access_key_file \(key): others can write to it (mode 602); chmod o-w \(key)"
            ), "\(checked)")
        #expect(
            checked.stderr.contains(
                "refusing the [remote local] ca_file \(ca): its group can write to it (mode 664); chmod g-w \(ca)"),
            "\(checked)")

        // Safe at load, opened to the group later: the job that would use it fails, saying why.
        chmod(key, 0o600)
        chmod(ca, 0o644)
        try daemon.start()
        defer { daemon.stop() }
        chmod(ca, 0o664)
        let source = files.appendingPathComponent("with-ca.txt").path
        try "the report\n".write(toFile: source, atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let job = try daemon.waitFor(try daemon.add([source], to: "local:")[0])
        #expect(job.state == .failed, "\(job)")
        #expect(job.error?.message.contains("chmod g-w \(ca)") == true, "\(String(describing: job.error))")
    }

    // MARK: The folders above the state, cache and socket folders

    @Test func aCacheFolderInAFolderOthersCanWriteIsRefused() throws {
        let daemon = try DaemonProcess(name: "strict-cache")
        let open = files.appendingPathComponent("open-cache").path
        mkdir(open, 0o755)
        chmod(open, 0o777)
        let started = try runUploadd(options(daemon, cache: open + "/cache"))
        #expect(started.status == 1, "\(started)")
        #expect(
            started.stderr.contains(
                "refusing the cache directory \(open)/cache: its group and others can write to \(open), a folder above it (mode 777)"
            ) && started.stderr.contains("chmod go-w \(open)"), "\(started)")

        // A sticky folder (/tmp's mode) is fine: nobody else can rename what the user made there.
        chmod(open, 0o1777)
        let sticky = try DaemonProcess(name: "strict-cache-sticky")
        sticky.dataRoot = URL(fileURLWithPath: open)
        try sticky.start()
        sticky.stop()
    }

    @Test func aSocketFolderInAFolderOthersCanWriteIsRefused() throws {
        let daemon = try DaemonProcess(name: "strict-socket")
        let open = files.appendingPathComponent("open-run").path
        mkdir(open, 0o755)
        chmod(open, 0o777)
        var arguments = options(daemon)
        arguments[arguments.firstIndex(of: "--socket")! + 1] = open + "/run/control.sock"
        let started = try runUploadd(arguments)
        #expect(started.status == 1, "\(started)")
        #expect(
            started.stderr.contains(
                "refusing the control socket's folder \(open)/run: its group and others can write to \(open), a folder above it (mode 777)"
            ) && started.stderr.contains("chmod go-w \(open), or choose another --socket"), "\(started)")
    }

    @Test func aStateFolderInAFolderOthersCanWriteIsRefused() throws {
        let daemon = try DaemonProcess(name: "strict-state")
        chmod(daemon.root.path, 0o775)
        let started = try runUploadd(options(daemon))
        #expect(started.status == 1, "\(started)")
        #expect(
            started.stderr.contains(
                "refusing the state directory \(daemon.stateDirectory): its group can write to \(daemon.root.path), a folder above it (mode 775)"
            ) && started.stderr.contains("chmod g-w \(daemon.root.path)"), "\(started)")
    }
}
