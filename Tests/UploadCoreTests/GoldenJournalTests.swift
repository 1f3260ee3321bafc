import Foundation
import TestSupport
import Testing
import UploadWire

@testable import UploadCore

/// Journals written by the released daemons (Tests/Fixtures/journals, never regenerated), replayed
/// by today's code and compared field by field with what each release itself read from them.
@Suite("Golden journals of every released format replay as their release read them")
struct GoldenJournalTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/journals")

    /// Each released file: its folder, and the format version in its header.
    static let files: [(folder: String, version: UInt32)] = [
        ("format1", 1), ("format1/compacted", 1), ("format2", 2), ("format2/compacted", 2), ("format3", 3),
        ("format3/compacted", 3), ("format4", 4), ("format4/compacted", 4), ("format5", 5), ("format5/compacted", 5),
    ]

    static func load(_ folder: String) throws -> (bytes: [UInt8], expected: [String: Any]) {
        let directory = fixtures.appendingPathComponent(folder)
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent("journal")))
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.appendingPathComponent("expected.json")))
        return (bytes, try #require(json as? [String: Any]))
    }

    @Test(arguments: files)
    func replaysWithoutDamageAndWithEveryField(folder: String, version: UInt32) throws {
        let (bytes, expected) = try Self.load(folder)
        let contents = try JournalFormat.decode(bytes)
        #expect(contents.version == version)
        #expect(contents.damage == nil)
        #expect(contents.validLength == bytes.count)
        #expect(contents.records.count == expected["record_count"] as? Int)
        #expect(!contents.records.contains { if case .foreign = $0 { true } else { false } })
        var state = JournalState()
        for record in contents.records { state.apply(record) }
        #expect(state.nextID == UInt64(try #require(expected["next_id"] as? Int)))
        let jobs = try #require(expected["jobs"] as? [[String: Any]])
        #expect(state.jobs.count == jobs.count)
        for expectedJob in jobs {
            let id = JobID(UInt64(try #require(expectedJob["id"] as? Int)))
            let job = try #require(state.jobs[id], "job \(id) of \(folder) is missing")
            try Self.check(job, against: expectedJob, in: folder)
        }
    }

    /// An old journal upgraded to today's format holds exactly the same queue.
    @Test(arguments: files)
    func upgradesToTheCurrentFormatWithNothingLost(folder: String, version: UInt32) throws {
        let (bytes, _) = try Self.load(folder)
        var old = JournalState()
        for record in try JournalFormat.decode(bytes).records { old.apply(record) }
        let rewritten = JournalFormat.header() + JournalFormat.encode(old.compactedRecords())
        let contents = try JournalFormat.decode(rewritten)
        #expect(contents.version == JournalFormat.version)
        #expect(contents.damage == nil)
        var upgraded = JournalState()
        for record in contents.records { upgraded.apply(record) }
        #expect(upgraded.jobs == old.jobs)
        #expect(upgraded.nextID == old.nextID)
    }

    /// Today's encoder writes, record for record, the very bytes that the daemon which wrote the
    /// frozen journal of the current format wrote: a job always encodes to the same bytes.
    @Test func recordsOfTheCurrentFormatEncodeToTheBytesTheFrozenJournalHolds() throws {
        let (bytes, _) = try Self.load("format5")
        #expect(JournalFormat.version == 5, "freeze a journal of the new format and check it here")
        let records = try JournalFormat.decode(bytes).records
        #expect(records.count > 100)
        #expect(JournalFormat.header() + JournalFormat.encode(records) == bytes)
    }

    /// Every checkpoint kind and every job state is in the fixtures, so the checks above cover them.
    @Test func theFixturesCoverEveryStateAndCheckpointKind() throws {
        for folder in ["format1", "format2", "format3", "format4", "format5"] {
            let (bytes, _) = try Self.load(folder)
            var state = JournalState()
            for record in try JournalFormat.decode(bytes).records { state.apply(record) }
            #expect(Set(state.jobs.values.map(\.state)) == Set(JobState.allCases), "\(folder)")
            let kinds = Set(
                state.jobs.values.compactMap { $0.checkpoint?.kind })
            #expect(kinds == ["tus", "s3", "chunked"], "\(folder)")
        }
    }

    static func check(_ job: Job, against expected: [String: Any], in folder: String) throws {
        let context = "job \(job.id) of \(folder)"
        func date(_ key: String, _ object: [String: Any]? = nil) -> Double? {
            ((object ?? expected)[key] as? [String: Any])?["reference_seconds"] as? Double
        }
        func same(_ actual: Date?, _ seconds: Double?) -> Bool {
            switch (actual, seconds) {
            case (nil, nil): return true
            case (let actual?, let seconds?): return abs(actual.timeIntervalSinceReferenceDate - seconds) < 1e-6
            default: return false
            }
        }
        #expect(job.state.rawValue == expected["state"] as? String, "\(context)")
        #expect(job.spec.source == expected["source"] as? String, "\(context)")
        #expect(job.spec.destination == expected["destination"] as? String, "\(context)")
        #expect(job.spec.uploadProtocol.rawValue == expected["protocol"] as? String, "\(context)")
        #expect(job.resolvedProtocol?.rawValue == expected["resolved_protocol"] as? String, "\(context)")
        #expect(job.spec.user == expected["user"] as? String, "\(context)")
        #expect(job.spec.chunkSize == (expected["chunk_size"] as? Int).map(Int64.init), "\(context)")
        #expect(job.spec.priority == expected["priority"] as? Int, "\(context)")
        #expect(job.spec.snapshot.rawValue == expected["snapshot_mode"] as? String, "\(context)")
        if let preparation = expected["preparation"] as? [[String: String]] {
            #expect(
                job.spec.preparation.map { [$0.step, $0.options] } == preparation.map { [$0["step"], $0["options"]] },
                "\(context)")
        } else {
            // The image SPEC of the old formats, never set by those releases, is the image step.
            #expect(
                job.spec.preparation.first { $0.step == "image" }?.options == expected["image"] as? String,
                "\(context)")
        }
        #expect(job.spec.clientToken == expected["client_token"] as? String, "\(context)")
        #expect(job.spec.metadata == expected["metadata"] as? [String: String], "\(context)")
        let pairs = { (key: String) in
            (expected[key] as? [[String: String]] ?? []).map {
                KeyValue(name: $0["name"] ?? "", value: $0["value"] ?? "")
            }
        }
        #expect(job.spec.headers == pairs("headers"), "\(context)")
        #expect(job.spec.fields == pairs("fields"), "\(context)")
        #expect(job.bytesTotal == (expected["bytes_total"] as? Int).map(Int64.init), "\(context)")
        #expect(job.bytesAcked == (expected["bytes_acked"] as? Int).map(Int64.init), "\(context)")
        #expect(job.attempts == expected["attempts"] as? Int, "\(context)")
        #expect(job.failuresWithoutProgress == expected["failures_without_progress"] as? Int, "\(context)")
        #expect(same(job.nextAttemptAt, date("next_attempt_at")), "\(context)")
        #expect(same(job.createdAt, date("created_at")), "\(context)")
        #expect(same(job.updatedAt, date("updated_at")), "\(context)")
        // Fields added by format 3 (absent from the older files' expected.json: their defaults).
        #expect(job.crashes == expected["crashes"] as? Int ?? 0, "\(context)")
        #expect(same(job.failingSince, date("failing_since")), "\(context)")
        #expect(job.spec.umask == (expected["umask"] as? Int).map(UInt32.init), "\(context)")
        // Fields added by formats 4 and 5 (absent before: their defaults).
        #expect(job.spec.batch?.rawValue == (expected["batch"] as? Int).map(UInt64.init), "\(context)")
        #expect(job.rank == (expected["rank"] as? Int).map(Int64.init), "\(context)")
        #expect(job.hookPending == expected["hook_pending"] as? Bool ?? false, "\(context)")
        // Replay counts each record of a job as a revision; only format 5's expected.json has it.
        if let revision = expected["revision"] as? Int { #expect(job.revision == UInt64(revision), "\(context)") }
        let prepared = expected["prepared"] as? [String: Any]
        #expect((job.prepared == nil) == (prepared == nil), "\(context)")
        if let made = job.prepared, let prepared {
            #expect(made.path == prepared["path"] as? String, "\(context)")
            #expect(made.size == (prepared["size"] as? Int).map(Int64.init), "\(context)")
            #expect(made.sha256 == prepared["sha256"] as? String, "\(context)")
            #expect(made.fileName == prepared["file_name"] as? String, "\(context)")
            #expect(made.contentType == prepared["content_type"] as? String, "\(context)")
            let details = (prepared["details"] as? [[String: String]] ?? []).map {
                KeyValue(name: $0["name"] ?? "", value: $0["value"] ?? "")
            }
            #expect(made.details == details, "\(context)")
        }

        let error = expected["error"] as? [String: Any]
        #expect(job.error?.code == error?["code"] as? String, "\(context)")
        #expect(job.error?.message == error?["message"] as? String, "\(context)")
        #expect(job.error?.status == error?["status"] as? Int, "\(context)")
        let result = expected["result"] as? [String: Any]
        #expect((job.result == nil) == (result == nil), "\(context)")
        #expect(job.result?.url == result?["url"] as? String, "\(context)")
        #expect(job.result?.status == result?["status"] as? Int, "\(context)")
        #expect(job.result?.body == result?["body"] as? String, "\(context)")

        let history = try #require(expected["history"] as? [[String: Any]], "\(context)")
        #expect(job.history.map(\.message) == history.map { $0["message"] as? String ?? "" }, "\(context)")
        #expect(zip(job.history, history).allSatisfy { same($0.at, date("at", $1)) }, "\(context)")

        let snapshot = expected["snapshot"] as? [String: Any]
        #expect(job.snapshot?.kind.rawValue == snapshot?["kind"] as? String, "\(context)")
        #expect(job.snapshot?.path == snapshot?["path"] as? String, "\(context)")
        #expect(job.snapshot?.size == (snapshot?["size"] as? Int).map(Int64.init), "\(context)")
        #expect(job.snapshot?.device == (snapshot?["device"] as? Int).map(UInt64.init), "\(context)")
        #expect(job.snapshot?.inode == (snapshot?["inode"] as? Int).map(UInt64.init), "\(context)")
        #expect(
            job.snapshot?.modificationTimeNanoseconds == (snapshot?["modification_time_ns"] as? Int).map(Int64.init),
            "\(context)")
        let cachedCopy = snapshot?["cached_copy"] as? [String: Any]
        #expect(job.snapshot?.cachedCopy?.inode == (cachedCopy?["inode"] as? Int).map(UInt64.init), "\(context)")
        #expect(
            job.snapshot?.cachedCopy?.modificationTimeNanoseconds
                == (cachedCopy?["modification_time_ns"] as? Int).map(Int64.init), "\(context)")
        #expect(job.snapshot?.packOffset == (snapshot?["pack_offset"] as? Int).map(Int64.init), "\(context)")

        let checkpoint = expected["checkpoint"] as? [String: Any]
        #expect(job.checkpoint == Checkpoint(expected: checkpoint), "\(context)")
        #expect((job.checkpoint == nil) == (checkpoint == nil), "\(context)")
    }
}
