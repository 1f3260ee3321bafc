import CNcurses
import Foundation
import Glibc
import UploadClient
import UploadWire

/// `uploadctl top`: the upload list, live, in the manner of htop. One connection follows the
/// daemon's events (no polling), another sends what the keys ask for.
struct TopCommand: ControlCommand {
    static let name = "top"
    static let abstract = "The upload list, live: pick a job and pause, cancel, retry, reorder it (? for keys)"
    static let synopsis = ""
    static let details = """
        Keys:
          up/down j/k   select          space or p   pause / resume     c   cancel
          r             retry           d            remove             D   delete from the server
          x             clear finished  + / -        priority           K/J move up / down
          enter         details         /            filter             q   quit
        Jobs show in the order they run: running, then queued and paused by their place in
        the queue, then the rest. d, D and x ask for y first.
        Needs a terminal; 'uploadctl watch' and 'list' are for scripts.
        """
    static let options: [OptionSpec] = []

    init(parsed: ParsedArguments) throws(UsageError) {
        guard parsed.positionals.isEmpty else { throw UsageError("top takes no arguments") }
    }

    static let keysHelp = details.split(separator: "\n").prefix(5).map(String.init)

    func run(_ context: CommandContext) throws -> ExitCode {
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
            context.printError("top needs a terminal; use 'uploadctl watch' or 'uploadctl list' in scripts")
            return .usage
        }
        let events = try context.connect()
        let commands = try context.connect()
        _ = try events.call(.subscribe, JSONValue(encoding: SubscribeParams()))
        var session = TopSession(commands: commands)
        session.model.load(try commands.listJobs(ListParams()))
        session.model.bandwidthLimit = try commands.call(.status).decode(DaemonStatus.self).bandwidthLimit
        // Termination signals are blocked and checked between keys: the terminal is always given
        // back (raw mode means Ctrl-C and Ctrl-Z arrive as keys too).
        Self.blockStopSignals()
        let screen = TopScreen()
        screen.open(tick: 100)
        defer { screen.end() }
        while !Self.stopRequested() {
            if Self.take(SIGTSTP) {
                // Ctrl-Z: give the terminal back, stop, and take it again once continued.
                screen.end()
                kill(getpid(), SIGSTOP)
                screen.open(tick: 100)
                session.dirty = true
            }
            // Drawn when something changed (10 times a second at most): idle, it costs nothing.
            if session.dirty { session.draw(on: screen) }
            if let key = screen.key() {
                session.dirty = true
                if !session.handle(key, on: screen) { break }
            }
            session.refreshPositionsIfDue()
            if let failure = session.drain(events) {
                screen.end()
                context.printError("\(failure.message); the list stopped (is uploadd running?)")
                return failure.exitCode
            }
        }
        return .success
    }

    private static let stopSignals = [SIGINT, SIGTERM, SIGHUP]

    private static func blockStopSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in stopSignals + [SIGTSTP] { sigaddset(&set, signal) }
        sigprocmask(SIG_BLOCK, &set, nil)
    }

    /// Whether `signal` is pending; if so it is taken (no longer pending).
    private static func take(_ signal: Int32) -> Bool {
        var pending = sigset_t()
        sigpending(&pending)
        guard sigismember(&pending, signal) == 1 else { return false }
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, signal)
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        return sigtimedwait(&only, nil, &zero) == signal
    }

    private static func stopRequested() -> Bool {
        var pending = sigset_t()
        sigpending(&pending)
        return stopSignals.contains { sigismember(&pending, $0) == 1 }
    }
}

/// The list's state between keys: the model, what the last action said, the pane shown.
struct TopSession {
    let commands: DaemonConnection
    var model = TopModel()
    var message = ""
    enum Pane { case list, details([String]), help }
    var pane = Pane.list
    /// Whether the screen must be drawn again.
    var dirty = true
    /// Whether the queue's order may have changed since it was last asked for (events carry no
    /// positions), and when it was.
    var positionsStale = false
    var positionsAskedAt = ContinuousClock.now

    /// Asks the daemon for the queue's order again when it may have changed, at most twice a
    /// second: a job added, started, paused or resumed, or moved by another client.
    mutating func refreshPositionsIfDue() {
        guard positionsStale, ContinuousClock.now - positionsAskedAt >= .milliseconds(500) else { return }
        refreshPositions()
    }

    /// The waiting jobs' positions, now: only their IDs and places, not whole jobs.
    mutating func refreshPositions() {
        positionsStale = false
        positionsAskedAt = ContinuousClock.now
        guard let positions = try? commands.queuePositions() else { return }
        model.load(positions: positions)
        dirty = true
    }

    /// Applies the events that arrived; the connection's failure if it was lost.
    mutating func drain(_ events: DaemonConnection) -> ControlClientError? {
        do {
            while let notification = try events.nextNotification(until: ContinuousClock.now) { apply(notification) }
            return nil
        } catch {
            return error
        }
    }

    mutating func apply(_ notification: RPCNotification) {
        dirty = true
        switch notification.method {
        case ControlEvent.state.rawValue:
            if let job = try? notification.params.decode(JobInfo.self) {
                let old = model.jobs[job.id]
                if old?.state != job.state || old?.priority != job.priority || old?.revision != job.revision {
                    positionsStale = true
                }
                model.apply(state: job)
            }
        case ControlEvent.progress.rawValue:
            if let progress = try? notification.params.decode(JobProgressEvent.self) { model.apply(progress: progress) }
        case ControlEvent.removed.rawValue:
            if let id = try? notification.params.decode(JobSelection.self).id { model.remove([id]) }
        default:
            break
        }
    }

    /// The rows jobs get: all but the header, the column titles and the message line.
    static func listRows(_ screen: TopScreen) -> Int { max(screen.rows - 3, 0) }

    mutating func draw(on screen: TopScreen) {
        dirty = false
        screen.clearAll()
        switch pane {
        case .details(let lines):
            for (index, line) in lines.prefix(screen.rows - 1).enumerated() { screen.put(line, row: index) }
            screen.put("any key: back to the list", row: screen.rows - 1, bold: true)
        case .help:
            screen.put("uploadctl top: keys", row: 0, bold: true)
            for (index, line) in TopCommand.keysHelp.enumerated() { screen.put(line, row: index + 1) }
            screen.put("any key: back to the list", row: screen.rows - 1, bold: true)
        case .list where screen.columns < TopLine.minimumWidth:
            // Cut to a few columns, rows read as garbage: say so, and draw again once wider.
            screen.put("too narrow", row: 0, bold: true)
            screen.put("\(TopLine.minimumWidth)+ columns", row: 1)
        case .list:
            let filter = model.filter.isEmpty ? "" : "  filter: \(model.filter)"
            screen.put("uploadd · \(model.header)\(filter)", row: 0, bold: true)
            let rows = Self.listRows(screen)
            model.keepSelectionVisible(rows: rows)
            let shown = model.rows(rows)
            let layout = TopLine(width: screen.columns, ids: shown.map(\.id))
            screen.put(layout.titles, row: 1)
            for (index, job) in shown.enumerated() {
                screen.put(layout.line(job), row: index + 2, reverse: job.id == model.selected)
            }
            if model.jobs.isEmpty { screen.put("no jobs: add some with 'uploadctl add'", row: 2) }
            screen.put(message.isEmpty ? "? keys  q quit" : message, row: screen.rows - 1, bold: !message.isEmpty)
        }
        screen.show()
    }

    /// Acts on a key; false when it means quit.
    mutating func handle(_ key: Int32, on screen: TopScreen) -> Bool {
        if case .list = pane {
        } else {
            pane = .list
            return true
        }
        let rows = Self.listRows(screen)
        func character(_ text: String) -> Int32 { Int32(text.unicodeScalars.first!.value) }
        switch key {
        case character("q"), 3: return false
        case KEY_UP, character("k"): model.moveSelection(by: -1, rows: rows)
        case KEY_DOWN, character("j"): model.moveSelection(by: 1, rows: rows)
        case KEY_PPAGE: model.moveSelection(by: -max(rows - 1, 1), rows: rows)
        case KEY_NPAGE: model.moveSelection(by: max(rows - 1, 1), rows: rows)
        case KEY_HOME: model.moveSelection(by: -model.visible.count, rows: rows)
        case KEY_END: model.moveSelection(by: model.visible.count, rows: rows)
        case character(" "), character("p"):
            guard let job = model.selectedJob else { break }
            act(job.state == .paused || job.state == .failed ? .resume : .pause, job)
        case character("c"): model.selectedJob.map { act(.cancel, $0) }
        case character("r"): model.selectedJob.map { act(.retry, $0) }
        case character("d"):
            // Every key that forgets jobs asks first, as D does: a stray key lost a paused upload.
            guard let job = model.selectedJob else { break }
            let uploading = job.state == .running ? " (it is uploading)" : ""
            guard screen.confirm("remove job \(job.id)\(uploading) from the list?") else { break }
            act(.remove, job)
        case character("D"):
            guard let job = model.selectedJob else { break }
            guard screen.confirm("delete job \(job.id)'s upload from the server and forget the job?") else { break }
            act(.delete, job)
        case character("x"):
            let finished = model.jobs.values.count { $0.state.isTerminal }
            guard finished > 0 else {
                message = "nothing to clear: no completed, failed or canceled jobs"
                break
            }
            guard screen.confirm("clear \(finished) finished jobs from the list?") else { break }
            perform("clear") {
                let cleared = try $0.clearJobs()
                return ("\(cleared.count) finished jobs cleared", cleared)
            }
        case character("+"), character("-"):
            guard let job = model.selectedJob else { break }
            let priority = job.priority + (key == character("+") ? 1 : -1)
            perform("priority") {
                let answer = try $0.call(.priority, JSONValue(encoding: PriorityParams(id: job.id, priority: priority)))
                return ("\(job.id) priority \(try answer.decode(JobInfo.self).priority)", [])
            }
            refreshPositions()
        case character("K"), KEY_SR, character("J"), KEY_SF:
            guard let job = model.selectedJob, let index = model.visible.firstIndex(of: job.id) else { break }
            let up = key == character("K") || key == KEY_SR
            let neighbour = up ? index - 1 : index + 1
            guard model.visible.indices.contains(neighbour) else { break }
            let other = model.visible[neighbour]
            let params = up ? MoveParams(id: job.id, before: other) : MoveParams(id: job.id, after: other)
            perform("move") {
                _ = try $0.call(.move, JSONValue(encoding: params))
                return ("\(job.id) moved \(up ? "before" : "after") \(other)", [])
            }
            // The new order at once, so that the next press moves it one more place.
            refreshPositions()
        case 10, 13, KEY_ENTER:
            guard let job = model.selectedJob else { break }
            do {
                let full = try commands.call(.get, JSONValue(encoding: JobSelection(id: job.id))).decode(JobInfo.self)
                pane = .details(DetailFormatting.jobLines(full))
            } catch {
                message = "\(error)"
            }
        case character("/"):
            if let filter = screen.readLine(
                prompt: "filter (name or state, Enter; Esc cancels): ", initial: model.filter)
            {
                model.filter = filter
            }
        case character("?"): pane = .help
        default: break
        }
        return true
    }

    /// A job verb on the selected job; the answer updates the list at once (the event follows).
    private mutating func act(_ method: ControlMethod, _ job: JobInfo) {
        perform(String(method.rawValue.dropFirst("job.".count))) {
            let answer = try $0.call(method, JSONValue(encoding: JobSelection(id: job.id)))
            if method == .remove || method == .delete {
                return ("\(job.id) \(method == .remove ? "removed" : "deleted")", [job.id])
            }
            let updated = try answer.decode(JobInfo.self)
            return ("\(updated.id) \(updated.state.rawValue)", [])
        }
    }

    /// Runs a command and shows what it said: its message, or the daemon's error.
    private mutating func perform(_ what: String, _ body: (DaemonConnection) throws -> (String, [JobID])) {
        do {
            let (said, removed) = try body(commands)
            message = said
            model.remove(removed)
        } catch let error as ControlClientError {
            message = "\(what): \(error.message)"
        } catch {
            message = "\(what): \(error)"
        }
    }
}
