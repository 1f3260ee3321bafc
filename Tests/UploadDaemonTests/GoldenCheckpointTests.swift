import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// The checkpoints in the journals of uploadd 0.1, 0.2 and early 0.3 (Tests/Fixtures/journals, never
/// regenerated), read by today's protocols: a job paused mid-upload under a released daemon
/// resumes where the server has it after an upgrade.
struct GoldenCheckpointTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/journals")

    @Test(arguments: [
        "format1", "format2", "format3", "format4", "format5", "format1/compacted", "format2/compacted",
        "format3/compacted", "format4/compacted", "format5/compacted",
    ])
    func eachProtocolReadsTheCheckpointsReleasedDaemonsWrote(folder: String) throws {
        let directory = Self.fixtures.appendingPathComponent(folder)
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent("journal")))
        let expected = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("expected.json")))
                as? [String: Any])
        var state = JournalState()
        for record in try JournalFormat.decode(bytes).records { state.apply(record) }
        var kinds: Set<String> = []
        for expectedJob in try #require(expected["jobs"] as? [[String: Any]]) {
            let id = JobID(UInt64(try #require(expectedJob["id"] as? Int)))
            let job = try #require(state.jobs[id])
            guard let checkpoint = expectedJob["checkpoint"] as? [String: Any] else {
                #expect(job.checkpoint == nil, "job \(id)")
                continue
            }
            let kind = try #require(checkpoint["kind"] as? String)
            kinds.insert(kind)
            switch kind {
            case "tus":
                let tus = try #require(job.checkpoint(as: TusCheckpoint.self), "job \(id)")
                #expect(tus.uploadURL == checkpoint["upload_url"] as? String)
                #expect(tus.expires == checkpoint["expires"] as? String)
            case "s3":
                let s3 = try #require(job.checkpoint(as: S3Checkpoint.self), "job \(id)")
                #expect(s3.uploadID == checkpoint["upload_id"] as? String)
                #expect(s3.key == checkpoint["key"] as? String)
                #expect(Int(s3.partSize) == checkpoint["part_size"] as? Int)
            case "chunked":
                let chunked = try #require(job.checkpoint(as: ChunkedCheckpoint.self), "job \(id)")
                #expect(chunked.upToken == checkpoint["up_token"] as? String)
                #expect(Int(chunked.blockSize) == checkpoint["block_size"] as? Int)
                #expect(Int(chunked.blocksAcknowledged) == checkpoint["blocks_acknowledged"] as? Int)
            default:
                Issue.record("job \(id): unexpected checkpoint kind \(kind)")
            }
            // Each protocol reads only its own kind.
            #expect(
                [
                    job.checkpoint(as: TusCheckpoint.self) != nil, job.checkpoint(as: S3Checkpoint.self) != nil,
                    job.checkpoint(as: ChunkedCheckpoint.self) != nil,
                ].filter { $0 }.count == 1)
        }
        if !folder.hasSuffix("compacted") { #expect(kinds == ["tus", "s3", "chunked"]) }
    }
}
