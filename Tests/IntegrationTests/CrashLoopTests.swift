import Foundation
import Glibc
import TestSupport
import Testing
import UploadCore
import UploadWire

/// The crash loop: a mixed queue (put, post, tus, s3, chunked; KiB and tens of MiB) while uploadd is
/// killed with SIGKILL at random moments and restarted, again and again. At the end every job that
/// was not canceled is completed and matches its source on its server by SHA-256, `list` has
/// exactly the jobs that were added, canceled jobs left nothing on their servers, and a clean
/// restart replays the journal without damage.
///
/// CI mode: 30 kills, files up to 80 MiB, under a minute. `UPLOADD_SOAK=1`: 300 kills and bigger
/// files (up to 200 MiB, about 4 minutes), by hand. `UPLOADD_TEST_SEED=N` repeats a run's random
/// choices (the seed is printed).
@Suite(.serialized)
final class CrashLoopTests {
    enum Kind: String, CaseIterable, Sendable {
        case put, post, tus, s3, chunked
    }

    struct Upload {
        var kind: Kind
        var name: String
        var path: String
        var size: Int
        var hash: String
        var id: JobID
        var cancel: Bool
    }

    let servers: TestServers
    let s3: S3TestServer
    let daemon: DaemonProcess
    let files: URL
    /// Names every file of this run, on every server.
    let run = "crash-\(UUID().uuidString.prefix(8).lowercased())"
    let soak = ProcessInfo.processInfo.environment["UPLOADD_SOAK"] == "1"
    static let mebibyte = 1 << 20

    init() throws {
        servers = try TestServers.load()
        guard let s3 = servers.s3 else { throw TestServers.Missing(key: "UPLOADD_TEST_S3_ENDPOINT") }
        self.s3 = s3
        files = try TestPaths.scratch("crashloop-files")
        let secret = files.appendingPathComponent("s3-secret").path
        try "\(s3.secretKey)\n".write(toFile: secret, atomically: true, encoding: .utf8)
        // Five transfers at 12 MiB/s each: a 40 MiB file needs several daemon lifetimes, so
        // resumable uploads span many kills, and put/post (which start over) finish after the loop.
        let config = """
            [daemon]
            transfers = 5
            rate_limit = 12M
            retry_base_delay = 100
            retry_max_delay = 2
            stall_timeout = 20

            [remote crashs3]
            protocol = s3
            url = s3://\(s3.bucket)/itest/
            endpoint = \(s3.endpoint)
            region = \(s3.region)
            access_key_id = \(s3.accessKey)
            secret_access_key_file = \(secret)
            multipart_threshold = 1M

            """
        daemon = try DaemonProcess(name: "crashloop", config: config)
    }

    deinit { daemon.stop() }

    // MARK: - Where each kind goes, and where the server keeps it

    private func destination(_ kind: Kind) -> (String, [String]) {
        switch kind {
        case .put: return ("\(servers.nginxURL)/dav/\(run)/", ["--protocol", "put"])
        case .post:
            return ("\(servers.receiverURL)/form", ["--protocol", "post", "--header", servers.receiverAuthorization])
        case .tus: return (servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        case .s3: return ("crashs3:\(run)/", ["--chunk-size", "5M"])
        case .chunked: return ("\(servers.receiverURL)/upload", ["--protocol", "chunked"] + servers.receiverTokenField)
        }
    }

    private func s3Key(_ name: String) -> String { "itest/\(run)/\(name)" }
    private func nginxPath(_ name: String) -> String { "\(servers.nginxRoot)/dav/\(run)/\(name)" }

    /// SHA-256 of the server's copy, or nil when it has none.
    private func storedHash(_ upload: Upload, job: JobInfo) throws -> String? {
        func local(_ path: String) throws -> String? {
            FileManager.default.fileExists(atPath: path) ? try Command.sha256(path) : nil
        }
        let resultName = job.result?.url.map { ($0 as NSString).lastPathComponent }
        switch upload.kind {
        case .put: return try local(nginxPath(upload.name))
        case .post: return try local("\(servers.receiverDirectory)/\(upload.name)")
        case .tus: return try resultName.flatMap { try local("\(servers.tusDirectory)/\($0)") }
        case .chunked: return try resultName.flatMap { try local("\(servers.receiverDirectory)/\($0)") }
        case .s3: return try s3.sha256(of: s3Key(upload.name))
        }
    }

    /// A source file for a job (made before the daemon is busy, so making it takes no upload time).
    private func prepare(_ kind: Kind, size: Int, label: String, cancel: Bool = false) throws -> Upload {
        let name = "\(run)-\(label).bin"
        let path = files.appendingPathComponent(name).path
        try CrashSupport.randomFile(at: path, size: size)
        return Upload(
            kind: kind, name: name, path: path, size: size, hash: try Command.sha256(path), id: JobID(0), cancel: cancel
        )
    }

    private func add(_ upload: Upload, priority: Int = 0, extra: [String] = []) throws -> Upload {
        var upload = upload
        let (destination, options) = destination(upload.kind)
        upload.id = try daemon.add([upload.path], to: destination, options + ["--priority", "\(priority)"] + extra)[0]
        return upload
    }

    // MARK: - The loop

    @Test func aMixedQueueSurvivesRandomKills() throws {
        var random = SeededRandom()
        let kills = soak ? 300 : 30
        let large = soak ? [120, 80, 150, 150, 120] : [30, 24, 40, 40, 30]  // MiB: put, post, tus, s3, chunked
        let cancelSize = (soak ? 200 : 80) * Self.mebibyte
        let started = Date()
        print(
            "crash loop: seed \(random.seed) (UPLOADD_TEST_SEED=\(random.seed) repeats it), \(soak ? "soak" : "CI") mode"
        )
        // Three jobs to cancel mid-way, first in line so they are running when the kills start.
        var cancelTus = try prepare(.tus, size: cancelSize, label: "cancel-tus", cancel: true)
        var cancelS3 = try prepare(.s3, size: cancelSize, label: "cancel-s3", cancel: true)
        var cancelPut = try prepare(.put, size: cancelSize, label: "cancel-put", cancel: true)
        var queue: [Upload] = []
        for (index, kind) in Kind.allCases.enumerated() {
            queue.append(try prepare(kind, size: large[index] * Self.mebibyte, label: "large-\(kind)"))
        }
        queue.append(try prepare(.s3, size: 7 * Self.mebibyte + 123, label: "medium-s3"))
        for kind in Kind.allCases {
            for index in 0..<2 {
                queue.append(
                    try prepare(
                        kind, size: Int.random(in: 1...64, using: &random) * 1024 + index,
                        label: "small-\(kind)-\(index)"))
            }
        }

        try daemon.start()
        cancelTus = try add(cancelTus, priority: 10)
        cancelS3 = try add(cancelS3, priority: 10)
        cancelPut = try add(cancelPut, priority: 10)
        // Their server-side uploads exist (tus upload created, first S3 part held) before any kill,
        // so each has exactly one upload on its server for cancel to remove.
        let underway = try eventually(timeout: 30) {
            try daemon.job(cancelTus.id).bytesAcked >= Int64(Self.mebibyte)
                && daemon.job(cancelS3.id).bytesAcked >= Int64(5 * Self.mebibyte)
                && daemon.job(cancelPut.id).bytesSent > 0
        }
        #expect(underway, "the jobs to cancel got going: \(daemon.log(tail: 20))")
        var uploads = [cancelTus, cancelS3, cancelPut]
        uploads += try queue.map { try add($0) }
        // Small files of one add share a pack of copies in the cache: kills fall on packs too.
        var packed = try (0..<12).map { index in
            try prepare(.put, size: Int.random(in: 1...96, using: &random) * 1024 + index, label: "packed-\(index)")
        }
        let (putDestination, putOptions) = destination(.put)
        for (index, id) in try daemon.add(packed.map(\.path), to: putDestination, putOptions).enumerated() {
            packed[index].id = id
        }
        uploads += packed
        let totalBytes = uploads.reduce(0) { $0 + $1.size }

        // Kill, restart, repeat. A few jobs are added and three canceled between kills; two of
        // the cancels are followed by a kill a few milliseconds after uploadctl returned.
        let loopStart = Date()
        var survived = 0
        var damageDuringLoop: [String] = []
        var exitedOnTheirOwn = 0
        let addAt = Set(stride(from: 1, to: kills, by: max(kills / 6, 1)))
        let cancelAt: [Int: (upload: Upload, killRightAfter: Bool)] = [
            1: (cancelTus, true), 2: (cancelS3, true), 4: (cancelPut, false),
        ]
        for iteration in 0..<kills {
            let delay = Int.random(in: 50...800, using: &random)
            let lived = Date()
            if addAt.contains(iteration) {
                let kind = Kind.allCases[iteration % Kind.allCases.count]
                let upload = try prepare(
                    kind, size: Int.random(in: 1...256, using: &random) * 1024, label: "during-\(iteration)-\(kind)")
                uploads.append(try add(upload))
            }
            var sleepMs = max(delay - Int(Date().timeIntervalSince(lived) * 1000), 0)
            if let cancel = cancelAt[iteration] {
                if cancel.killRightAfter { usleep(UInt32(max(sleepMs - 10, 0)) * 1000) }
                let before = try daemon.job(cancel.upload.id)
                #expect(
                    before.state != .completed && before.bytesAcked < before.bytesTotal,
                    "\(cancel.upload.name) is canceled mid-way: \(before.state) \(before.bytesAcked)/\(before.bytesTotal)"
                )
                let result = try daemon.ctl(["cancel", "\(cancel.upload.id)"])
                #expect(result.status == 0, "cancel \(cancel.upload.name): \(result)")
                sleepMs =
                    cancel.killRightAfter
                    ? Int.random(in: 0...10, using: &random)
                    : max(delay - Int(Date().timeIntervalSince(lived) * 1000), 0)
            }
            usleep(UInt32(sleepMs) * 1000)
            if daemon.process?.isRunning != true {
                exitedOnTheirOwn += 1
                Issue.record("uploadd exited by itself before kill \(iteration + 1): \(daemon.log(tail: 30))")
            }
            daemon.crash()
            survived += 1
            try daemon.start()
            let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
            if let damage = status.journalDamage { damageDuringLoop.append("after kill \(survived): \(damage)") }
        }
        let loopSeconds = Date().timeIntervalSince(loopStart)
        let completedDuringLoop = try uploads.filter { try daemon.job($0.id).state == .completed }.count

        // Let the queue finish without further kills.
        let pending = uploads.filter { !$0.cancel }
        let wait = try daemon.ctl(
            ["wait"] + pending.map { "\($0.id)" } + ["--timeout", soak ? "1800" : "150"], timeout: soak ? 1900 : 170)
        #expect(wait.status == 0, "\(wait)\n\(daemon.log(tail: 40))")

        // Nothing lost, nothing duplicated: list has exactly the jobs added.
        let list = try daemon.ctlJSON(JobList.self, ["list"])
        let listed = list.jobs.map(\.id)
        #expect(listed.count == Set(listed).count, "no job duplicated: \(listed)")
        #expect(
            Set(listed) == Set(uploads.map(\.id)), "list has exactly the jobs added: \(listed) vs \(uploads.map(\.id))")

        // Every job that was not canceled arrived intact; every canceled one left nothing behind.
        var attempts: [String] = []
        for upload in uploads {
            let job = try daemon.job(upload.id)
            if upload.size >= Self.mebibyte && !upload.cancel {
                attempts.append("\(upload.kind) \(upload.size / Self.mebibyte) MiB: \(job.attempts)")
            }
            if upload.cancel {
                #expect(job.state == .canceled, "\(upload.name): \(job.state)")
                continue
            }
            #expect(
                job.state == .completed,
                "\(upload.name) (\(upload.kind)): \(job.state) \(String(describing: job.error))")
            #expect(job.bytesAcked == Int64(upload.size), "\(upload.name): acked \(job.bytesAcked) of \(upload.size)")
            let stored = try storedHash(upload, job: job)
            #expect(
                stored == upload.hash,
                "\(upload.name) (\(upload.kind), job \(upload.id)) differs on the server: \(String(describing: stored))"
            )
        }
        try expectCanceledLeftNothing(tus: cancelTus, s3Upload: cancelS3, put: cancelPut)

        // Leftovers of uploads that a kill cut off right after the server created them (before the
        // daemon could journal them): reported, not counted as failures.
        // tus uploads are created empty and journaled before a byte is sent: a kill can orphan at
        // most an empty upload (between the server's answer and the journal), never one with data.
        var tusOrphans = 0
        for upload in uploads where upload.kind == .tus && !upload.cancel {
            let held = try CrashSupport.tusUploads(named: upload.name, in: servers.tusDirectory)
            tusOrphans += max(held.count - 1, 0)
            let withData = held.filter { id in
                let size =
                    (try? FileManager.default.attributesOfItem(atPath: "\(servers.tusDirectory)/\(id)")[.size] as? Int)
                    ?? 0
                return size > 0
            }
            #expect(withData.count == 1, "\(upload.name): uploads with data on the tus server: \(withData)")
        }
        let s3Orphans = try s3.uploads(prefix: "itest/\(run)/").filter { $0.key != s3Key(cancelS3.name) }

        // A clean stop and start: the journal replays without damage and holds the same jobs.
        #expect(daemon.stop() == 0, "SIGTERM exits 0")
        try daemon.start()
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(
            status.journalDamage == nil,
            "a clean restart reports no damage: \(String(describing: status.journalDamage))")
        let plain = try daemon.ctl(["status"])
        #expect(!plain.stdout.contains("journal damage"), "\(plain)")
        let after = try daemon.ctlJSON(JobList.self, ["list"])
        #expect(Set(after.jobs.map(\.id)) == Set(uploads.map(\.id)) && after.jobs.count == uploads.count)
        for upload in uploads {
            let state = after.jobs.first { $0.id == upload.id }?.state
            #expect(
                state == (upload.cancel ? .canceled : .completed),
                "\(upload.name) after the clean restart: \(String(describing: state))")
        }
        func snapshots() -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: daemon.cacheDirectory + "/snapshots")) ?? []
        }
        // Deleted off the thread that ended the upload (`SnapshotCache.remove`): soon, not at once.
        #expect(eventually { snapshots().isEmpty }, "no cached copy is left once every job is done: \(snapshots())")

        let total = Date().timeIntervalSince(started)
        print(
            "crash loop: survived \(survived) SIGKILLs in \(String(format: "%.1f", loopSeconds)) s (seed \(random.seed));"
                + " \(uploads.count) jobs (\(uploads.filter(\.cancel).count) canceled mid-way),"
                + " \(totalBytes / Self.mebibyte) MiB; \(completedDuringLoop) completed during the loop, the rest after;"
                + " attempts (one per daemon lifetime it ran in) of the large ones: \(attempts.joined(separator: ", ")); all verified after"
                + " \(String(format: "%.1f", total)) s; journal damage reported during the loop: \(damageDuringLoop.count);"
                + " orphaned server uploads (cut off before they were journaled): tus \(tusOrphans), s3 \(s3Orphans.count)"
        )
        for damage in damageDuringLoop { print("crash loop: \(damage)") }
        #expect(exitedOnTheirOwn == 0)

        // The big files are not needed any more; the servers' copies of the large ones go too.
        for upload in uploads where upload.size >= Self.mebibyte {
            try? FileManager.default.removeItem(atPath: upload.path)
            let stored = (try? daemon.job(upload.id))?.result?.url.map { ($0 as NSString).lastPathComponent }
            switch upload.kind {
            case .put: try? FileManager.default.removeItem(atPath: nginxPath(upload.name))
            case .post: try? FileManager.default.removeItem(atPath: "\(servers.receiverDirectory)/\(upload.name)")
            case .chunked:
                if let stored { try? FileManager.default.removeItem(atPath: "\(servers.receiverDirectory)/\(stored)") }
            case .tus:
                if let stored, !upload.cancel {
                    try? FileManager.default.removeItem(atPath: "\(servers.tusDirectory)/\(stored)")
                    try? FileManager.default.removeItem(atPath: "\(servers.tusDirectory)/\(stored).info")
                }
            case .s3: break
            }
        }
    }

    /// A kill right after `cancel` returned: the cancel is journaled, but the server-side cleanup
    /// (AbortMultipartUpload, tus DELETE) may not have gone out yet. The restarted daemon must
    /// still leave nothing on the servers. Four jobs, each canceled and then killed at once, so
    /// that a daemon that forgets the cleanup is caught almost surely.
    @Test func aKillRightAfterCancelStillLeavesNothingOnTheServers() throws {
        try daemon.start()
        // Big enough to be still uploading (12 MiB/s each) after three kill-and-restarts on a
        // loaded machine; at 40 MiB the last one once finished first. All four files are made
        // before the first add: made between the adds (120 MiB of random bytes and their hash
        // each), the first job once uploaded all of its 120 MiB before the last was added.
        let files = try [Kind.s3, .tus, .s3, .tus].enumerated().map { index, kind in
            try prepare(kind, size: 120 * Self.mebibyte, label: "cancel-kill-\(index)-\(kind)", cancel: true)
        }
        // Without copies, all four start at once. Copies of big files are made one after another,
        // and tus and S3 wait for theirs: on a loaded machine the first job once ended before the
        // last had begun, and so before its cancel.
        let jobs = try files.map { try add($0, extra: ["--snapshot", "none"]) }
        let underway = try eventually(timeout: 30) {
            try jobs.allSatisfy { try daemon.job($0.id).bytesAcked >= Int64(($0.kind == .s3 ? 5 : 1) * Self.mebibyte) }
        }
        #expect(underway, "every job got going: \(daemon.log(tail: 20))")
        for upload in jobs {
            let before = try daemon.job(upload.id)
            #expect(before.state != .completed, "\(upload.name) is still uploading")
            // The raw request, and SIGKILL the moment the answer arrives.
            let answer = try CrashSupport.rpc(
                socket: daemon.socket,
                #"{"jsonrpc":"2.0","id":1,"method":"job.cancel","params":{"id":\#(upload.id.rawValue)}}"#)
            daemon.crash()
            #expect(answer.contains(#""result""#) && answer.contains("canceled"), "cancel answered: \(answer)")
            try daemon.start()
        }
        for upload in jobs {
            #expect(try daemon.job(upload.id).state == .canceled)
            switch upload.kind {
            case .s3:
                var left: [(key: String, uploadID: String)] = []
                let gone = try eventually(timeout: 15) {
                    left = try s3.uploads(prefix: s3Key(upload.name))
                    return left.isEmpty
                }
                #expect(gone, "job \(upload.id), killed right after cancel, left its S3 multipart upload: \(left)")
            default:
                var left: [String: Int] = [:]
                let gone = try eventually(timeout: 15) {
                    left = [:]
                    for id in try CrashSupport.tusUploads(named: upload.name, in: servers.tusDirectory) {
                        let status = try CrashSupport.tusHead(servers.tusURL + id)
                        if status != 404 && status != 410 { left[id] = status }
                    }
                    return left.isEmpty
                }
                #expect(
                    gone,
                    "job \(upload.id), killed right after cancel, left its tus upload (HEAD status by upload): \(left)")
            }
            try? FileManager.default.removeItem(atPath: upload.path)
        }
    }

    /// tus: every upload the server holds under the canceled file's name is gone (HEAD 404/410);
    /// s3: no multipart upload in progress and no object; put: no file in nginx's root.
    private func expectCanceledLeftNothing(tus: Upload, s3Upload: Upload, put: Upload) throws {
        var tusLeft: [String: Int] = [:]
        let tusGone = try eventually(timeout: 15) {
            tusLeft = [:]
            for upload in try CrashSupport.tusUploads(named: tus.name, in: servers.tusDirectory) {
                let status = try CrashSupport.tusHead(servers.tusURL + upload)
                if status != 404 && status != 410 { tusLeft[upload] = status }
            }
            return tusLeft.isEmpty
        }
        #expect(
            tusGone, "the canceled tus job \(tus.id) left uploads on the server (HEAD status by upload): \(tusLeft)")

        var s3Left: [(key: String, uploadID: String)] = []
        let s3Gone = try eventually(timeout: 15) {
            s3Left = try s3.uploads(prefix: s3Key(s3Upload.name))
            return s3Left.isEmpty
        }
        #expect(s3Gone, "the canceled S3 job \(s3Upload.id) left multipart uploads: \(s3Left)")
        #expect(try s3.status(of: s3Key(s3Upload.name)) == 404, "no object for the canceled S3 job")

        #expect(
            !FileManager.default.fileExists(atPath: nginxPath(put.name)), "the canceled PUT left a file in nginx's root"
        )
    }
}

/// The crash loop runs every network protocol uploadd has (`file` copies locally: PowerLossTests
/// cuts the power under it): a protocol added to `UploadProtocol` joins the loop or fails here.
@Suite struct CrashLoopProtocols {
    @Test func everyNetworkProtocolIsInTheLoop() {
        let expected = Set(UploadProtocol.allCases.map(\.rawValue)).subtracting(["auto", "file"])
        #expect(Set(CrashLoopTests.Kind.allCases.map(\.rawValue)) == expected)
    }
}
