import Foundation
import TestSupport
import Testing
import UploadWire

@testable import UploadCore

/// A job is one reference to fields copied on write, with its rarely set fields out of line; replay
/// lets the jobs of one add share their strings. All of it must stay invisible to the job's users.
@Suite("Job storage: copy on write, rare fields, shared strings")
struct JobStorageTests {
    /// Where a string's bytes live: the same address for two strings that share one buffer.
    static func address(_ text: String) -> UnsafeRawPointer? {
        var copy = text
        return copy.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    /// An equal string in a buffer of its own.
    static func fresh(_ text: String) -> String { String(decoding: Array(text.utf8), as: UTF8.self) }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = Fixtures.job(4)
        var copy = original
        #expect(copy == original)
        copy.state = .failed
        copy.history.append(JobEvent(at: Fixtures.epoch, message: "failed"))
        copy.snapshot?.path = "/elsewhere"
        #expect(original.state == .queued)
        #expect(original.history.count == 1)
        #expect(original.snapshot?.path == "/cache/snapshots/4")
        #expect(copy != original)
        copy.state = .queued
        copy.history.removeLast()
        copy.snapshot?.path = "/cache/snapshots/4"
        #expect(copy == original, "equal fields are equal jobs, whatever their storage")
    }

    @Test func rareFieldsAreSetChangedAndClearedOneByOne() {
        var job = Fixtures.job(1)
        let base = job
        let error = JobError(code: "server_error", message: "503", status: 503)
        job.error = error
        job.nextAttemptAt = Fixtures.epoch
        job.checkpoint = .tus(uploadURL: "u", expires: nil)
        var other = job
        other.checkpoint = .tus(uploadURL: "v", expires: nil)
        #expect(job.checkpoint == .tus(uploadURL: "u", expires: nil), "a copy's change stays in the copy")
        #expect(job.error == error)
        #expect(job.nextAttemptAt == Fixtures.epoch)
        #expect(job.result == nil && job.prepared == nil)
        job.error = nil
        job.nextAttemptAt = nil
        job.checkpoint = nil
        #expect(job == base)
    }

    @Test func jobsOfOneAddShareTheirStringsAfterReplay() throws {
        var records: [JournalRecord] = []
        for id in 1...3 {
            // Each built apart, as the journal's decoder builds them: equal strings, own buffers.
            var job = Job(
                id: JobID(UInt64(id)),
                spec: JobSpec(
                    source: "/home/user/pictures/holiday-\(id).jpeg",
                    destination: Self.fresh("https://uploads.example.com/albums/holiday/")),
                createdAt: Fixtures.epoch)
            job.snapshot = SourceSnapshot(
                kind: .original, path: Self.fresh(job.spec.source), size: 1, device: 1, inode: 1,
                modificationTimeNanoseconds: 1)
            job.record(Self.fresh("added (original of 1 B) to the queue"), at: Fixtures.epoch)
            records.append(.job(job))
        }
        let separate = records.map { record -> UnsafeRawPointer? in
            guard case .job(let job) = record else { return nil }
            return Self.address(job.spec.destination)
        }
        #expect(Set(separate).count == 3, "the test's strings must start apart")

        var state = JournalState()
        _ = try JournalFormat.decode(JournalFormat.header() + JournalFormat.encode(records)) { state.apply($0) }
        let jobs = try (1...3).map { try #require(state.jobs[JobID(UInt64($0))]) }
        #expect(Set(jobs.map { Self.address($0.spec.destination) }).count == 1)
        #expect(Set(jobs.map { Self.address($0.history[0].message) }).count == 1)
        for job in jobs {
            #expect(Self.address(job.snapshot!.path) == Self.address(job.spec.source))
        }
        for (job, record) in zip(jobs, records) {
            guard case .job(var written) = record else { continue }
            written.revision = 1
            #expect(job == written, "sharing changes no value")
        }
    }

    @Test func decodingRecordByRecordReadsWhatDecodingTheWholeFileReads() throws {
        var bytes = JournalFormat.header()
        for record in Fixtures.everyRecordKind { JournalFormat.append(record, to: &bytes) }
        let whole = try JournalFormat.decode(bytes)
        var handed: [JournalRecord] = []
        let streamed = try JournalFormat.decode(bytes) { handed.append($0) }
        #expect(handed == whole.records)
        #expect(streamed.records.isEmpty)
        #expect(streamed.recordCount == whole.records.count)
        #expect(streamed.validLength == whole.validLength)

        let torn = Array(bytes.dropLast(3))
        var before: [JournalRecord] = []
        let damaged = try JournalFormat.decode(torn) { before.append($0) }
        #expect(before == Array(whole.records.dropLast()))
        #expect(damaged.recordCount == before.count)
        #expect(damaged.damage != nil && damaged.validLength < torn.count)
    }
}
