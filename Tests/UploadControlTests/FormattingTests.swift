import Foundation
import Testing
import UploadCore

@testable import UploadControl

/// A job as the daemon would report it.
func sampleJob(
    id: UInt64 = 7, state: JobState = .running, total: Int64 = 80_000_000, acked: Int64 = 12_400_000,
    sent: Int64 = 0, speed: Double = 3_200_000, updatedAt: TimeInterval = 1_700_000_000
) -> JobInfo {
    var job = Job(
        id: JobID(id), spec: JobSpec(source: "/home/u/v.mp4", destination: "https://h/up/", uploadProtocol: .put),
        createdAt: Date(timeIntervalSince1970: 1_700_000_000))
    job.state = state
    job.bytesTotal = total
    job.bytesAcked = acked
    job.updatedAt = Date(timeIntervalSince1970: updatedAt)
    return JobInfo(job: job, bytesSent: sent, speed: speed)
}

@Suite struct JobFormattingTests {
    @Test func progressLineForWatch() {
        let event = JobProgressEvent(
            id: JobID(7), bytesTotal: 80_000_000, bytesSent: 12_400_000, bytesAcked: 12_000_000, speed: 3_200_000,
            eta: 21)
        #expect(JobFormatting.progressLine(event) == "7 running  12.40 MB / 80.00 MB  15.5%  3.2 MB/s  eta 21s")
        let paused = JobProgressEvent(id: JobID(7), bytesTotal: 0, bytesSent: 0, bytesAcked: 0, speed: 0, eta: nil)
        #expect(JobFormatting.progressLine(paused, state: .paused) == "7 paused  0 B / 0 B  0 B/s")
    }

    @Test func stateLines() {
        #expect(JobFormatting.stateLine(sampleJob(state: .completed)) == "7 completed")
        var failed = sampleJob(state: .failed)
        failed.error = JobError(code: "http", message: "server answered 403 Forbidden", status: 403)
        #expect(JobFormatting.stateLine(failed) == "7 failed: server answered 403 Forbidden")
        var retrying = sampleJob(state: .queued)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        retrying.nextAttemptAt = now.addingTimeInterval(30)
        #expect(JobFormatting.stateLine(retrying, now: now) == "7 queued (retry in 30s)")
    }

    @Test func progressShowsTheLargerOfSentAndAcknowledged() {
        #expect(JobFormatting.bytesDone(acked: 5, sent: 9) == 9)
        #expect(JobFormatting.bytesDone(acked: 9, sent: 0) == 9)
    }

    @Test(arguments: [
        (0.0, "0s"), (0.3, "0.3s"), (21.0, "21s"), (59.4, "59s"), (185.0, "3m05s"), (7384.0, "2h03m"),
        (93_600.0, "1d02h"), (-5.0, "0s"), (Double.infinity, "0s"),
    ])
    func durations(seconds: Double, text: String) {
        #expect(JobFormatting.duration(seconds) == text)
    }

    @Test func percent() {
        #expect(JobFormatting.percent(done: 12_400_000, total: 80_000_000) == "15.5%")
        #expect(JobFormatting.percent(done: 1, total: 0) == nil)
        #expect(JobFormatting.percent(done: 10, total: 5) == "100.0%")
    }

    @Test func listTableAlignsColumns() {
        let lines = JobFormatting.listLines([sampleJob(), sampleJob(id: 12, state: .paused, acked: 0)])
        #expect(
            lines == [
                "ID  STATE    PROGRESS             SPEED     PROTOCOL  SOURCE -> DESTINATION",
                "7   running  12.40 MB / 80.00 MB  3.2 MB/s  put       /home/u/v.mp4 -> https://h/up/",
                "12  paused   0 B / 80.00 MB       -         put       /home/u/v.mp4 -> https://h/up/",
            ])
        #expect(JobFormatting.listLines([]) == ["no jobs"])
    }

    @Test func showIncludesErrorResultAndHistory() {
        var job = sampleJob(state: .failed)
        job.error = JobError(code: "http", message: "server answered 500", status: 500)
        job.result = JobResult(url: "https://h/up/v.mp4", status: 201, body: "ok\nthanks")
        job.history = [JobEvent(at: Date(timeIntervalSince1970: 1_700_000_000), message: "added")]
        job.user = "bob"
        let lines = DetailFormatting.jobLines(job)
        #expect(lines.contains("id: 7"))
        #expect(lines.contains("state: failed"))
        #expect(lines.contains("progress: 12.40 MB / 80.00 MB (15.5%)"))
        #expect(lines.contains("error: server answered 500 [http 500]"))
        #expect(lines.contains("result url: https://h/up/v.mp4"))
        #expect(lines.contains("result body: ok thanks"))
        #expect(lines.contains("user: bob"))
        #expect(lines.suffix(2) == ["history:", "  2023-11-14T22:13:20Z  added"])
        #expect(!lines.contains { $0.hasPrefix("speed:") })  // only while running
    }

    @Test func statusCountsEveryStateAndDamage() {
        let status = DaemonStatus(
            version: "1.2", pid: 99, uptime: 7384, jobs: ["queued": 1, "running": 2, "completed": 5], speed: 3_200_000,
            maxTransfers: 4, stateDirectory: "/state", cacheDirectory: "/cache", socket: "/run/s.sock",
            journalBytes: 12_345, journalDamage: "12 bytes set aside", configWarnings: ["unknown key 'x'"])
        let lines = DetailFormatting.statusLines(status)
        #expect(lines[0] == "uploadd 1.2, pid 99, up 2h03m")
        #expect(lines[1] == "jobs: 1 queued, 2 running, 0 paused, 5 completed, 0 failed, 0 canceled")
        #expect(lines.contains("max transfers: 4"))
        #expect(lines.contains("socket: /run/s.sock"))
        #expect(lines.contains("state directory: /state"))
        #expect(lines.contains("journal damage: 12 bytes set aside"))
        #expect(lines.contains("config warning: unknown key 'x'"))
    }
}
