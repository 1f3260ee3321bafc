import CNcurses
import Foundation
import Glibc
import UploadWire

/// Progress bars redrawn in place at the bottom of the terminal, one per job in flight, in the
/// manner of `docker pull`; what finishes is printed above them and scrolls away. The cursor
/// movements come from terminfo (ncurses' `tigetstr`), not from escape codes written by hand.
final class LiveBars {
    private let up: String
    private let clearLine: String
    /// Where the text goes: the command's stdout, one write per call.
    private let write: (String) -> Void
    private var progress: [JobID: JobProgressEvent] = [:]
    private var states: [JobID: JobState] = [:]
    private var names: [JobID: String] = [:]
    /// What a job waits for while it is not sending (`JobInfo.activity`): a retry's reason.
    private var notes: [JobID: String] = [:]
    /// Bar lines on the screen now, under the cursor's line.
    private var drawn = 0
    private var lastDraw = ContinuousClock.now - .seconds(1)

    /// Nil when `output` is not a terminal that terminfo knows how to move the cursor on.
    init?(output: OutputStreams) {
        guard output.isTerminal else { return nil }
        var error: Int32 = 0
        guard setupterm(nil, STDOUT_FILENO, &error) == OK,
            let up = Self.capability("cuu1"), let clearLine = Self.capability("el")
        else { return nil }
        self.up = up
        self.clearLine = clearLine
        write = output.standardOutput
        InterruptNotice.install()
    }

    private static func capability(_ name: String) -> String? {
        guard let value = tigetstr(name), Int(bitPattern: value) != -1 else { return nil }
        return String(cString: value)
    }

    /// Learns the jobs' names and states (the start of a wait, or a `job.state` event).
    func know(_ job: JobInfo) {
        names[job.id] = (job.source as NSString).lastPathComponent
        // A job's end is said once: a hook that ran after it changed the job again, and the
        // second event printed "completed" a second time.
        let endedAlready = states[job.id] == job.state && job.state.isTerminal
        states[job.id] = job.state
        notes[job.id] = job.activity
        if job.state.isTerminal {
            progress[job.id] = nil
            if !endedAlready { print(line: JobFormatting.stateLine(job)) }
        } else if job.state != .running, progress[job.id] != nil {
            // Back in the queue (a retry): the last attempt's bytes and speed are stale now.
            progress[job.id] = JobProgressEvent(
                id: job.id, bytesTotal: job.bytesTotal, bytesSent: 0, bytesAcked: job.bytesAcked, speed: 0, eta: nil)
        } else if progress[job.id] == nil, job.state == .running {
            progress[job.id] = JobProgressEvent(
                id: job.id, bytesTotal: job.bytesTotal, bytesSent: job.bytesSent, bytesAcked: job.bytesAcked,
                speed: job.speed, eta: job.eta)
        }
        draw(force: true)
    }

    func update(_ event: JobProgressEvent) {
        progress[event.id] = event
        draw(force: false)
    }

    func removed(_ id: JobID) {
        progress[id] = nil
        print(line: "\(id) removed")
        draw(force: true)
    }

    /// Leaves the bars as they are, the cursor under them.
    func finish() { draw(force: true) }

    /// Follows one notification.
    func follow(_ notification: RPCNotification) {
        switch notification.method {
        case ControlEvent.state.rawValue:
            if let job = try? notification.params.decode(JobInfo.self) { know(job) }
        case ControlEvent.progress.rawValue:
            if let event = try? notification.params.decode(JobProgressEvent.self) { update(event) }
        case ControlEvent.removed.rawValue:
            if let id = try? notification.params.decode(JobSelection.self).id { removed(id) }
        default:
            break
        }
    }

    /// Bars for people on a terminal; nil for --json or when stdout is a pipe (lines, as before).
    static func forPeople(_ context: CommandContext) -> LiveBars? {
        context.json ? nil : LiveBars(output: context.output)
    }

    /// A line above the bars: it scrolls up with the output, the bars stay at the bottom.
    private func print(line: String) {
        erase()
        write(line + "\n")
        drawn = 0
    }

    private func erase() {
        guard drawn > 0 else { return }
        write(String(repeating: up, count: drawn) + String(repeating: clearLine + "\n", count: drawn))
        write(String(repeating: up, count: drawn))
        drawn = 0
    }

    private func draw(force: Bool) {
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        erase()
        let width = Int(max(tigetnum("cols"), 40))
        var text = ""
        for (id, event) in progress.sorted(by: { $0.key < $1.key }) {
            let name = names[id] ?? "\(id)"
            let state = states[id] ?? .running
            let line = Self.bar(event, name: name, state: state, note: notes[id], width: width)
            text += clearLine + line + "\n"
        }
        write(text)
        drawn = progress.count
    }

    /// `7 big.bin [#####-----] 12.40 MiB / 80.00 MiB 15.5% 3.2 MiB/s eta 21s`, within `width`.
    /// Every part has a fixed width for a given terminal width, so that the bar neither grows
    /// nor shrinks as the numbers change; a job not sending says why instead of its speed.
    static func bar(_ event: JobProgressEvent, name: String, state: JobState, note: String? = nil, width: Int)
        -> String
    {
        let done = JobFormatting.bytesDone(acked: event.bytesAcked, sent: event.bytesSent)
        let nameWidth = min(max(width / 5, 10), 24)
        let barWidth = width >= 80 ? 20 : 10
        let head =
            "\(event.id) " + padded(TerminalText.middleTruncated(TerminalText.escaped(name), to: nameWidth), nameWidth)
        let fraction = event.bytesTotal > 0 ? min(Double(done) / Double(event.bytesTotal), 1) : 0
        let filled = min(Int(fraction * Double(barWidth)), barWidth)
        var line =
            head + " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
        let percent = JobFormatting.percent(done: done, total: event.bytesTotal) ?? ""
        line += " " + String(repeating: " ", count: max(6 - percent.count, 0)) + percent
        // A job that says what it waits for needs the room more than "0 B / 3.00 MiB".
        if width >= 100 && note == nil {
            line += " " + padded(JobFormatting.progress(done: done, total: event.bytesTotal), 21)
        }
        if state == .running && note == nil {
            line += " " + padded(ByteSize.formatRate(event.speed), 11)
            if let eta = event.eta { line += " eta \(JobFormatting.duration(eta))" }
        } else {
            // What it waits for starts with what matters ("retrying in 5s: HTTP 503 ..."), and says
            // its state: a long reason loses its end, not its start (cut in the middle of the line,
            // it lost both).
            let status = " " + (note.map { TerminalText.escaped($0) } ?? state.rawValue)
            let room = width - TerminalText.width(line)
            if room >= 12 { return line + TerminalText.endTruncated(status, to: room) }
            line += status
        }
        return TerminalText.width(line) > width ? TerminalText.middleTruncated(line, to: width) : line
    }

    private static func padded(_ text: String, _ columns: Int) -> String {
        text + String(repeating: " ", count: max(columns - TerminalText.width(text), 0))
    }
}
