import Foundation
import Testing
import UploadWire

@testable import UploadControl

/// Issue 49, item 4: at 80 and 60 columns every line keeps what identifies its job (the ID, the
/// state, the file's name, the arrow and the destination's host), and bars keep one width.
@Suite struct NarrowTerminalTests {
    func deepJob(id: UInt64, state: JobState = .running) -> JobInfo {
        var job = sampleJob(id: id, state: state, speed: 1_234_567_890)
        job.source = "/tmp/uploadd-tests/" + String(repeating: "folder/", count: 8) + "deep.bin"
        job.destination = "http://127.0.0.1:18090/dav/some/long/folder/on/the/server/"
        return job
    }

    @Test(arguments: [80, 60])
    func listKeepsTheNameTheArrowAndTheHost(width: Int) {
        let jobs = [deepJob(id: 1), deepJob(id: 22_222, state: .queued)]
        let lines = JobFormatting.listLines(jobs, width: width)
        #expect(lines.allSatisfy { TerminalText.width($0) <= width }, "\(lines)")
        for (line, job) in zip(lines.dropFirst(), jobs) {
            #expect(line.hasPrefix("\(job.id) "), "\(line)")
            #expect(line.contains(job.state.rawValue), "\(line)")
            // At 60 columns the scheme gives way, not the host.
            #expect(line.contains("deep.bin -> ") && line.contains("127.0.0.1:18090/"), "\(line)")
        }
    }

    @Test func whatAWaitingJobWaitsForHasALineUnderIt() {
        var retrying = deepJob(id: 3, state: .queued)
        retrying.activity = "retrying in 43s: server answered 500 Internal Server Error"
        let lines = JobFormatting.listLines([retrying], width: 80)
        #expect(lines.count == 3 && lines[2].contains("retrying in 43s: server answered 500"), "\(lines)")
        let piped = JobFormatting.listLines([retrying])
        #expect(piped[1].contains("queued (retrying in 43s: server answered 500"), "\(piped)")
    }

    @Test(arguments: [100, 80, 60])
    func barsKeepOneWidthWhateverTheNumbers(width: Int) {
        let speeds: [Double] = [0, 999, 1_500_000, 1_234_567_890]
        let ends = speeds.map { speed -> Int in
            let event = JobProgressEvent(
                id: JobID(7), bytesTotal: 80 << 20, bytesSent: Int64(speed) % (80 << 20), bytesAcked: 0, speed: speed,
                eta: speed > 0 ? 80_000_000 / speed : nil)
            let bar = LiveBars.bar(event, name: "a-photo.jpg", state: .running, width: width)
            #expect(TerminalText.width(bar) <= width, "\(bar)")
            guard let end = bar.firstIndex(of: "]") else {
                Issue.record("no bar in \(bar)")
                return -1
            }
            return bar.distance(from: bar.startIndex, to: end)
        }
        #expect(Set(ends).count == 1, "the bar's end moved: \(ends)")
    }

    /// A retry's reason is long (the request, the answer, the server's words): the bar keeps its
    /// start, "retrying in 5s: ...". Cut in the middle of the line, it lost both.
    @Test(arguments: [100, 80, 60])
    func aWaitingBarKeepsTheStartOfWhy(width: Int) {
        let event = JobProgressEvent(
            id: JobID(7), bytesTotal: 3 << 20, bytesSent: 0, bytesAcked: 0, speed: 0, eta: nil)
        let note = "retrying in 5.0s: HTTP 503 Service Unavailable: failed on purpose (the server is busy or down)"
        let bar = LiveBars.bar(event, name: "three.bin", state: .queued, note: note, width: width)
        #expect(TerminalText.width(bar) <= width, "\(bar)")
        #expect(bar.contains("0.0% retrying in 5.0s: HTTP "), "\(bar)")
        #expect(bar.hasSuffix("…") && bar.hasPrefix("7 three.bin"), "\(bar)")
    }

    @Test(arguments: [80, 60, 50])
    func topKeepsTheIDTheStateAndTheName(width: Int) {
        var job = deepJob(id: 12_345)
        job.eta = 3_600
        let layout = TopLine(width: width, ids: [job.id])
        let line = layout.line(job)
        #expect(TerminalText.width(line) <= width && TerminalText.width(layout.titles) <= width, "\(line)")
        #expect(line.hasPrefix("12345 running") && line.contains("deep.bin"), "\(line)")
    }

    @Test(arguments: [80, 60])
    func helpTextsFit(width: Int) {
        for text in [CommandTable.help] + CommandTable.all.map({ $0.help }) {
            let lines = HelpText.wrapped(text, width: width).split(separator: "\n")
            let long = lines.filter { TerminalText.width(String($0)) > width }
            #expect(long.isEmpty, "\(long)")
        }
        let usage = HelpText.wrapped(AddCommand.help, width: 80).split(separator: "\n").prefix(3)
        #expect(usage.dropFirst().first?.hasPrefix("       ") == true, "the usage goes on under itself: \(usage)")
    }

    /// `limit --help` at 80 columns ended lines with "and" and "the" alone: a long line of a
    /// paragraph wrapped by itself, and the next line began a line of its own.
    @Test func aParagraphFlowsOnWhenALineWraps() {
        let text = """
            Usage: uploadctl limit [RATE|off]

            Running uploads follow within a second; the limit holds across restarts until changed, and
            [daemon] rate_limit in the config still caps each upload. Without RATE, prints the
            limit in force.
            Examples:
              uploadctl limit 5M
            """
        let lines = HelpText.wrapped(text, width: 80).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(
            lines.map(String.init) == [
                "Usage: uploadctl limit [RATE|off]",
                "",
                "Running uploads follow within a second; the limit holds across restarts until",
                "changed, and [daemon] rate_limit in the config still caps each upload. Without",
                "RATE, prints the limit in force.",
                "Examples:",
                "  uploadctl limit 5M",
            ])
    }
}
