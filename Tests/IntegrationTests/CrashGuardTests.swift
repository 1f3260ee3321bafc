import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// One job must never keep the daemon in a crash loop (the security review's finding 3): a job the
/// daemon crashed in (a fatal signal, here sent with `kill -SEGV`) runs alone at the next start,
/// and when it takes the daemon down a second time it is failed, while the rest of the queue
/// completes.
@Suite(.serialized)
final class CrashGuardTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("crash-guard")
    }

    /// Sends SIGSEGV, as a fault would, and waits for the daemon to die of it.
    func crashWithSegfault(_ daemon: DaemonProcess) throws {
        let process = try #require(daemon.process)
        kill(process.processIdentifier, SIGSEGV)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "uploadd survived a SIGSEGV")
    }

    func running(_ daemon: DaemonProcess) throws -> Set<JobID> {
        Set(try daemon.ctlJSON(JobList.self, ["list", "--state", "running"]).jobs.map(\.id))
    }

    @Test func aJobThatCrashesTheDaemonTwiceIsFailedAndTheQueueGoesOn() throws {
        // Slow enough that both jobs are still uploading when the daemon dies.
        let daemon = try DaemonProcess(name: "crash-guard", config: "[daemon]\ntransfers = 2\nrate_limit = 256K\n")
        try daemon.start()
        defer { daemon.stop() }
        let folder = "crash-guard-\(UUID().uuidString.prefix(6))"
        var paths: [String] = []
        for name in ["first.bin", "second.bin"] {
            let path = files.appendingPathComponent(name).path
            try makeRandomFile(at: path, size: 3 << 20)
            paths.append(path)
        }
        let ids = try daemon.add(paths, to: "\(servers.nginxURL)/dav/\(folder)/")
        #expect(eventually(timeout: 20) { (try? self.running(daemon)) == Set(ids) }, "both upload at once")
        try crashWithSegfault(daemon)

        try daemon.start()
        for id in ids {
            let job = try daemon.job(id)
            #expect(
                job.history?.contains { $0.message.contains("stopped unexpectedly") } == true,
                "\(String(describing: job.history))")
        }
        // The suspects run one at a time, in queue order.
        #expect(eventually(timeout: 20) { (try? self.running(daemon)) == [ids[0]] })
        Thread.sleep(forTimeInterval: 1)
        #expect(try running(daemon) == [ids[0]], "a suspect runs alone")
        try crashWithSegfault(daemon)

        try daemon.start()
        let failed = try daemon.job(ids[0])
        #expect(failed.state == .failed)
        #expect(failed.error?.code == "crash")
        #expect(
            failed.error?.message.contains("stopped unexpectedly 2 times in a row") == true,
            "\(String(describing: failed.error))")
        let second = try daemon.waitFor(ids[1], timeout: 120)
        #expect(second.state == .completed, "\(String(describing: second.error))")
        #expect(try Command.sha256("\(servers.nginxRoot)/dav/\(folder)/second.bin") == Command.sha256(paths[1]))
        #expect(!daemon.logLines(containing: "uploadd crashed last time (signal 11)").isEmpty)
    }

    /// SIGKILL is not a crash of the job's making: after it every job resumes as before.
    @Test func killsAreNotCountedAgainstAJob() throws {
        let daemon = try DaemonProcess(name: "crash-guard-kill", config: "[daemon]\ntransfers = 2\nrate_limit = 512K\n")
        try daemon.start()
        defer { daemon.stop() }
        let path = files.appendingPathComponent("killed.bin").path
        try makeRandomFile(at: path, size: 2 << 20)
        let folder = "crash-guard-kill-\(UUID().uuidString.prefix(6))"
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/\(folder)/")
        for _ in 0..<3 {
            #expect(eventually(timeout: 20) { (try? self.running(daemon)) == [ids[0]] })
            daemon.crash()
            try daemon.start()
        }
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
    }
}
