import Foundation
import Testing
import UploadWire

@testable import UploadControl

/// A job as the daemon would report it.
func sampleJob(
    id: UInt64 = 7, state: JobState = .running, total: Int64 = 80_000_000, acked: Int64 = 12_400_000,
    sent: Int64 = 0, speed: Double = 3_200_000, updatedAt: TimeInterval = 1_700_000_000
) -> JobInfo {
    let remaining = Double(total - max(acked, sent))
    return JobInfo(
        id: JobID(id), state: state, source: "/home/u/v.mp4", destination: "https://h/up/", protocol: .put,
        bytesTotal: total, bytesSent: sent, bytesAcked: acked, speed: speed,
        eta: state == .running && speed > 0 ? (remaining / speed).rounded() : nil, attempts: 0, priority: 0,
        error: nil, result: nil, createdAt: Date(timeIntervalSince1970: 1_700_000_000),
        updatedAt: Date(timeIntervalSince1970: updatedAt), nextAttemptAt: nil, snapshot: nil, user: nil, history: nil,
        waiting: nil)
}

@Suite struct JobFormattingTests {
    @Test func progressLineForWatch() {
        let event = JobProgressEvent(
            id: JobID(7), bytesTotal: 80 << 20, bytesSent: 13_002_342, bytesAcked: 12_000_000, speed: 3_355_443,
            eta: 21)
        #expect(JobFormatting.progressLine(event) == "7 running  12.40 MiB / 80.00 MiB  15.5%  3.2 MiB/s  eta 21s")
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
                "ID  STATE    PROGRESS               SPEED      PROTOCOL  SOURCE -> DESTINATION",
                "7   running  11.83 MiB / 76.29 MiB  3.1 MiB/s  put       /home/u/v.mp4 -> https://h/up/",
                "12  paused   0 B / 76.29 MiB        -          put       /home/u/v.mp4 -> https://h/up/",
            ])
        #expect(JobFormatting.listLines([]) == ["no jobs"])
    }

    /// On a terminal a row fits its width: the middle of a long path gives way, wide characters
    /// count twice, and a completed job shows where its file is.
    @Test func listFitsTheTerminalWidth() {
        var long = sampleJob()
        long.source = "/home/u/" + String(repeating: "long-folder-name/", count: 8) + "日本語の写真.jpg"
        var done = sampleJob(id: 8, state: .completed)
        done.result = JobResult(url: "https://h/up/v-final.mp4")
        let lines = JobFormatting.listLines([long, done], width: 100)
        #expect(lines.allSatisfy { TerminalText.width($0) <= 100 }, "\(lines)")
        #expect(lines[1].contains("…"))
        #expect(lines[1].hasSuffix("写真.jpg -> https://h/up/"))
        #expect(lines[2].hasSuffix("/home/u/v.mp4 -> https://h/up/v-final.mp4"))
        let whole = JobFormatting.listLines([long], width: nil)
        #expect(whole[1].contains(long.source), "not a terminal: whole values")
    }

    @Test func wideCharactersAndControlsAreMeasuredAsTheTerminalShowsThem() {
        #expect(TerminalText.width("abc") == 3)
        #expect(TerminalText.width("日本") == 4)
        #expect(TerminalText.width("e\u{301}") == 1)
        #expect(TerminalText.middleTruncated("abcdefghij", to: 5) == "ab…ij")
        #expect(TerminalText.width(TerminalText.middleTruncated("日本語日本語日本語", to: 7)) <= 7)
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
        #expect(lines.contains("progress: 11.83 MiB / 76.29 MiB (15.5%)"))
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
        #expect(!lines.contains { $0.hasPrefix("connection:") }, "an older daemon says nothing of it")
    }

    @Test func statusSaysTheConditionsAndWhatIsHeldBackForThem() {
        var status = DaemonStatus(
            version: "1.2", pid: 99, uptime: 7, jobs: [:], speed: 0, maxTransfers: 4, stateDirectory: "/state",
            cacheDirectory: "/cache", socket: "/run/s.sock", journalBytes: 0, journalDamage: nil, configWarnings: [],
            conditions: DaemonConditions(
                metered: true, onBattery: false, waiting: ["network": 0, "metered": 3, "battery": 0, "disk": 1]))
        var lines = DetailFormatting.statusLines(status)
        #expect(lines.contains("connection: metered"))
        #expect(lines.contains("power: on mains"))
        #expect(lines.contains("held back: 3 waiting for an unmetered connection, 1 waiting (disk)"), "\(lines)")
        status.conditions = DaemonConditions(
            metered: nil, onBattery: nil, waiting: ["network": 2, "metered": 0, "battery": 1])
        lines = DetailFormatting.statusLines(status)
        #expect(lines.contains { $0.hasPrefix("connection: not known (NetworkManager") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("power: not known (UPower") }, "\(lines)")
        #expect(lines.contains("held back: 2 waiting for the network, 1 waiting for mains power"), "\(lines)")
        status.conditions?.waiting = ["network": 0]
        #expect(!DetailFormatting.statusLines(status).contains { $0.hasPrefix("held back") })
    }
}
