import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// A laptop that loses its network: nginx and uploadd run in a network namespace of their own
/// (`unshare --net`), and the test takes its only link down for longer than the old attempt budget,
/// then brings it back. Nothing fails, nothing is spent while offline, and the jobs start within
/// about a second of the link coming up (rtnetlink, not a timer).
@Suite(.serialized, .enabled(if: geteuid() == 0, "needs root to make a network namespace (unshare --net)"))
final class OfflineTests {
    let scratch: URL
    let holder: ChildProcess
    let namespace: String

    init() throws {
        scratch = try TestPaths.scratch("offline")
        holder = ChildProcess()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        holder.arguments = ["--net", "--", "/bin/sleep", "3600"]
        try holder.run()
        namespace = "/proc/\(holder.processIdentifier)/ns/net"
        // unshare execs sleep once the namespace exists: wait for it to be another one than ours.
        let ours = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")) ?? ""
        _ = eventually(timeout: 10) {
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: self.namespace)) ?? ours) != ours
        }
        try inside(["/usr/sbin/ip", "link", "set", "lo", "up"])
    }

    deinit {
        _ = try? Command.run(
            "/usr/bin/python3",
            ["contrib/test/servers.py", "stop", "--dir", scratch.appendingPathComponent("servers").path])
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
    }

    /// Runs a command in the test's network namespace.
    @discardableResult
    func inside(_ arguments: [String]) throws -> CommandResult {
        let result = try Command.run("/usr/bin/nsenter", ["--net=\(namespace)", "--"] + arguments, timeout: 120)
        guard result.status == 0 else { throw TestFailure("in the namespace, \(arguments) failed: \(result)") }
        return result
    }

    func link(_ state: String) throws { try inside(["/usr/sbin/ip", "link", "set", "lo", state]) }

    @Test func jobsWaitForTheNetworkAndStartWhenItComesBack() throws {
        // nginx in the namespace (the test servers' own configuration).
        let serversDirectory = scratch.appendingPathComponent("servers").path
        let repository = TestPaths.repository.path
        let started = try inside(
            [
                "/usr/bin/python3", "\(repository)/contrib/test/servers.py", "start", "--dir", serversDirectory,
                "--only", "nginx",
            ])
        var values: [String: String] = [:]
        for line in started.stdout.split(separator: "\n") {
            if let equals = line.firstIndex(of: "=") {
                values[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        let nginx = try #require(values["UPLOADD_TEST_NGINX_URL"])
        let root = try #require(values["UPLOADD_TEST_NGINX_ROOT"])

        // The old budget (two failed attempts, 200 ms apart) would fail every job in about a second.
        let config = """
            [daemon]
            transfers = 4
            retry_attempts = 2
            retry_for = 0
            retry_base_delay = 200
            retry_max_delay = 1
            stall_timeout = 3
            connect_timeout = 3
            rate_limit = 512K
            """
        let daemon = try DaemonProcess(name: "offline", config: config)
        daemon.launcher = ["/usr/bin/nsenter", "--net=\(namespace)", "--"]
        try daemon.start()
        defer { daemon.stop() }

        let files = scratch.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let big = files.appendingPathComponent("big.bin").path
        try makeRandomFile(at: big, size: 3 << 20)
        let bigID = try daemon.add([big], to: "\(nginx)/dav/offline/")[0]
        #expect(
            eventually(timeout: 20) { ((try? daemon.job(bigID))?.bytesSent ?? 0) > 256 << 10 },
            "the big upload is under way")

        try link("down")
        let down = Date()
        var small: [String] = []
        for index in 1...3 {
            let path = files.appendingPathComponent("small-\(index).bin").path
            try makeRandomFile(at: path, size: 40_000)
            small.append(path)
        }
        let smallIDs = try daemon.add(small, to: "\(nginx)/dav/offline/")
        let allIDs = [bigID] + smallIDs
        let allWaiting = try eventually(timeout: 20) {
            try allIDs.allSatisfy { try daemon.job($0).waiting == "network" }
        }
        #expect(allWaiting, "\(allIDs.map { try? daemon.job($0) })")
        let status = try daemon.ctl(["list"]).stdout
        #expect(status.contains("queued (waiting for the network)"), "\(status)")
        let held = try daemon.ctl(["status"]).stdout
        #expect(held.contains("held back: \(allIDs.count) waiting for the network\n"), "\(held)")
        let waitingAt = Date()

        // Offline for longer than the old budget: nothing fails, nothing is spent.
        Thread.sleep(until: max(down.addingTimeInterval(8), waitingAt.addingTimeInterval(4)))
        for id in allIDs {
            let job = try daemon.job(id)
            #expect(job.state == .queued, "job \(id) is \(job.state)")
            #expect(job.waiting == "network")
        }
        for id in smallIDs { #expect(try daemon.job(id).attempts == 0, "job \(id) spent an attempt offline") }

        try link("up")
        let up = Date()
        let done = try eventually(timeout: 60) { try allIDs.allSatisfy { try daemon.job($0).state == .completed } }
        #expect(done, "\(allIDs.map { try? daemon.job($0) })")
        let starts = try allIDs.flatMap { id in
            try daemon.ctlJSON(JobInfo.self, ["show", "\(id)"]).history ?? []
        }.filter { $0.message.hasPrefix("attempt") && $0.message.contains("started") && $0.at >= up }.map(\.at)
        let firstRetry = try #require(starts.min())
        #expect(
            firstRetry.timeIntervalSince(up) < 1.5,
            "the first retry came \(firstRetry.timeIntervalSince(up)) s after the link")
        for id in smallIDs { #expect(try daemon.job(id).attempts == 1) }
        for path in [big] + small {
            let stored = "\(root)/dav/offline/\((path as NSString).lastPathComponent)"
            #expect(try Command.sha256(stored) == Command.sha256(path))
        }
        print(
            """
            offline timeline: link down at 0.0 s; all \(allIDs.count) jobs waiting for the network at \
            \(String(format: "%.1f", waitingAt.timeIntervalSince(down))) s; link up at \
            \(String(format: "%.1f", up.timeIntervalSince(down))) s; first retry at \
            \(String(format: "%.2f", firstRetry.timeIntervalSince(down))) s; all done at \
            \(String(format: "%.1f", Date().timeIntervalSince(down))) s
            """)
    }
}
