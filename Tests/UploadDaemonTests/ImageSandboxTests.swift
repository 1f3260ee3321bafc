import Foundation
import Glibc
import Testing

@testable import UploadDaemon

/// The image helper's sandbox, from inside: uploadd-image's probe mode enters the very sandbox a
/// real run has, started the way the daemon starts it (`ImageStep.helperProcess`: its limits, its
/// private TMPDIR), then tries what a hostile image's code could want: the user's files, /tmp,
/// uploadd's limits, priority, CPUs, I/O priority and memory, the network, programs, groups,
/// namespaces. Each try must fail with EPERM or EACCES.
@Suite(.serialized)
struct ImageSandboxTests {
    let directory: TemporaryDirectory
    let step: ImageStep

    init() throws {
        directory = try TemporaryDirectory("image-sandbox")
        step = ImageStep(helper: try Self.helper())
    }

    /// uploadd-image as built with these tests (`swift build` builds it), or in UPLOADD_BIN_DIR.
    static func helper() throws -> String {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        if let bin = ProcessInfo.processInfo.environment["UPLOADD_BIN_DIR"] {
            folder = URL(fileURLWithPath: bin + "/x")
        }
        while folder.path != "/" {
            folder.deleteLastPathComponent()
            let helper = folder.appendingPathComponent("uploadd-image").path
            if FileManager.default.isExecutableFile(atPath: helper) { return helper }
        }
        throw TestFailure("no uploadd-image next to the tests: build it first (swift build --build-tests)")
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// What a probe run said: "probe NAME: RESULT" lines by name, and the other "KEY: VALUE" lines.
    struct Probes {
        var results: [String: String] = [:]
        var facts: [String: String] = [:]
        var text: String
    }

    /// Runs the probes as the daemon runs the helper, `wrapper` (setpriv) in front of it, aimed at
    /// this process (which stands for uploadd) and at `secret`, a file of the user's.
    func probe(secret: String, wrapper: [String] = []) async throws -> Probes {
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devNull) }
        let memory = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)  // what process_vm_readv aims at
        memory.initialize(repeating: 42, count: 16)
        defer { memory.deallocate() }
        let planted = "/tmp/uploadd-probe-\(UUID().uuidString)"
        defer { unlink(planted) }
        var process = step.helperProcess(
            arguments: [
                "probe-read=\(secret)", "probe-read-folder=\((secret as NSString).deletingLastPathComponent)",
                "probe-write=\(planted)", "probe-pid=\(getpid())", "probe-address=\(UInt(bitPattern: memory))",
            ], temporaryRoot: directory.path + "/helper-tmp")
        if !wrapper.isEmpty {
            process.arguments = Array(wrapper.dropFirst()) + [process.executable] + process.arguments
            process.executable = wrapper[0]
        }
        let outcome = try await process.run(input: devNull, output: nil)
        var probes = Probes(text: outcome.stderr)
        for line in outcome.stderr.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if key.hasPrefix("probe ") {
                probes.results[String(key.dropFirst("probe ".count))] = value
            } else {
                probes.facts[key] = value
            }
        }
        print(
            "image helper's sandbox\(wrapper.isEmpty ? "" : " under \(wrapper.joined(separator: " "))"):\n\(outcome.stderr)"
        )
        return probes
    }

    /// What each probe tries, all of which must be refused.
    static let refused = [
        "read-file", "read-folder", "write-file", "kill", "prlimit", "setpriority", "sched_setaffinity", "ioprio_set",
        "process_vm_readv", "ptrace", "socket", "connect", "io_uring_setup", "setgroups", "unshare", "execve",
    ]

    /// Expects every probe refused; the file ones only where the kernel has Landlock (Linux 5.13
    /// and later: the helper says which ABI it applied, as the kernel gave it, which
    /// ImagePreparationTests checks against the kernel itself).
    func expectRefused(_ probes: Probes) {
        let landlock = probes.facts["sandbox"]?.hasPrefix("Landlock ABI") == true
        if !landlock { print("no Landlock in this kernel: the helper's file probes are not expected to be refused") }
        let files: Set = ["read-file", "read-folder", "write-file"]
        for name in Self.refused where landlock || !files.contains(name) {
            let result = probes.results[name]
            #expect(result == "EPERM" || result == "EACCES", "probe \(name): \(result ?? "not run")\n\(probes.text)")
        }
    }

    /// Whether this kernel gives the user new user and network namespaces (`wrapper` in front).
    static func kernelAllowsNamespaces(wrapper: [String] = []) -> Bool {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        let process = Process()
        let command = wrapper + ["/usr/bin/unshare", "--user", "--net", "/bin/true"]
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    func ownNamespaces() -> String {
        func inode(_ kind: String) -> String {
            var info = stat()
            return stat("/proc/self/ns/\(kind)", &info) == 0 ? "\(info.st_ino)" : "?"
        }
        return "user \(inode("user")) net \(inode("net"))"
    }

    /// As the daemon's own user: the user's private key, a folder of theirs, /tmp, uploadd's
    /// limits and the rest are refused; its private TMPDIR is writable; it has namespaces of its
    /// own where the kernel allows.
    @Test func aHelperRunIsRefusedEachWayOutOfItsSandbox() async throws {
        let secret = try directory.write("home/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
        chmod(secret, 0o600)
        let probes = try await probe(secret: secret)
        expectRefused(probes)
        #expect(probes.results["write-temporary"] == "ok", "its own TMPDIR is writable:\n\(probes.text)")
        if Self.kernelAllowsNamespaces() {
            #expect(probes.facts["namespaces"] != ownNamespaces(), "the kernel allows namespaces:\n\(probes.text)")
            #expect(probes.facts["sandbox"]?.contains("own user and network namespaces") == true)
        }
        if geteuid() == 0 {
            #expect(probes.facts["groups"] == "", "root's helper sheds its supplementary groups:\n\(probes.text)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/helper-tmp")
        #expect(leftovers.isEmpty, "its TMPDIR is removed after it: \(leftovers)")
    }

    /// uploadd run as root with a supplementary group: the helper drops it (CAP_SETGID), and cannot
    /// take it back.
    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can start uploadd with a supplementary group (setpriv --groups)"
        ))
    func asRootTheHelperShedsItsSupplementaryGroups() async throws {
        let secret = try directory.write("root-secret", "root's\n")
        chmod(secret, 0o600)
        let probes = try await probe(secret: secret, wrapper: ["/usr/bin/setpriv", "--groups=4242", "--"])
        #expect(probes.facts["groups"] == "", "\(probes.text)")
        #expect(probes.facts["sandbox"]?.contains("supplementary groups dropped") == true, "\(probes.text)")
        expectRefused(probes)
    }

    /// An unprivileged user with a supplementary group: the kernel does not let the helper shed
    /// the group (it shows as 65534 in its namespace and still counts), so a file that group may
    /// read is kept from it by Landlock. What it can be refused, it is.
    @Test(
        .enabled(
            if: geteuid() == 0,
            "runs as root (as make test in CI does): only root can run the helper as another user (setpriv)"))
    func anotherUsersHelperCannotReadWhatItsGroupCould() async throws {
        chmod(directory.path, 0o755)
        // Its temporary folder is uploadd's (root's, 0700): the helper, another user here, can name
        // it to Landlock through a parent it may search, not write in it (nor is that tried).
        mkdir(directory.path + "/helper-tmp", 0o755)
        let secret = try directory.write("group/secret", "the group's\n")
        chmod((secret as NSString).deletingLastPathComponent, 0o755)
        chown(secret, 0, 4242)
        chmod(secret, 0o640)
        let user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=4242", "--"]
        let probes = try await probe(secret: secret, wrapper: user)
        expectRefused(probes)
        if Self.kernelAllowsNamespaces(wrapper: user) {
            #expect(probes.facts["sandbox"]?.contains("own user and network namespaces") == true, "\(probes.text)")
            #expect(probes.facts["groups"] == "65534", "the group, unmapped in its namespace: \(probes.text)")
        }
    }
}
