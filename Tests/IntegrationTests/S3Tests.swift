import Foundation
import TestSupport
import Testing
import UploadCore
import UploadWire

/// S3 uploads to a real SeaweedFS that checks SigV4 signatures, checked by SHA-256 of the object
/// read back. Parts are 5 MiB (`--chunk-size 5M`) and files from 1 MiB go up in parts, so that the
/// edges (one part exactly, one byte more) cost little; a 20 MiB/s rate limit keeps a 60 MiB file
/// in flight long enough to pause, kill or cancel it mid-file.
@Suite(.serialized)
final class S3Tests {
    let s3: S3TestServer
    let daemon: DaemonProcess
    let files: URL
    /// A fresh key prefix for each test, under the remote's `itest/`.
    let prefix = "run-\(UUID().uuidString.prefix(8))/"
    static let mebibyte = 1 << 20
    static let partSize = 5 << 20

    init() throws {
        let servers = try TestServers.load()
        guard let s3 = servers.s3 else { throw TestServers.Missing(key: "UPLOADD_TEST_S3_ENDPOINT") }
        self.s3 = s3
        files = try TestPaths.scratch("s3-files")
        let secret = files.appendingPathComponent("s3-secret").path
        let wrongSecret = files.appendingPathComponent("s3-wrong-secret").path
        try "\(s3.secretKey)\n".write(toFile: secret, atomically: true, encoding: .utf8)
        try "not-\(s3.secretKey)\n".write(toFile: wrongSecret, atomically: true, encoding: .utf8)
        func remote(_ name: String, secretFile: String, extra: String = "") -> String {
            """
            [remote \(name)]
            protocol = s3
            url = s3://\(s3.bucket)/itest/
            endpoint = \(s3.endpoint)
            region = \(s3.region)
            access_key_id = \(s3.accessKey)
            secret_access_key_file = \(secretFile)
            multipart_threshold = 1M
            \(extra)

            """
        }
        let config =
            "[daemon]\ntransfers = 2\nrate_limit = 20M\nretry_base_delay = 100\n\n"
            + remote("s3test", secretFile: secret)
            + remote("s3unsigned", secretFile: secret, extra: "sign_payload = false")
            + remote("s3wrong", secretFile: wrongSecret)
        daemon = try DaemonProcess(name: "s3", config: config)
        try daemon.start()
    }

    deinit { daemon.stop() }

    func file(_ name: String, size: Int) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        return path
    }

    /// The object key a file gets under `s3test:PREFIX`.
    func key(_ path: String) -> String { "itest/\(prefix)\((path as NSString).lastPathComponent)" }

    /// Log lines of the daemon naming a job, from `offset` on.
    func logLines(_ id: JobID, containing text: String, from offset: Int = 0) -> [Substring] {
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        let tail = log.utf8.count > offset ? String(log.utf8.dropFirst(offset)) ?? "" : ""
        return tail.split(separator: "\n").filter { $0.contains("job \(id): ") && $0.contains(text) }
    }

    func logSize() -> Int { ((try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? "").utf8.count }

    func waitForAcked(_ id: JobID, atLeast bytes: Int64) throws {
        let reached = try eventually(timeout: 60) { try daemon.job(id).bytesAcked >= bytes }
        guard reached else {
            throw TestFailure("job \(id) never got \(bytes) bytes acknowledged: \(try daemon.job(id))")
        }
    }

    @Test func filesOfEverySizeArriveIntact() throws {
        let sizes = [0, 1, Self.partSize, Self.partSize + 1, 101 * Self.mebibyte + 3]
        let paths = try sizes.enumerated().map { try file("sized-\($0.offset)-\($0.element).bin", size: $0.element) }
        let ids = try daemon.add(paths, to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "300"], timeout: 320)
        #expect(wait.status == 0, "\(wait)\n\(daemon.log(tail: 30))")
        for (index, (id, path)) in zip(ids, paths).enumerated() {
            let job = try daemon.job(id)
            #expect(job.state == .completed, "\(String(describing: job.error))")
            #expect(job.protocol == .s3)
            #expect(job.bytesAcked == job.bytesTotal)
            #expect(job.result?.url == "\(s3.endpoint)/\(s3.bucket)/\(key(path))")
            #expect(try s3.sha256(of: key(path)) == Command.sha256(path), "\(path) differs on the server")
            let multipart = logLines(id, containing: "started S3 multipart upload")
            let completed = logLines(id, containing: "completed the S3 upload")
            switch sizes[index] {
            case 0, 1:
                #expect(multipart.isEmpty, "a file below multipart_threshold is one PutObject")
            case Self.partSize:
                #expect(completed.count == 1 && completed[0].hasSuffix("in 1 parts"), "\(completed)")
            case Self.partSize + 1:
                #expect(completed.count == 1 && completed[0].hasSuffix("in 2 parts"), "\(completed)")
            default:
                #expect(completed.count == 1 && completed[0].hasSuffix("in 21 parts"), "\(completed)")
            }
        }
        #expect(try s3.uploads(prefix: "itest/\(prefix)").isEmpty, "every multipart upload was completed")
    }

    @Test func anUnsignedPayloadIsAccepted() throws {
        let path = try file("unsigned.bin", size: 6 * Self.mebibyte + 5)
        let ids = try daemon.add([path], to: "s3unsigned:\(prefix)", ["--chunk-size", "5M"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try s3.sha256(of: key(path)) == Command.sha256(path))
    }

    @Test func pauseMidFileThenResumeContinuesFromTheServersParts() throws {
        let path = try file("pausable.bin", size: 60 * Self.mebibyte)
        let ids = try daemon.add([path], to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        try waitForAcked(ids[0], atLeast: Int64(2 * Self.partSize))
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0)
        let paused = try daemon.job(ids[0])
        #expect(paused.state == .paused)
        #expect(paused.bytesAcked < paused.bytesTotal, "paused mid-file")
        usleep(500_000)
        #expect(try daemon.job(ids[0]).state == .paused, "a paused job stays paused")
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let done = try daemon.waitFor(ids[0])
        #expect(done.state == .completed, "\(String(describing: done.error))")
        #expect(done.attempts == 2, "the pause stopped the first attempt")
        let resumed = logLines(ids[0], containing: "resuming the S3 upload")
        #expect(resumed.count == 1, "\(resumed)")
        // Parts acknowledged before the pause were not sent again.
        let held = resumed.first.flatMap { line in
            line.split(separator: ":").last?.split(separator: " ").first.flatMap { Int($0) }
        }
        #expect((held ?? 0) * Self.partSize >= Int(paused.bytesAcked), "\(resumed)")
        // No part went up twice: each part number is logged as uploaded at most once.
        let numbers = logLines(ids[0], containing: "uploaded S3 part").compactMap { line in
            line.components(separatedBy: "uploaded S3 part ").last?.split(separator: " ").first.flatMap { Int($0) }
        }
        #expect(Set(numbers).count == numbers.count, "parts sent: \(numbers)")
        #expect(numbers.count + (held ?? 0) >= 12, "parts sent: \(numbers), held: \(String(describing: held))")
        #expect(try s3.sha256(of: key(path)) == Command.sha256(path))
    }

    @Test func killMinus9MidFileResumesAndResendsAtMostOnePart() throws {
        let path = try file("crash.bin", size: 60 * Self.mebibyte)
        let total = 12
        let ids = try daemon.add([path], to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        try waitForAcked(ids[0], atLeast: Int64(3 * Self.partSize))
        daemon.crash()
        let loggedBefore = logLines(ids[0], containing: "uploaded S3 part").count
        let uploads = try s3.uploads(prefix: key(path))
        #expect(uploads.count == 1, "one multipart upload in progress: \(uploads)")
        let held = try uploads.first.map { try s3.partCount(key: $0.key, uploadID: $0.uploadID) } ?? 0
        #expect(held >= loggedBefore && held <= loggedBefore + 1, "held \(held), logged \(loggedBefore)")
        #expect(held < total, "the crash came mid-file")

        let restartOffset = logSize()
        try daemon.start()
        let done = try daemon.waitFor(ids[0], timeout: 180)
        #expect(done.state == .completed, "\(String(describing: done.error))")
        #expect(try s3.sha256(of: key(path)) == Command.sha256(path))
        let sentAfter = logLines(ids[0], containing: "uploaded S3 part", from: restartOffset).count
        // Only the parts the server did not hold went again: at most the one in flight at the crash
        // had been (partly) sent before.
        #expect(
            sentAfter == total - held, "sent \(sentAfter) parts after the restart; the server held \(held) of \(total)")
        #expect(sentAfter <= total - loggedBefore)
        #expect(try s3.uploads(prefix: key(path)).isEmpty)
    }

    @Test func anUploadTheServerForgotStartsOver() throws {
        let path = try file("forgotten.bin", size: 40 * Self.mebibyte)
        let ids = try daemon.add([path], to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        try waitForAcked(ids[0], atLeast: Int64(Self.partSize))
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0)
        let uploads = try s3.uploads(prefix: key(path))
        #expect(uploads.count == 1)
        for upload in uploads { try s3.abort(key: upload.key, uploadID: upload.uploadID) }
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let done = try daemon.waitFor(ids[0])
        #expect(done.state == .completed, "\(String(describing: done.error))")
        let history = try daemon.ctl(["show", "\(ids[0])"]).stdout
        #expect(history.contains("no longer knows the S3 upload"), "\(history)")
        #expect(try s3.sha256(of: key(path)) == Command.sha256(path))
    }

    @Test func cancelLeavesNoMultipartUploadBehind() throws {
        let path = try file("canceled.bin", size: 60 * Self.mebibyte)
        let ids = try daemon.add([path], to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        try waitForAcked(ids[0], atLeast: Int64(Self.partSize))
        #expect(try s3.uploads(prefix: key(path)).count == 1)
        #expect(try daemon.ctl(["cancel", "\(ids[0])"]).status == 0)
        #expect(try daemon.job(ids[0]).state == .canceled)
        var left: [(key: String, uploadID: String)] = []
        let aborted = try eventually(timeout: 20) {
            left = try s3.uploads(prefix: key(path))
            return left.isEmpty
        }
        #expect(aborted, "ListMultipartUploads still lists \(left)")
        #expect(try s3.status(of: key(path)) == 404, "no object either")
    }

    @Test func aWrongSecretFailsFastWithTheServersMessage() throws {
        let small = try file("denied.bin", size: 10_000)
        let big = try file("denied-big.bin", size: 6 * Self.mebibyte)
        let started = Date()
        let ids = try daemon.add([small, big], to: "s3wrong:\(prefix)")
        let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "30"])
        #expect(wait.status == 1)
        for id in ids {
            let job = try daemon.job(id)
            #expect(job.state == .failed)
            #expect(job.attempts == 1, "a 403 is not retried")
            #expect(job.error?.status == 403)
            #expect(
                job.error?.message.contains("403 SignatureDoesNotMatch: The request signature we calculated") == true,
                "\(String(describing: job.error))")
        }
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(wait.stderr.contains("SignatureDoesNotMatch"), "wait names the failure: \(wait)")
        #expect(try s3.uploads(prefix: "itest/\(prefix)").isEmpty)
    }

    @Test func deleteRemovesTheObject() throws {
        let small = try file("to-delete.bin", size: 50_000)
        let big = try file("to-delete-big.bin", size: 6 * Self.mebibyte)
        let ids = try daemon.add([small, big], to: "s3test:\(prefix)", ["--chunk-size", "5M"])
        for id in ids { #expect(try daemon.waitFor(id).state == .completed) }
        #expect(try s3.status(of: key(small)) == 200)
        #expect(try s3.status(of: key(big)) == 200)
        let delete = try daemon.ctl(["delete"] + ids.map(\.description))
        #expect(delete.status == 0, "\(delete)")
        #expect(try s3.status(of: key(small)) == 404)
        #expect(try s3.status(of: key(big)) == 404)
    }

    /// An upload that completed on the server just before the daemon died, before it could journal
    /// that: at the next start the upload ID is gone, the object is there with this file's parts
    /// (its multipart ETag and composite CRC32C), and nothing is sent again.
    @Test func anUploadCompletedBeforeTheCrashIsNotSentAgain() throws {
        let path = try file("done-before-crash.bin", size: 12 * Self.mebibyte)
        // From the original: a completed job's cached copy is gone, where a crash would have kept it.
        let id = try daemon.add([path], to: "s3test:\(prefix)", ["--chunk-size", "5M", "--snapshot", "none"])[0]
        #expect(try daemon.waitFor(id).state == .completed)
        daemon.stop()
        // What the journal would hold had the daemon died right after CompleteMultipartUpload: the
        // job still running, with the upload's (now unknown) ID.
        let journalPath = daemon.stateDirectory + "/journal"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: journalPath)))
        var state = JournalState()
        for record in try JournalFormat.decode(bytes).records { state.apply(record) }
        var job = try #require(state.jobs[id])
        job.state = .running
        job.result = nil
        job.bytesAcked = 0
        job.checkpoint = .s3(uploadID: "gone-\(UUID().uuidString)", key: key(path), partSize: Int64(Self.partSize))
        bytes += JournalFormat.encode([.job(job)])
        try Data(bytes).write(to: URL(fileURLWithPath: journalPath))

        try daemon.start()
        let again = try daemon.waitFor(id)
        #expect(again.state == .completed, "\(String(describing: again.error))")
        #expect(
            again.history?.contains { $0.message.contains("had completed before uploadd stopped; not sent again") }
                == true,
            "\(String(describing: again.history))")
        #expect(again.attempts == job.attempts + 1)
    }
}
