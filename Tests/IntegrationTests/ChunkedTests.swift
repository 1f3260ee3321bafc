import Foundation
import Testing
import UploadCore

/// The chunked block protocol against the reference receiver (contrib/receiver/receiver.py).
@Suite(.serialized)
final class ChunkedTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL
    static let block = 1 << 20

    init() throws {
        servers = try TestServers.load()
        daemon = try DaemonProcess(name: "chunked", config: "[daemon]\ntransfers = 1\nrate_limit = 30M\n")
        files = try TestPaths.scratch("chunked-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    private func receiverStats() throws -> [String: Int] {
        let result = try Command.run("/usr/bin/curl", ["-s", "\(servers.receiverURL)/stats"])
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Int] ?? [:]
    }

    private func storedFile(for job: JobInfo) throws -> String {
        let url = try #require(job.result?.url)
        #expect(url.hasPrefix("\(servers.receiverURL)/files/"))
        return "\(servers.receiverDirectory)/\((url as NSString).lastPathComponent)"
    }

    @Test(arguments: [0, 1, block, block + 1, 101 << 20])
    func everySizeArrivesIntact(size: Int) throws {
        let path = files.appendingPathComponent("block-\(size).mp4").path
        try makeRandomFile(at: path, size: size)
        let ids = try daemon.add([path], to: "\(servers.receiverURL)/upload", ["--protocol", "chunked"])
        let job = try daemon.waitFor(ids[0], timeout: 240)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.protocol == .chunked)
        let stored = try storedFile(for: job)
        #expect(stored.hasSuffix(".mp4"), "the suffix field names the extension")
        #expect(try Command.sha256(stored) == Command.sha256(path))
    }

    @Test func aKilledDaemonResendsAtMostOneBlock() throws {
        let size = 40 << 20
        let path = files.appendingPathComponent("crash.bin").path
        try makeRandomFile(at: path, size: size)
        _ = try Command.run("/usr/bin/curl", ["-s", "-X", "POST", "\(servers.receiverURL)/stats/reset"])
        let ids = try daemon.add([path], to: "\(servers.receiverURL)/upload", ["--protocol", "chunked"])
        #expect(eventually(timeout: 20) { ((try? daemon.job(ids[0]))?.bytesAcked ?? 0) >= Int64(10 << 20) })
        daemon.crash()
        try daemon.start()
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        let stats = try receiverStats()
        let blocks = size / Self.block
        #expect((stats["blocks_received"] ?? 0) <= blocks + 1, "re-sent blocks: \(stats)")
        #expect((stats["duplicate_blocks"] ?? 0) <= 1, "\(stats)")
    }

    @Test func pauseAndResumeContinueFromTheLastBlock() throws {
        let size = 30 << 20
        let path = files.appendingPathComponent("pause.bin").path
        try makeRandomFile(at: path, size: size)
        _ = try Command.run("/usr/bin/curl", ["-s", "-X", "POST", "\(servers.receiverURL)/stats/reset"])
        let ids = try daemon.add([path], to: "\(servers.receiverURL)/upload", ["--protocol", "chunked"])
        #expect(eventually(timeout: 20) { ((try? daemon.job(ids[0]))?.bytesAcked ?? 0) >= Int64(5 << 20) })
        #expect(try daemon.ctl(["pause", "\(ids[0])"]).status == 0)
        let acked = try daemon.job(ids[0]).bytesAcked
        #expect(acked > 0 && acked < Int64(size))
        #expect(try daemon.ctl(["resume", "\(ids[0])"]).status == 0)
        let job = try daemon.waitFor(ids[0], timeout: 120)
        #expect(job.state == .completed)
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        #expect((try receiverStats()["duplicate_blocks"] ?? 0) <= 1)
    }

    @Test func aWrongTokenFailsWithTheServersMessage() throws {
        // The receiver started by the tests takes any token; a block for an unknown upload is refused.
        let path = files.appendingPathComponent("bad.bin").path
        try makeRandomFile(at: path, size: 1000)
        let ids = try daemon.add([path], to: "\(servers.receiverURL)/nothing-here", ["--protocol", "chunked"])
        let job = try daemon.waitFor(ids[0])
        #expect(job.state == .failed)
        #expect(job.error?.status == 404)
        #expect(job.attempts == 1)
    }
}
