import Foundation
import Testing
import UploadCore
import UploadWire

/// tus 1.0 against tuspyserver under uvicorn.
@Suite(.serialized)
final class TusTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL
    static let chunk = 1 << 20

    init() throws {
        servers = try TestServers.load()
        daemon = try DaemonProcess(name: "tus", config: "[daemon]\ntransfers = 1\nrate_limit = 30M\n")
        files = try TestPaths.scratch("tus-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    /// The server's copy of an upload: tuspyserver names its data file after the upload ID.
    private func storedFile(for job: JobInfo) throws -> String {
        let url = try #require(job.result?.url)
        #expect(url.hasPrefix(servers.tusURL), "\(url)")
        return "\(servers.tusDirectory)/\((url as NSString).lastPathComponent)"
    }

    /// The `.info` file tuspyserver keeps for the upload of a file with this name.
    private func uploadInfoFile(named name: String) throws -> String? {
        let directory = servers.tusDirectory
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".info") {
            let info = try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
            if info.contains(name) { return file }
        }
        return nil
    }

    private func head(_ url: String) throws -> Int {
        let result = try Command.run(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-I", "-H", "Tus-Resumable: 1.0.0", url])
        return Int(result.stdout) ?? 0
    }

    @Test(arguments: [0, 1, chunk, chunk + 1, 105 << 20])
    func everySizeArrivesIntact(size: Int) throws {
        let path = files.appendingPathComponent("tus-\(size).bin").path
        try makeRandomFile(at: path, size: size)
        let ids = try daemon.add([path], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        let job = try daemon.waitFor(ids[0], timeout: 240)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        let info = try String(contentsOfFile: try storedFile(for: job) + ".info", encoding: .utf8)
        #expect(info.contains("tus-\(size).bin"), "filename metadata was sent: \(info)")
    }

    /// `rate_limit` holds for an upload sent in many requests: each 1 MiB chunk once started with
    /// a full bucket of its own, a tenth of a second's worth at 12M, and went whole at the
    /// server's speed (the crash loop's 80 MiB tus upload ended before it could be canceled).
    @Test func rateLimitHoldsAcrossChunks() throws {
        let limited = try DaemonProcess(name: "tus-rate", config: "[daemon]\ntransfers = 1\nrate_limit = 12M\n")
        defer { limited.stop() }
        try limited.start()
        let path = files.appendingPathComponent("rate-limited.bin").path
        try makeRandomFile(at: path, size: 36 << 20)
        let started = Date()
        let ids = try limited.add([path], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        let job = try limited.waitFor(ids[0], timeout: 120)
        let seconds = Date().timeIntervalSince(started)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        // 36 MiB at 12 MiB/s is 3 s; a busy machine only makes it slower, so the bound is firm.
        #expect(seconds >= 2.6, "36 MiB under rate_limit = 12M took \(seconds) s")
        print("tus 36 MiB in 1 MiB chunks under rate_limit = 12M: \(String(format: "%.2f", seconds)) s")
    }

    @Test func autoDetectsTusFromOptions() throws {
        let path = files.appendingPathComponent("auto.bin").path
        try makeRandomFile(at: path, size: 3 << 20)
        let ids = try daemon.add([path], to: servers.tusURL)
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.protocol == .tus)
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
    }

    @Test func aKilledDaemonResumesFromTheServersOffset() throws {
        let size = 40 << 20
        let name = "crash-\(UUID().uuidString.prefix(8)).bin"
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: size)
        let ids = try daemon.add([path], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        #expect(eventually(timeout: 20) { ((try? daemon.job(ids[0]))?.bytesAcked ?? 0) >= Int64(10 << 20) })
        let ackedBeforeCrash = try daemon.job(ids[0]).bytesAcked
        daemon.crash()
        try daemon.start()
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        // One upload, resumed from the server's offset (HEAD), not from zero and not as a new upload.
        let uploads = try FileManager.default.contentsOfDirectory(atPath: servers.tusDirectory).filter {
            $0.hasSuffix(".info")
        }
        let sameName = try uploads.filter {
            try String(contentsOfFile: "\(servers.tusDirectory)/\($0)", encoding: .utf8).contains(name)
        }
        #expect(sameName.count == 1, "no orphaned second upload: \(sameName)")
        let resumedAt = try #require(
            job.history?.compactMap { event -> Int64? in
                guard event.message.hasPrefix("resuming at byte ") else { return nil }
                return Int64(event.message.dropFirst("resuming at byte ".count).prefix { $0.isNumber })
            }.last, "the job's history says where it resumed")
        #expect(resumedAt >= ackedBeforeCrash, "nothing the server had acknowledged was sent again")
    }

    /// A pause and a resume continue the same upload on the server from where it stopped: one
    /// upload there, resumed at the server's offset (HEAD), at or past what was acknowledged.
    @Test func pauseAndResumeContinue() throws {
        let name = "pause-\(UUID().uuidString.prefix(8)).bin"
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: 30 << 20)
        let ids = try daemon.add([path], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        #expect(eventually(timeout: 20) { ((try? daemon.job(ids[0]))?.bytesAcked ?? 0) >= Int64(5 << 20) })
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0)
        let acked = try daemon.job(ids[0]).bytesAcked
        try #require(acked > 0 && acked < 30 << 20, "paused mid-way: \(acked) bytes acknowledged")
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        let uploads = try CrashSupport.tusUploads(named: name, in: servers.tusDirectory)
        #expect(uploads.count == 1, "one upload on the server, continued, not a second one: \(uploads)")
        let resumedAt = try #require(
            job.history?.compactMap { event -> Int64? in
                guard event.message.hasPrefix("resuming at byte ") else { return nil }
                return Int64(event.message.dropFirst("resuming at byte ".count).prefix { $0.isNumber })
            }.last, "the job's history says where it resumed: \(String(describing: job.history))")
        #expect(resumedAt >= acked, "resumed at byte \(resumedAt); \(acked) were acknowledged before the pause")
        #expect(resumedAt < 30 << 20, "resumed at byte \(resumedAt): past the end?")
    }

    @Test func cancelTerminatesTheUploadOnTheServer() throws {
        let name = "cancel-\(UUID().uuidString.prefix(8)).bin"
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: 30 << 20)
        let ids = try daemon.add([path], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M"])
        #expect(eventually(timeout: 20) { ((try? daemon.job(ids[0]))?.bytesAcked ?? 0) > 0 })
        let info = try #require(try uploadInfoFile(named: name))
        let uploadURL = servers.tusURL + info.replacingOccurrences(of: ".info", with: "")
        #expect(try head(uploadURL) == 200)
        #expect(try daemon.ctl(["cancel", "\(ids[0])"]).status == 0)
        #expect(
            eventually(timeout: 10) {
                ((try? self.head(uploadURL)) ?? 0) == 404 || ((try? self.head(uploadURL)) ?? 0) == 410
            })
    }

    @Test func deleteTerminatesACompletedUpload() throws {
        let path = files.appendingPathComponent("delete.bin").path
        try makeRandomFile(at: path, size: 100_000)
        let ids = try daemon.add([path], to: servers.tusURL, ["--protocol", "tus"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .completed)
        let url = try #require(job.result?.url)
        #expect(try head(url) == 200)
        #expect(try daemon.ctl(["delete", "\(ids[0])"]).status == 0)
        let status = try head(url)
        #expect(status == 404 || status == 410)
    }
}
