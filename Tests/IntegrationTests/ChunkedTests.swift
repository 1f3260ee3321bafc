import Foundation
import Testing
import UploadCore
import UploadWire

/// The chunked block protocol against the reference receiver (contrib/receiver/receiver.py). Each
/// test has a receiver of its own (ReceiverProcess), so its counters count this test's blocks only,
/// whatever other suites send to the shared one.
@Suite(.serialized)
final class ChunkedTests {
    let receiver: ReceiverProcess
    let daemon: DaemonProcess
    let files: URL
    static let block = 1 << 20

    init() throws {
        receiver = try ReceiverProcess(name: "chunked-receiver")
        daemon = try DaemonProcess(name: "chunked", config: "[daemon]\ntransfers = 1\nrate_limit = 30M\n")
        files = try TestPaths.scratch("chunked-files")
        try daemon.start()
    }

    deinit {
        daemon.stop()
        receiver.stop()
    }

    /// Adds `path` as a chunked upload to this test's receiver, with its token (or `token`) in the `token` field.
    private func add(_ path: String, token: String? = nil) throws -> JobID {
        try daemon.add(
            [path], to: "\(receiver.url)/upload",
            ["--protocol", "chunked", "--field", "token=\(token ?? receiver.token)"])[0]
    }

    private func storedFile(for job: JobInfo) throws -> String {
        let url = try #require(job.result?.url)
        #expect(url.hasPrefix("\(receiver.url)/files/"))
        return receiver.storedFile(resultURL: url)
    }

    /// The receiver accepted each of the `blocks` blocks once, plus at most `resent` again (and
    /// counted those as duplicates).
    private func expectBlocks(
        _ blocks: Int, resentAtMost resent: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let stats = try receiver.stats()
        let received = try #require(stats["blocks_received"], "\(stats)", sourceLocation: sourceLocation)
        let duplicates = try #require(stats["duplicate_blocks"], "\(stats)", sourceLocation: sourceLocation)
        let bytes = try #require(stats["block_bytes_received"], "\(stats)", sourceLocation: sourceLocation)
        #expect(
            received - duplicates == blocks, "every block arrives, once as new: \(stats)",
            sourceLocation: sourceLocation)
        #expect(duplicates <= resent, "re-sent blocks: \(stats)", sourceLocation: sourceLocation)
        #expect(bytes == received * Self.block, "\(stats)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [0, 1, block, block + 1, 101 << 20])
    func everySizeArrivesIntact(size: Int) throws {
        let path = files.appendingPathComponent("block-\(size).mp4").path
        try makeRandomFile(at: path, size: size)
        let job = try daemon.waitFor(try add(path), timeout: 240)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.protocol == .chunked)
        let stored = try storedFile(for: job)
        #expect(stored.hasSuffix(".mp4"), "the suffix field names the extension")
        #expect(try Command.sha256(stored) == Command.sha256(path))
        let stats = try receiver.stats()
        #expect(stats["blocks_received"] == max(1, (size + Self.block - 1) / Self.block), "\(stats)")
        #expect(stats["duplicate_blocks"] == 0, "\(stats)")
        #expect(stats["block_bytes_received"] == size, "\(stats)")
    }

    @Test func aKilledDaemonResendsAtMostOneBlock() throws {
        let size = 40 << 20
        let path = files.appendingPathComponent("crash.bin").path
        try makeRandomFile(at: path, size: size)
        let id = try add(path)
        #expect(eventually(timeout: 20) { ((try? daemon.job(id))?.bytesAcked ?? 0) >= Int64(10 << 20) })
        daemon.crash()
        try daemon.start()
        let job = try daemon.waitFor(id, timeout: 120)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        try expectBlocks(size / Self.block, resentAtMost: 1)
    }

    @Test func pauseAndResumeContinueFromTheLastBlock() throws {
        let size = 30 << 20
        let path = files.appendingPathComponent("pause.bin").path
        try makeRandomFile(at: path, size: size)
        let id = try add(path)
        #expect(eventually(timeout: 20) { ((try? daemon.job(id))?.bytesAcked ?? 0) >= Int64(5 << 20) })
        #expect(try daemon.ctl(["pause", "\(id)"]).status == 0)
        let acked = try daemon.job(id).bytesAcked
        #expect(acked > 0 && acked < Int64(size))
        #expect(try daemon.ctl(["resume", "\(id)"]).status == 0)
        let job = try daemon.waitFor(id, timeout: 120)
        #expect(job.state == .completed)
        #expect(try Command.sha256(storedFile(for: job)) == Command.sha256(path))
        try expectBlocks(size / Self.block, resentAtMost: 1)
    }

    @Test func aWrongTokenFailsWithTheServersMessage() throws {
        let path = files.appendingPathComponent("bad.bin").path
        try makeRandomFile(at: path, size: 1000)
        let wrong = "wrong-\(UUID().uuidString)"
        let job = try daemon.waitFor(try add(path, token: wrong))
        #expect(job.state == .failed)
        #expect(job.error?.status == 401, "\(String(describing: job.error))")
        #expect(
            job.error?.message.contains("wrong token") == true,
            "the receiver's message: \(String(describing: job.error))")
        #expect(job.error?.message.contains(wrong) == false, "the token is not repeated")
        #expect(job.attempts == 1, "a 401 is not retried")
        let stats = try receiver.stats()
        #expect(stats["blocks_received"] == 0 && stats["upload_requests"] == 1, "\(stats)")
        let stored = try FileManager.default.contentsOfDirectory(atPath: receiver.filesDirectory.path).filter {
            !$0.hasPrefix(".")
        }
        #expect(stored.isEmpty, "\(stored)")
    }
}
