import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// Pause, resume, cancel, clear and crashes, against nginx with a rate limit so that uploads last
/// long enough to be interrupted.
@Suite(.serialized)
final class LifecycleTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        servers = try TestServers.load()
        // One transfer at a time at 40 MiB/s: a 60 MiB file takes about 1.5 s, and jobs added
        // behind it wait in the queue, where they can be paused and changed deterministically.
        daemon = try DaemonProcess(
            name: "lifecycle", config: "[daemon]\ntransfers = 1\nrate_limit = 40M\nretry_base_delay = 100\n")
        files = try TestPaths.scratch("lifecycle-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    private func bigFile(_ name: String, size: Int = 60 << 20) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    /// `top -H`, `ps -L` and perf tell the daemon's own threads from libdispatch's by name.
    @Test func theDaemonsOwnThreadsAreNamedForTheKernel() throws {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")
        let names = Set(
            tasks.compactMap { try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .newlines) })
        #expect(names.isSuperset(of: ["uploadd-http", "uploadd-journal"]), "\(names.sorted())")
    }

    @Test func pauseMidTransferThenResumeCompletes() throws {
        let path = try bigFile("pausable.bin")
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/pause/")
        let running = try daemon.waitFor(ids[0], state: .running, timeout: 10)
        #expect(running.state == .running)
        #expect(eventually(timeout: 10) { ((try? daemon.job(ids[0]))?.bytesSent ?? 0) > 0 }, "bytes are moving")
        let pause = try daemon.ctl(["pause", "\(ids[0])"])
        #expect(pause.status == 0, "\(pause)")
        let paused = try daemon.job(ids[0])
        #expect(paused.state == .paused)
        usleep(500_000)
        #expect(try daemon.job(ids[0]).state == .paused, "a paused job stays paused")
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let done = try daemon.waitFor(ids[0])
        #expect(done.state == .completed, "\(String(describing: done.error))")
        #expect(done.attempts == 2, "the pause stopped the first attempt")
        #expect(try Command.sha256("\(servers.nginxRoot)/dav/pause/pausable.bin") == Command.sha256(path))
    }

    @Test func cancelStopsTheUploadAndDropsTheSnapshot() throws {
        let name = "cancel-me-\(UUID().uuidString.prefix(8)).bin"
        let size = 60 << 20
        let path = try bigFile(name, size: size)
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/cancel/")
        _ = try daemon.waitFor(ids[0], state: .running, timeout: 10)
        let running = Date()
        #expect(try daemon.ctl(["cancel", "\(ids[0])"]).status == 0)
        // The whole PUT takes 1.5 s at 40 MiB/s: a cancel later than that would prove nothing.
        let wholeUpload = Double(size) / Double(40 << 20)
        try #require(Date().timeIntervalSince(running) < wholeUpload * 0.7, "the cancel came too late to test anything")
        #expect(try daemon.job(ids[0]).state == .canceled)
        #expect(
            eventually(timeout: 5) {
                !FileManager.default.fileExists(atPath: daemon.cacheDirectory + "/snapshots/\(ids[0])")
            })
        // Past the time the whole upload would have taken, and then some: had the PUT gone on,
        // nginx would have the file by now, and would have logged a successful PUT of it.
        let pause = running.addingTimeInterval(wholeUpload + 1.5).timeIntervalSinceNow
        if pause > 0 { usleep(UInt32(pause * 1_000_000)) }
        #expect(
            !FileManager.default.fileExists(atPath: "\(servers.nginxRoot)/dav/cancel/\(name)"), "the PUT never finished"
        )
        let accessLog = URL(fileURLWithPath: servers.nginxRoot).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("logs/nginx-access.log").path
        let requests = try String(contentsOfFile: accessLog, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains("\"PUT /dav/cancel/\(name) ") }
        #expect(
            !requests.contains { $0.contains("\" 201 ") || $0.contains("\" 204 ") },
            "nginx stored the file: \(requests)")
        let wait = try daemon.ctl(["wait", "\(ids[0])"])
        #expect(wait.status == 1, "wait reports a canceled job as a failure")
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 1, "a canceled job cannot be resumed")
    }

    /// Starts a long upload (120 MiB at 40 MiB/s) that holds the only transfer slot, so jobs added
    /// next stay queued long enough to be paused.
    private func occupyTheSlot(_ name: String) throws -> JobID {
        let id = try daemon.add([try bigFile(name, size: 120 << 20)], to: "\(servers.nginxURL)/dav/blockers/")[0]
        _ = try daemon.waitFor(id, state: .running, timeout: 10)
        return id
    }

    @Test func clearDropsFinishedJobsAndTheirCachedFiles() throws {
        let failing = try bigFile("clear-a.bin", size: 1000)
        let ids = try daemon.add([failing], to: "\(servers.nginxURL)/private/", ["--user", "\(servers.user):nope"])
        #expect(try daemon.waitFor(ids[0]).state == .failed)
        // The failed job keeps its snapshot (resume would need it) until it is cleared.
        #expect(FileManager.default.fileExists(atPath: daemon.cacheDirectory + "/snapshots/\(ids[0])"))
        let blocker = try occupyTheSlot("clear-blocker.bin")
        let keep = try daemon.add([try bigFile("clear-b.bin", size: 1000)], to: "\(servers.nginxURL)/dav/clear/")
        #expect(try daemon.ctl(["pause", "\(keep[0])"]).status == 0, "still queued behind the blocker")
        let clear = try daemon.ctl(["clear"])
        #expect(clear.status == 0, "\(clear)")
        #expect(try daemon.ctl(["show", "\(ids[0])"]).status == 1, "the failed job is gone")
        // Cached files are deleted off the thread that answered (`SnapshotCache.remove`).
        #expect(eventually { !FileManager.default.fileExists(atPath: daemon.cacheDirectory + "/snapshots/\(ids[0])") })
        #expect(try daemon.ctl(["show", "\(keep[0])"]).status == 0, "unfinished jobs stay")
        #expect(try daemon.ctl(["show", "\(blocker)"]).status == 0, "the running job stays")
        #expect(try daemon.ctl(["resume", "\(keep[0])"]).status == 0)
        #expect(try daemon.ctl(["wait", "\(keep[0])", "\(blocker)", "--timeout", "60"]).status == 0)
    }

    @Test func theSnapshotStillUploadsAfterTheOriginalIsDeleted() throws {
        _ = try occupyTheSlot("snapshot-blocker.bin")
        let path = try bigFile("ephemeral.bin", size: 1 << 20)
        let hash = try Command.sha256(path)
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/snapshot/")
        // Paused behind the blocker, so the original goes before the upload can start.
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0, "still queued behind the blocker")
        try FileManager.default.removeItem(atPath: path)
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256("\(servers.nginxRoot)/dav/snapshot/ephemeral.bin") == hash)
    }

    @Test func withoutASnapshotAChangedFileFailsNamingIt() throws {
        _ = try occupyTheSlot("nosnap-blocker.bin")
        let path = try bigFile("changing.bin", size: 1 << 20)
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/nosnap/", ["--snapshot", "none"])
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0, "still queued behind the blocker")
        try makeRandomFile(at: path, size: 2 << 20)
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        #expect(job.error?.code == "source")
        #expect(job.error?.message.contains(path) == true, "\(String(describing: job.error))")
        #expect(job.attempts == 1, "a changed source is not retried")
    }

    @Test func aKilledDaemonResumesEveryJobAfterRestart() throws {
        var paths: [String] = []
        for index in 0..<6 { paths.append(try bigFile("crash-\(index).bin", size: (index % 2 == 0 ? 30 : 3) << 20)) }
        let ids = try daemon.add(paths, to: "\(servers.nginxURL)/dav/crash/")
        #expect(eventually(timeout: 10) { (try? daemon.job(ids[0]))?.state == .running })
        daemon.crash()
        try daemon.start()
        let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "120"], timeout: 150)
        #expect(wait.status == 0, "\(wait)\n\(daemon.log(tail: 30))")
        for (id, path) in zip(ids, paths) {
            #expect(try daemon.job(id).state == .completed)
            let name = (path as NSString).lastPathComponent
            #expect(try Command.sha256("\(servers.nginxRoot)/dav/crash/\(name)") == Command.sha256(path), "\(name)")
        }
        let list = try daemon.ctlJSON(JobList.self, ["list"])
        #expect(Set(list.jobs.map(\.id)).isSuperset(of: ids), "no job lost")
        #expect(list.jobs.count == Set(list.jobs.map(\.id)).count, "no job duplicated")
    }

    @Test func sigtermStopsCleanlyAndARestartKeepsTheQueue() throws {
        let path = try bigFile("term.bin")
        let ids = try daemon.add([path], to: "\(servers.nginxURL)/dav/term/")
        _ = try daemon.waitFor(ids[0], state: .running, timeout: 10)
        #expect(daemon.stop() == 0, "SIGTERM exits 0")
        try daemon.start()
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed)
        #expect(try Command.sha256("\(servers.nginxRoot)/dav/term/term.bin") == Command.sha256(path))
    }
}
