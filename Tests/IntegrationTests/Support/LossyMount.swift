import Foundation
import Glibc

/// contrib/test/lossyfs.py mounted for a test: a FUSE file system over a backing folder that
/// forgets, on `cut()`, what a power cut may forget (unsynced writes, unsynced directory entries;
/// in `random` mode a seeded subset of them, as real file systems do).
final class LossyMount: @unchecked Sendable {
    // Invariant: used from one test at a time (the suite is serialized).
    let backing: URL
    let mountpoint: URL
    let control: String
    let log: String
    private var process: ChildProcess?

    static var script: String { TestPaths.repository.appendingPathComponent("contrib/test/lossyfs.py").path }

    /// Whether this machine can run it: root, /dev/fuse, and Debian's python3-pyfuse3.
    static var isAvailable: Bool {
        guard geteuid() == 0, access("/dev/fuse", R_OK | W_OK) == 0 else { return false }
        return (try? Command.run("/usr/bin/python3", ["-c", "import pyfuse3"], timeout: 30))?.status == 0
    }

    init(root: URL) throws {
        backing = root.appendingPathComponent("backing")
        mountpoint = root.appendingPathComponent("mnt")
        control = root.appendingPathComponent("lossyfs.sock").path
        log = root.appendingPathComponent("lossyfs.log").path
        try FileManager.default.createDirectory(at: backing, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
    }

    deinit {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        _ = try? Command.run("/usr/bin/python3", [Self.script, "unmount", mountpoint.path], timeout: 30)
    }

    /// Mounts and waits until it is ready (its control socket exists).
    func mount(seed: UInt64, mode: String = "random") throws {
        unlink(control)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            Self.script, "mount", backing.path, mountpoint.path, "--control", control, "--seed", "\(seed)", "--mode",
            mode,
            "--log", log,
        ]
        let output =
            FileHandle(forWritingAtPath: log)
            ?? {
                _ = FileManager.default.createFile(atPath: log, contents: nil)
                return FileHandle(forWritingAtPath: log)!
            }()
        output.seekToEndOfFile()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        self.process = process
        guard eventually(timeout: 20, { FileManager.default.fileExists(atPath: self.control) || !process.isRunning }),
            process.isRunning
        else {
            throw TestFailure(
                "lossyfs did not mount: \(String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: log))) ?? Data(), as: UTF8.self).suffix(2000))"
            )
        }
    }

    /// The power cut: pending state dropped (the mount's mode and seed), survivors written to the
    /// backing folder, unmounted. Returns what lossyfs says it dropped.
    @discardableResult
    func cut() throws -> String {
        let result = try Command.run("/usr/bin/python3", [Self.script, "cut", "--control", control], timeout: 120)
        guard result.status == 0 else { throw TestFailure("lossyfs cut failed: \(result)") }
        process?.waitUntilExit()
        process = nil
        return result.stdout
    }

    /// A clean unmount: everything synced.
    func unmount() {
        _ = try? Command.run("/usr/bin/python3", [Self.script, "unmount", "--control", control], timeout: 60)
        process?.waitUntilExit()
        process = nil
    }
}
