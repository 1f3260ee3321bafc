import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

/// The state directory (the journal) or the cache directory on a small tmpfs that fills up: `add`
/// fails with a clear "no space" error, nothing queued is lost, uploads keep going, and the daemon
/// recovers by itself once space is freed.
@Suite(.serialized, .mountsTmpfs)
final class FullDiskTests {
    let servers: TestServers
    let files: URL
    private var daemons: [DaemonProcess] = []
    private var mounts: [TmpfsMount] = []

    init() throws {
        try TmpfsMount.requirePermitted()
        servers = try TestServers.load()
        files = try TestPaths.scratch("full-disk-files")
    }

    deinit {
        // The daemon first: it holds the journal open, which would keep the mount busy.
        for daemon in daemons { daemon.stop() }
        for mount in mounts { mount.unmount() }
        try? FileManager.default.removeItem(at: files)
    }

    /// A daemon whose state or cache directory is a fresh tmpfs of `size`.
    private func daemon(
        _ name: String, config: String, tmpfs size: String, on directory: KeyPath<DaemonProcess, String>
    )
        throws -> (DaemonProcess, TmpfsMount)
    {
        let daemon = try DaemonProcess(name: name, config: config)
        daemons.append(daemon)
        let mount = try TmpfsMount(at: daemon[keyPath: directory], size: size)
        mounts.append(mount)
        try daemon.start()
        return (daemon, mount)
    }

    private func file(_ name: String, size: Int) throws -> String {
        let path = files.appendingPathComponent(name).path
        try CrashSupport.randomFile(at: path, size: size)
        return path
    }

    private func listedIDs(_ daemon: DaemonProcess) throws -> [JobID] {
        try daemon.ctlJSON(JobList.self, ["list"]).jobs.map(\.id)
    }

    /// Adds small files until an add fails; the jobs added meanwhile used up the last free bytes of
    /// the journal's last page (tmpfs counts whole pages). Returns those jobs and the failure.
    private func addUntilRefused(_ daemon: DaemonProcess, to destination: String, _ options: [String] = [])
        throws -> (accepted: [(JobID, String)], refusal: CommandResult)
    {
        var accepted: [(JobID, String)] = []
        for index in 0..<64 {
            let path = try file("while-full-\(index).bin", size: 1000 + index)
            let result = try daemon.ctl(["add", path, "--to", destination] + options)
            guard result.status == 0 else { return (accepted, result) }
            guard let id = JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw TestFailure("add printed no ID: \(result)")
            }
            accepted.append((id, path))
        }
        throw TestFailure("64 adds on a full state directory all succeeded; the journal is not on the tmpfs?")
    }

    /// The refusal says "no space", where, and what to do; `--json` and the raw protocol carry
    /// RPCError.noSpaceCode; and the refused file left no job behind.
    private func expectNoSpaceRefusal(
        _ refusal: CommandResult, _ daemon: DaemonProcess, directory: String, source: String, to destination: String,
        _ options: [String] = []
    ) throws {
        #expect(refusal.status == 1, "\(refusal)")
        #expect(refusal.stderr.localizedCaseInsensitiveContains("no space"), "\(refusal)")
        #expect(refusal.stderr.contains("in \(directory);"), "the message names the full directory: \(refusal)")
        #expect(refusal.stderr.contains("free some space"), "the message says what to do: \(refusal)")

        let before = try listedIDs(daemon)
        let json = try daemon.ctl(["--json", "add", source, "--to", destination] + options)
        #expect(json.status == 1, "\(json)")
        let output = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any] ?? [:]
        let errors = output["errors"] as? [[String: Any]] ?? []
        #expect(errors.first?["code"] as? Int == RPCError.noSpaceCode, "add --json reports the error code: \(json)")
        #expect(errors.first?["source"] as? String == source, "\(json)")
        #expect((output["jobs"] as? [Any])?.isEmpty == true, "\(json)")

        let params = ["source": source, "destination": destination]
        let request = try JSONSerialization.data(withJSONObject: [
            "jsonrpc": "2.0", "id": 1, "method": "job.add", "params": params,
        ])
        let answer = try CrashSupport.rpc(socket: daemon.socket, String(decoding: request, as: UTF8.self))
        let error =
            (try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["error"] as? [String: Any]
        #expect(error?["code"] as? Int == RPCError.noSpaceCode, "job.add answers -32004: \(answer)")

        #expect(try listedIDs(daemon) == before, "a refused add queued nothing")
    }

    /// Jobs with the same IDs and states as before.
    private func expectJobs(_ daemon: DaemonProcess, _ expected: [JobID: JobState], _ when: String) throws {
        let jobs = try daemon.ctlJSON(JobList.self, ["list"]).jobs
        #expect(Dictionary(uniqueKeysWithValues: jobs.map { ($0.id, $0.state) }) == expected, "\(when)")
    }

    private func expectStored(_ path: String, at stored: String) throws {
        #expect(FileManager.default.fileExists(atPath: stored), "\(stored) is on the server")
        guard FileManager.default.fileExists(atPath: stored) else { return }
        #expect(try Command.sha256(stored) == Command.sha256(path), "\(stored) differs from \(path)")
    }

    // MARK: - State directory

    /// An upload in progress when the journal's file system fills keeps going and completes; jobs
    /// queued behind it run too; adds are refused; once the filler is deleted an add succeeds, a
    /// paused job resumes, and the journal catches up with everything that happened while it was
    /// full: after a restart no job is lost and none runs again.
    @Test func aFullStateDirectoryRefusesAddsKeepsEveryJobAndRecoversByItself() throws {
        // One transfer at 256 KiB/s: a 1 MiB upload lasts 4 s, and the jobs after it wait.
        let (daemon, state) = try daemon(
            "full-state", config: "[daemon]\ntransfers = 1\nrate_limit = 256K\n", tmpfs: "1m", on: \.stateDirectory)
        let folder = "full-state-\(UUID().uuidString.prefix(6))"
        let destination = "\(servers.nginxURL)/dav/\(folder)/"
        let put = ["--protocol", "put"]
        func stored(_ path: String) -> String {
            "\(servers.nginxRoot)/dav/\(folder)/\((path as NSString).lastPathComponent)"
        }

        let inProgressPath = try file("in-progress.bin", size: 1 << 20)
        let inProgress = try daemon.add([inProgressPath], to: destination, put)[0]
        #expect(eventually(timeout: 10) { ((try? daemon.job(inProgress))?.bytesSent ?? 0) > 0 }, "the upload started")
        let queuedPaths = [try file("queued-1.bin", size: 20_000), try file("queued-2.bin", size: 30_000)]
        let queued = try daemon.add(queuedPaths, to: destination, put)
        let pausedPath = try file("paused.bin", size: 40_000)
        let paused = try daemon.add([pausedPath], to: destination, put)[0]
        #expect(try daemon.ctl(["pause", "\(paused)"]).status == 0, "still queued behind the upload in progress")

        try state.fill()
        let (accepted, refusal) = try addUntilRefused(daemon, to: destination, put)
        try expectNoSpaceRefusal(
            refusal, daemon, directory: daemon.stateDirectory, source: try file("refused.bin", size: 500),
            to: destination, put)
        var expected: [JobID: JobState] = [inProgress: .completed, paused: .paused]
        for id in queued + accepted.map(\.0) { expected[id] = .completed }
        #expect(Set(try listedIDs(daemon)) == Set(expected.keys), "every job added before the disk filled is listed")

        // The upload in progress goes on, and the queue behind it runs, with the journal full.
        for id in [inProgress] + queued + accepted.map(\.0) {
            let job = try daemon.waitFor(id, timeout: 30)
            #expect(job.state == .completed, "job \(id): \(String(describing: job.error))")
            #expect(job.attempts == 1, "job \(id) ran once")
        }
        #expect(state.availableBytes == 0, "all of that happened with the state directory full")
        #expect(try daemon.job(paused).state == .paused)
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("No space left on device"), "the failed journal writes are logged")

        // Space comes back: no restart needed.
        #expect(unlink(state.path + "/filler") == 0)
        let afterPath = try file("after.bin", size: 10_000)
        let after = try daemon.add([afterPath], to: destination, put)[0]
        #expect(try daemon.ctl(["resume", "\(paused)"]).status == 0)
        for id in [after, paused] {
            #expect(try daemon.waitFor(id, timeout: 30).state == .completed, "job \(id)")
        }
        expected[after] = .completed
        expected[paused] = .completed
        for path in [inProgressPath, afterPath, pausedPath] + queuedPaths + accepted.map(\.1) {
            try expectStored(path, at: stored(path))
        }
        try expectJobs(daemon, expected, "after the recovery")

        // What happened while the journal was full reached it once there was room.
        let caughtUp = eventually(timeout: 10) {
            ((try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? "").contains("journal: caught up")
        }
        #expect(caughtUp, "the journal caught up by itself:\n\(daemon.log(tail: 20))")
        let attempts = Dictionary(
            uniqueKeysWithValues: try daemon.ctlJSON(JobList.self, ["list"]).jobs.map { ($0.id, $0.attempts) })
        #expect(daemon.stop() == 0)
        try daemon.start()
        try expectJobs(daemon, expected, "after a restart")
        let again = Dictionary(
            uniqueKeysWithValues: try daemon.ctlJSON(JobList.self, ["list"]).jobs.map { ($0.id, $0.attempts) })
        #expect(again == attempts, "no job ran again after the restart")
        #expect(try daemon.ctlJSON(DaemonStatus.self, ["status"]).journalDamage == nil)
    }

    /// A pause while the journal's disk is full is done, and the reply says so: done, not saved
    /// yet, saved once there is room (not "cannot journal", which would read as "nothing happened").
    @Test func aChangeOnAFullDiskIsReportedAsDoneButNotYetSaved() throws {
        let (daemon, state) = try daemon(
            "full-truth", config: "[daemon]\ntransfers = 1\nrate_limit = 64K\n", tmpfs: "1m", on: \.stateDirectory)
        let destination = "\(servers.nginxURL)/dav/full-truth-\(UUID().uuidString.prefix(6))/"
        // The only slot is busy for a while: the second job stays queued.
        _ = try daemon.add([try file("truth-busy.bin", size: 1 << 20)], to: destination, ["--protocol", "put"])
        let waiting = try daemon.add(
            [try file("truth-queued.bin", size: 1000)], to: destination, ["--protocol", "put"])[0]
        try state.fill()
        // The filler leaves the tail of a block: small records may still fit. Pause and resume
        // until one is not saved.
        var command = "resume"
        var reply: CommandResult
        var tries = 0
        repeat {
            command = command == "pause" ? "resume" : "pause"
            reply = try daemon.ctl([command, "\(waiting)"])
            tries += 1
        } while reply.status == 0 && tries < 200
        let expectedState: JobState = command == "pause" ? .paused : .queued
        #expect(reply.status == 1, "\(reply)")
        #expect(reply.stderr.contains("done (\(command) job \(waiting)), but not saved yet"), "\(reply)")
        #expect(reply.stderr.contains("saved by itself as soon as there is room"), "\(reply)")
        #expect(try daemon.job(waiting).state == expectedState, "the \(command) holds")
        // Room again: the journal catches up by itself; after a restart the pause is still there.
        #expect(unlink(state.path + "/filler") == 0)
        Thread.sleep(forTimeInterval: 3)
        daemon.stop()
        try daemon.start()
        #expect(try daemon.job(waiting).state == expectedState, "the \(command) was saved once there was room")
    }

    /// On a full state directory the journal never gets a torn or partial record, compaction (a
    /// temp file) fails without touching the journal, and a restart replays everything without
    /// needing a byte of space.
    @Test func aRestartOnAFullStateDirectoryLosesNothing() throws {
        let (daemon, state) = try daemon(
            "full-restart", config: "[daemon]\nretry_base_delay = 60000\n", tmpfs: "1m", on: \.stateDirectory)
        let target = try TestPaths.scratch("full-restart-dest")
        defer { try? FileManager.default.removeItem(at: target) }
        let local = "file://\(target.path)/"
        let nowhere = "http://127.0.0.1:1/nowhere/"  // connection refused: retried in a minute
        let completed = try daemon.add([try file("done.bin", size: 5000)], to: local)[0]
        #expect(try daemon.waitFor(completed).state == .completed)
        let failed = try daemon.add(
            [try file("denied.bin", size: 100)], to: "\(servers.nginxURL)/private/",
            ["--protocol", "put", "--user", "\(servers.user):wrong"])[0]
        #expect(try daemon.waitFor(failed).state == .failed)
        let waiting = try daemon.add(
            [try file("waiting.bin", size: 100), try file("paused.bin", size: 100)], to: nowhere, ["--protocol", "put"])
        #expect(
            eventually(timeout: 10) {
                ((try? daemon.job(waiting[0]))?.attempts ?? 0) == 1 && (try? daemon.job(waiting[0]))?.state == .queued
            })
        #expect(try daemon.ctl(["pause", "\(waiting[1])"]).status == 0)
        let expected: [JobID: JobState] = [
            completed: .completed, failed: .failed, waiting[0]: .queued, waiting[1]: .paused,
        ]

        try state.fill()
        let (accepted, refusal) = try addUntilRefused(daemon, to: local)
        #expect(refusal.status == 1, "\(refusal)")
        #expect(accepted.count < 20, "tmpfs has at most a page of slack: \(accepted.count) adds went through")
        for (id, _) in accepted { #expect(try daemon.waitFor(id).state == .completed) }
        var withAccepted = expected
        for (id, _) in accepted { withAccepted[id] = .completed }

        // Whatever fails now must leave the journal exactly as it is, with no temp file beside it.
        let journal = state.path + "/journal"
        let bytes = CrashSupport.bytes(journal)
        for index in 0..<3 {
            // A longer name than the refused add's: its record is larger, so it cannot fit in what
            // is left of the journal's last page (a shorter one could, and would rightly be taken).
            let result = try daemon.ctl(["add", try file("while-full-refused-\(index).bin", size: 100), "--to", local])
            #expect(result.status == 1 && result.stderr.contains("no space"), "\(result)")
        }
        #expect(try daemon.ctl(["pause", "\(waiting[0])"]).status == 1, "a pause cannot be journaled either")
        #expect(try daemon.ctl(["resume", "\(waiting[0])"]).status == 1)
        // The failed writes make the daemon compact (write the live state to a temp file) every
        // two seconds until that works: on the full disk it must fail without touching the journal.
        let compactionFailed = eventually(timeout: 10) {
            ((try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? "").contains(
                "journal.compacting: No space left")
        }
        #expect(compactionFailed, "a compaction was tried on the full disk:\n\(daemon.log(tail: 20))")
        #expect(CrashSupport.bytes(journal) == bytes, "failed writes and compactions left the journal as it was")
        // (The daemon keeps trying to compact: its temp file may exist for an instant.)
        var names: [String] = []
        let clean = eventually(timeout: 5) {
            names = ((try? FileManager.default.contentsOfDirectory(atPath: state.path)) ?? []).sorted()
            return names == ["filler", "journal", "lock"]
        }
        #expect(clean, "no compaction temp file or other debris: \(names)")

        // A restart on the full disk: replay needs no space.
        #expect(daemon.stop() == 0, "uploadd stops cleanly with the disk full")
        try daemon.start()
        try expectJobs(daemon, withAccepted, "after a restart on the full disk")
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(status.journalDamage == nil, "\(String(describing: status.journalDamage))")
        let refusedAgain = try daemon.ctl(
            ["add", try file("while-full-refused-again.bin", size: 100), "--to", local])
        #expect(refusedAgain.status == 1 && refusedAgain.stderr.contains("no space"), "\(refusedAgain)")

        // Room again: an add works at once, and the next start has every job.
        #expect(unlink(state.path + "/filler") == 0)
        let later = try daemon.add([try file("later.bin", size: 100)], to: local)[0]
        #expect(try daemon.waitFor(later).state == .completed)
        #expect(daemon.stop() == 0)
        try daemon.start()
        var final = withAccepted
        final[later] = .completed
        try expectJobs(daemon, final, "after space came back and a restart")
    }

    // MARK: - Cache directory

    /// A snapshot copy that does not fit is refused with a message saying what to do, and queues
    /// nothing; in the default mode (auto) the daemon uploads from the original file instead.
    @Test func aFullCacheDirectoryRefusesACopyAndAutoFallsBackToTheOriginal() throws {
        let (daemon, cache) = try daemon("full-cache", config: "", tmpfs: "2m", on: \.cacheDirectory)
        try cache.fill()
        let path = try file("too-big-for-the-cache.bin", size: 3 << 20)
        let folder = "full-cache-\(UUID().uuidString.prefix(6))"
        let destination = "\(servers.nginxURL)/dav/\(folder)/"

        let refusal = try daemon.ctl(["add", path, "--to", destination, "--snapshot", "copy"])
        #expect(refusal.status == 1, "\(refusal)")
        #expect(refusal.stderr.contains("no room for a copy of \(path)"), "\(refusal)")
        #expect(refusal.stderr.contains(daemon.cacheDirectory), "the message names the cache: \(refusal)")
        #expect(refusal.stderr.contains("--snapshot none"), "the message says what to do: \(refusal)")
        let json = try daemon.ctl(["--json", "add", path, "--to", destination, "--snapshot", "copy"])
        let output = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any] ?? [:]
        #expect((output["errors"] as? [[String: Any]])?.first?["code"] as? Int == RPCError.noSpaceCode, "\(json)")
        #expect(try listedIDs(daemon).isEmpty, "nothing queued")
        #expect(
            eventually {
                (try? FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots"))?.isEmpty
                    == true
            },
            "no partial copy left")

        let id = try daemon.add([path], to: destination)[0]
        let job = try daemon.waitFor(id, timeout: 30)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(
            job.snapshot == SourceSnapshot.Kind.original.rawValue,
            "auto uploaded from the original: \(String(describing: job.snapshot))")
        try expectStored(path, at: "\(servers.nginxRoot)/dav/\(folder)/\((path as NSString).lastPathComponent)")
    }

    /// Big files are copied alongside their uploads, and each copy takes its space when it starts:
    /// of five files added together of which three fit the cache, three are copied and two (default
    /// snapshot, auto) upload from their originals. Their copies took no space before (sparse
    /// files), so all passed the free-space check one after the other, and the last copies ran out
    /// of room halfway, which undid their adds although auto would have uploaded the originals.
    @Test func bigFilesAddedTogetherEachHoldTheSpaceOfTheirCopy() throws {
        // Slow uploads: no job may end (and free its copy's space) while the add still checks.
        let (daemon, _) = try daemon(
            "full-alongside", config: "[daemon]\nrate_limit = 16M\n", tmpfs: "200m", on: \.cacheDirectory)
        let paths = try (1...5).map { try file("big-\($0).bin", size: 40 << 20) }
        let folder = "full-alongside-\(UUID().uuidString.prefix(6))"
        let ids = try daemon.add(paths, to: "\(servers.nginxURL)/dav/\(folder)/")
        #expect(ids.count == 5)
        var kinds: [String?] = []
        for id in ids {
            let job = try daemon.waitFor(id, timeout: 60)
            #expect(job.state == .completed, "\(String(describing: job.error))")
            kinds.append(job.snapshot)
        }
        let copy = SourceSnapshot.Kind.copy.rawValue
        let original = SourceSnapshot.Kind.original.rawValue
        // 200 MiB less the 64 MiB kept free: room for three copies of 40 MiB.
        #expect(kinds == [copy, copy, copy, original, original], "\(kinds)")
        for path in paths {
            try expectStored(path, at: "\(servers.nginxRoot)/dav/\(folder)/\((path as NSString).lastPathComponent)")
        }
    }

    /// A prepared image that does not fit in the cache is a full disk, not a bad image: with
    /// `on-error=original` the original went out in its place, unshrunk and with its GPS position.
    /// Now the job waits for room (retried; here with one attempt, it fails saying why).
    @Test func aFullCacheWhilePreparingAnImageNeverSendsTheOriginalInstead() throws {
        let (daemon, cache) = try daemon(
            "full-prepare", config: "[daemon]\nretry_attempts = 1\nretry_for = 0\n", tmpfs: "2m", on: \.cacheDirectory)
        try cache.fill()
        let photo = files.appendingPathComponent("full-prepare.jpg").path
        try TestImages.phonePhoto(at: photo, width: 1600, height: 1200)
        let out = try TestPaths.scratch("full-prepare-out")
        let id = try daemon.add(
            [photo], to: "file://\(out.path)/",
            ["--snapshot", "none", "--image", "max=1000,strip-gps,on-error=original"]
        )[0]
        let job = try daemon.waitFor(id, timeout: 60)
        #expect(job.state == .failed, "\(String(describing: job.error))")
        #expect(job.error?.code == "no_space", "\(String(describing: job.error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "something was sent")
    }

    /// A watched folder's file whose copy finds the cache full is not lost: the add fails, says
    /// it is tried again, and once there is space the file is taken and uploaded, by itself.
    @Test func aWatchedFileRefusedForAFullCacheIsTakenOnceThereIsSpace() throws {
        let inbox = try TestPaths.scratch("full-disk-inbox").path
        let run = "full-watch-\(UUID().uuidString.prefix(8))"
        let config = """
            [folder inbox]
            path = \(inbox)
            to = \(servers.nginxURL)/dav/\(run)/
            protocol = put
            snapshot = copy
            settle = 200ms
            """
        let (daemon, _) = try daemon("full-watch", config: config, tmpfs: "72m", on: \.cacheDirectory)
        let filler = daemon.cacheDirectory + "/filler"
        // Fills it (the write then fails): copies keep 64 MiB free beside them.
        try? Data(count: 80 << 20).write(to: URL(fileURLWithPath: filler))
        let bytes = Data((0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: URL(fileURLWithPath: inbox + "/a.bin"))
        let refused = eventually(timeout: 20) { daemon.log(tail: 50).contains("a.bin not taken") }
        #expect(refused, "the full cache refused the copy: \(daemon.log(tail: 20))")
        #expect(daemon.log(tail: 50).contains("tried again later"))
        #expect(unlink(filler) == 0)
        let uploaded = eventually(timeout: 60) {
            (try? daemon.ctlJSON(JobList.self, ["list"]).jobs.contains { $0.state == .completed }) == true
        }
        #expect(uploaded, "taken once there was space: \(daemon.log(tail: 20))")
        #expect(
            FileManager.default.contents(atPath: "\(servers.nginxRoot)/dav/\(run)/a.bin") == bytes,
            "whole on the server")
        #expect(try daemon.ctlJSON(JobList.self, ["list"]).jobs.count == 1, "taken once")
    }
}
