import Foundation
import TestSupport
import UploadWire

@testable import UploadCore

/// Builders shared by the core tests: jobs and journal records with every field filled in, so a
/// codec that drops a field shows up as a difference.
enum Fixtures {
    /// A whole-second date: JSON round trips of Date are exact at this precision.
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)

    static func job(_ id: UInt64, state: JobState = .queued, priority: Int = 0) -> Job {
        let spec = JobSpec(
            source: "/home/user/video-\(id).mp4", destination: "https://example.com/up/", uploadProtocol: .put,
            headers: [KeyValue(name: "X-Trace", value: "t\(id)")], fields: [KeyValue(name: "album", value: "a")],
            user: "alice:secret", chunkSize: 1 << 20, priority: priority, snapshot: .copy,
            clientToken: "token-\(id)", metadata: ["k": "v\(id)"])
        var job = Job(id: JobID(id), spec: spec, createdAt: epoch)
        job.state = state
        job.bytesTotal = 80_000_000
        job.bytesAcked = Int64(id) * 1000
        job.snapshot = SourceSnapshot(
            kind: .copy, path: "/cache/snapshots/\(id)", size: 80_000_000, device: 42, inode: 1000 + id,
            modificationTimeNanoseconds: 1_700_000_000_123_456_789)
        job.attempts = Int(id % 3)
        job.crashes = Int(id % 2)
        if id % 3 == 0 { job.failingSince = epoch.addingTimeInterval(5) }
        job.spec.umask = id % 2 == 0 ? 0o022 : nil
        if id % 2 == 0 {
            job.snapshot?.cachedCopy = FileIdentity(
                inode: 5000 + id, modificationTimeNanoseconds: 1_700_000_001_000_000_000)
        }
        job.record("added", at: epoch)
        return job
    }

    /// One record of every kind, with variations of each associated value.
    static var everyRecordKind: [JournalRecord] {
        var failed = job(7, state: .failed)
        failed.error = JobError(code: "http", message: "PUT x: HTTP 403 Forbidden", status: 403)
        failed.nextAttemptAt = epoch.addingTimeInterval(30)
        var done = job(8, state: .completed)
        done.result = JobResult(url: "https://example.com/up/v.mp4", status: 201, body: "{\"ok\":true}")
        done.resolvedProtocol = .post
        done.spec.batch = JobID(3)
        done.spec.fileField = "userfile"
        done.hookPending = true
        return [
            .job(job(1)),
            .job(failed),
            .job(done),
            .progress(JobProgress(id: JobID(1), bytesAcked: 4096, checkpoint: nil)),
            .progress(
                JobProgress(id: JobID(1), bytesAcked: 8192, checkpoint: .tus(uploadURL: "https://t/1", expires: nil))),
            .progress(
                JobProgress(id: JobID(1), bytesAcked: 5, checkpoint: .s3(uploadID: "u", key: "k/v", partSize: 8 << 20))),
            .progress(
                JobProgress(
                    id: JobID(1), bytesAcked: 3 << 20,
                    checkpoint: .chunked(upToken: "tok", blockSize: 1 << 20, blocksAcknowledged: 3))),
            .removed(JobID(7)),
            .nextID(99),
            .folderFiles(
                FolderLedgerRecord(
                    folder: "screenshots",
                    files: [
                        FolderFile(
                            key: FolderFileKey(device: 2049, inode: 1_234_567),
                            path: "/home/u/Pictures/Screenshots/2026/shot 1.png", size: 81_920,
                            modifiedNanoseconds: 1_765_000_000_123_456_789, state: .taken, job: JobID(8)),
                        FolderFile(
                            key: FolderFileKey(device: 2049, inode: 9), path: "/home/u/Pictures/Screenshots/ü.png",
                            size: 0,
                            modifiedNanoseconds: -1, state: .gone, job: nil),
                    ])),
        ]
    }

    /// A realistic journal: ~20 records of all kinds.
    static var twentyRecords: [JournalRecord] {
        var records: [JournalRecord] = []
        for id in UInt64(1)...6 {
            records.append(.job(job(id)))
            records.append(.progress(JobProgress(id: JobID(id), bytesAcked: Int64(id) * 4096, checkpoint: nil)))
        }
        records.append(.removed(JobID(2)))
        records.append(.nextID(10))
        for id in UInt64(3)...7 { records.append(.job(job(id, state: .running))) }
        records.append(
            .progress(JobProgress(id: JobID(7), bytesAcked: 1, checkpoint: .tus(uploadURL: "u", expires: "e"))))
        return records
    }

    /// The byte ranges of each record's frame in `JournalFormat.header() + encode(records)`.
    static func frames(of records: [JournalRecord]) -> [Range<Int>] {
        var offset = JournalFormat.headerSize
        return records.map { record in
            let size = JournalFormat.encode([record]).count
            defer { offset += size }
            return offset..<(offset + size)
        }
    }

    static func file(_ records: [JournalRecord]) -> [UInt8] {
        JournalFormat.header() + JournalFormat.encode(records)
    }
}
