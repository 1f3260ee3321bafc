import CShims
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// One client of the control socket: reads request lines, hands them to the handler, writes
/// answers and notifications back.
///
/// Threading: every method runs on the server's serial queue. The server's `ReadinessWatcher`
/// says when the descriptor is ready (`ready`), once per time it is armed (`rearm`).
///
/// Back-pressure keeps every client's cost bounded: a client with more than `maxInFlight` requests
/// or `maxInFlightBytes` of request lines being worked on, or with more than `outputHighWater`
/// bytes of answers it has not read, is not read from until that drains. A client that still has
/// more than `maxOutput` unread when the next line comes (a subscriber that never reads its
/// events) is disconnected. What all clients cost together is bounded by the server's
/// `ControlBudget`: a line that does not fit in it waits, and the bytes held for this client (its
/// unread output and its unfinished line) count towards it.
final class ControlConnection {
    static let maxInFlight = 256
    static let maxInFlightBytes = 1 << 20
    static let outputHighWater = 1 << 20
    /// A line or buffer this big, once freed, is worth a trim of the heap (`HeapTrimmer`): glibc
    /// keeps freed blocks under `HeapTrimmer.mapOfItsOwn` until a trim gives them back.
    static let trimAfterFreeing = outputHighWater / 2
    static let maxOutput = 16 << 20
    /// A subscriber this far behind gets `events.overflow` instead of more events, and is closed.
    static let maxEventBacklog = 4 << 20
    private static let overflowLine =
        Array(
            #"{"jsonrpc":"2.0","method":"events.overflow","params":{"message":"more than 4 MiB of events unread: no more are sent and the connection closes; subscribe again with snapshot"}}"#
                .utf8) + [UInt8(ascii: "\n")]

    let fd: Int32
    private let token: UInt64
    private let watcher: ReadinessWatcher
    private let budget: ControlBudget
    /// What `budget` last heard this client holds.
    private var heldReported = 0
    /// The client waits for room in `budget` (it is on the budget's waiting list).
    private var waitsForBudget = false
    /// What `fd` is armed for (nil: for nothing, or its report has come).
    private var armed: (readable: Bool, writable: Bool)?
    /// A write would block: the rest of `output` waits until the socket is writable.
    private var wantsWritable = false
    private var readSuspended = false
    private var framer = LineFramer()
    private var output: [UInt8] = []
    private var outputOffset = 0
    /// Where the unread answers lie in `output`, oldest first from `answersHead`, and how many
    /// bytes they hold: what is not an event, so that a subscriber's event backlog does not count
    /// the snapshot it has not finished reading.
    private var answers: [Range<Int>] = []
    private var answersHead = 0
    private var unreadAnswerBytes = 0
    private var inFlight = 0
    private var inFlightBytes = 0
    /// Sizes of the requests being worked on, oldest first (answers may come back in any order,
    /// so this is an estimate that is exact once all are done).
    private var inFlightSizes: [Int] = []
    /// Complete lines read but not yet handed on, because the client already has enough in flight.
    private var waitingLines: [[UInt8]] = []
    private var waitingHead = 0
    private var readEnded = false
    private var closeAfterFlush = false
    private var eventsStopped = false
    /// While items handed over together are queued: `flush` writes only once this much is waiting.
    private var flushWaitsFor = 0
    private static let flushBatchBytes = 64 << 10
    private(set) var isClosed = false
    /// The bytes `output` holds, written or not: what the client costs in memory.
    var outputBufferCount: Int { output.count }
    /// Its events and answers on their way from other threads to the server's queue.
    let outbox = ConnectionOutbox()
    /// The order in which its requests may hand out job IDs: the order their lines were read.
    let addTurns = AddTurns()
    private let onRequest: (ControlConnection, [UInt8]) -> Void
    private let onClose: (ControlConnection) -> Void

    /// `token`: what the watcher's reports about `fd` carry; call `start` once the server can route
    /// them here. `onRequest` must count the request in `budget`.
    init(
        fd: Int32, token: UInt64, watcher: ReadinessWatcher, budget: ControlBudget,
        onRequest: @escaping (ControlConnection, [UInt8]) -> Void, onClose: @escaping (ControlConnection) -> Void
    ) {
        self.fd = fd
        self.token = token
        self.watcher = watcher
        self.budget = budget
        self.onRequest = onRequest
        self.onClose = onClose
    }

    /// Starts reading.
    func start() { rearm() }

    /// The watcher's report that `fd` is ready: reads, writes, and arms it for what comes next.
    func ready(_ report: ReadinessWatcher.Report) {
        armed = nil
        if report.readable || report.failed { readAvailable() }
        if !isClosed && wantsWritable && (report.writable || report.failed) { flush() }
        rearm()
    }

    /// Arms `fd` for a report of what the connection waits for: requests unless reading is held
    /// back or over, room to write if a write would have blocked. Nothing is armed while it waits
    /// for neither (a hang-up then shows at the next write).
    private func rearm() {
        guard !isClosed else { return }
        let readable = !readSuspended && !readEnded
        let writable = wantsWritable
        guard readable || writable else { return }
        if let armed, armed.readable == readable, armed.writable == writable { return }
        do {
            try watcher.arm(fd, token: token, readable: readable, writable: writable)
            armed = (readable, writable)
        } catch {
            Log.warning("control client on fd \(fd): \(error); disconnecting it")
            shutDown()
        }
    }

    /// Events and finished requests handed over together (`ConnectionOutbox`), in order, sent with
    /// as few writes as they fit.
    func receive(_ items: [ConnectionOutbox.Item]) {
        flushWaitsFor = Self.flushBatchBytes
        for item in items {
            switch item {
            case .event(let bytes): sendEvent(bytes)
            case .finished(let answer, _): requestFinished(answer: answer)
            }
        }
        flushWaitsFor = 0
        if !isClosed { flush() }
    }

    /// A request finished: its answer (if any) goes out, and reading resumes if it was held back.
    func requestFinished(answer: [UInt8]?) {
        inFlight -= 1
        if !inFlightSizes.isEmpty { inFlightBytes -= inFlightSizes.removeFirst() }
        if let answer { send(answer) }
        resumeReadingIfDrained()
        closeIfDone()
    }

    private var mustWait: Bool {
        inFlight >= Self.maxInFlight || inFlightBytes >= Self.maxInFlightBytes
            || output.count - outputOffset >= Self.outputHighWater
    }

    /// Hands waiting lines on while the client's limits and the server's budget allow.
    private func dispatchWaitingLines() {
        while waitingHead < waitingLines.count && !mustWait && !isClosed {
            let line = waitingLines[waitingHead]
            guard budget.hasRoom(forRequestOf: line.count) else {
                waitForBudget()
                break
            }
            waitingHead += 1
            inFlight += 1
            inFlightBytes += line.count
            inFlightSizes.append(line.count)
            onRequest(self, line)
        }
        if waitingHead == waitingLines.count {
            waitingLines.removeAll(keepingCapacity: false)
            waitingHead = 0
        }
    }

    private func waitForBudget() {
        guard !waitsForBudget else { return }
        waitsForBudget = true
        budget.waitForRoom { [self] in
            waitsForBudget = false
            resumeReadingIfDrained()
        }
    }

    private func resumeReadingIfDrained() {
        dispatchWaitingLines()
        guard waitingLines.isEmpty else { return }
        guard readSuspended, !readEnded, !isClosed else { return }
        guard inFlight < Self.maxInFlight / 2, inFlightBytes < Self.maxInFlightBytes / 2,
            output.count - outputOffset < Self.outputHighWater / 2
        else { return }
        readSuspended = false
        rearm()
    }

    /// Queues bytes for the client. One line may be bigger than `maxOutput` (the answer to
    /// `job.clear` of 100,000 jobs lists them all); a client that leaves more than that unread when
    /// the next line comes (a subscriber that never reads, a pipeline of big answers) is
    /// disconnected, so a client costs at most `maxOutput` plus one line.
    func send(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        if output.count - outputOffset > Self.maxOutput {
            Log.warning("control client on fd \(fd) stopped reading; disconnecting it")
            shutDown()
            return
        }
        answers.append(output.count..<(output.count + bytes.count))
        unreadAnswerBytes += bytes.count
        // Nothing waiting: the answer becomes the buffer, without a copy (a page of `job.list`
        // is megabytes).
        if output.isEmpty { output = bytes } else { output.append(contentsOf: bytes) }
        flush()
    }

    /// Queues an event line for a subscriber; one that has fallen `maxEventBacklog` behind in its
    /// events gets `events.overflow` as its last line and is closed once that is written. Answers
    /// to its requests are not counted (they are bounded by `maxOutput`): `uploadctl wait` of
    /// 20,000 jobs reads a snapshot of 8 MiB before the events that follow it.
    func sendEvent(_ bytes: [UInt8]) {
        guard !isClosed, !eventsStopped else { return }
        guard unreadEventBytes <= Self.maxEventBacklog else {
            eventsStopped = true
            Log.warning("control client on fd \(fd) is more than 4 MiB of events behind; sending events.overflow")
            sendAndClose(Self.overflowLine)
            return
        }
        output.append(contentsOf: bytes)
        flush()
    }

    /// Bytes not yet written that are events: all unread bytes but the answers'.
    private var unreadEventBytes: Int { output.count - outputOffset - unreadAnswerBytes }

    /// Takes what was just written (everything before `outputOffset`) off the unread answers.
    private func answersWritten() {
        while answersHead < answers.count {
            let range = answers[answersHead]
            guard range.lowerBound < outputOffset else { return }
            unreadAnswerBytes -= min(range.upperBound, outputOffset) - range.lowerBound
            if range.upperBound > outputOffset {
                answers[answersHead] = outputOffset..<range.upperBound
                return
            }
            answersHead += 1
        }
    }

    /// Sends `bytes` and closes once they are written.
    func sendAndClose(_ bytes: [UInt8]) {
        send(bytes)
        closeAfterFlush = true
        closeIfDone()
    }

    func shutDown() {
        guard !isClosed else { return }
        isClosed = true
        // A client cut off with a long unfinished line, or much unread output, leaves big blocks
        // freed on the heap.
        if framer.bufferCapacity + output.capacity >= Self.trimAfterFreeing { HeapTrimmer.trimSoon() }
        watcher.forget(fd)
        close(fd)
        reportHeldBytes()
        onClose(self)
    }

    /// Bytes held for the client, as the server's budget counts them: output it has not read but
    /// the rest of the answer it is being sent (one answer may be bigger than the whole budget:
    /// `job.list` of a million jobs is ~140 MB), and the buffer of the line it has not finished.
    var heldBytes: Int {
        guard !isClosed else { return 0 }
        let answerBeingSent = answersHead < answers.count ? answers[answersHead].count : 0
        return output.count - outputOffset - answerBeingSent + framer.bufferCapacity
    }

    /// Tells the budget what the client holds now, once it may have changed.
    private func reportHeldBytes() {
        let held = heldBytes
        guard held != heldReported else { return }
        let delta = held - heldReported
        heldReported = held
        budget.heldChanged(by: delta)
    }

    private func readAvailable() {
        defer { reportHeldBytes() }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !isClosed && !readSuspended {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                shutDown()
                return
            }
            if count == 0 {
                readEnded = true
                readSuspended = true
                closeIfDone()
                return
            }
            for item in framer.feed(buffer[0..<count]) {
                switch item {
                case .line(let line):
                    if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                    // Its buffer is freed once the request is done, as a closed client's is.
                    if line.count >= Self.trimAfterFreeing { HeapTrimmer.trimSoon() }
                    waitingLines.append(line)
                case .tooLong:
                    let error = RPCError.invalidRequest(
                        "a request line is longer than \(ControlProtocol.maxLineLength) bytes; closing the connection")
                    sendAndClose(ControlHandler.answerLine(RPCResponse(id: .null, error: error)))
                    return
                }
            }
            dispatchWaitingLines()
            if mustWait || !waitingLines.isEmpty { readSuspended = true }
        }
    }

    private func flush() {
        defer { reportHeldBytes() }
        guard output.count - outputOffset >= flushWaitsFor else { return }
        while outputOffset < output.count {
            let written = output.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + outputOffset, $0.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    dropWrittenBytes()
                    wantsWritable = true
                    rearm()
                    return
                }
                shutDown()
                return
            }
            outputOffset += written
            answersWritten()
        }
        // A big answer (a list or clear of thousands of jobs) leaves much freed memory behind. By
        // the capacity, not the count: `dropWrittenBytes` may have left few bytes in a big buffer.
        if output.capacity >= Self.outputHighWater { HeapTrimmer.trimSoon() }
        output.removeAll(keepingCapacity: output.capacity < 1 << 20)
        outputOffset = 0
        answers.removeAll(keepingCapacity: answers.count < 1024)
        answersHead = 0
        unreadAnswerBytes = 0
        wantsWritable = false
        resumeReadingIfDrained()
        closeIfDone()
    }

    /// A subscriber that reads about as fast as its events come never lets `output` drain: the
    /// bytes it has read are dropped from the front once they are most of the buffer, so that it
    /// holds at most twice what is unsent (or that plus `compactionBytes`), not everything sent
    /// since it was last empty. The limits count unsent bytes either way.
    private func dropWrittenBytes() {
        guard outputOffset >= Self.compactionBytes, outputOffset >= output.count / 2 else { return }
        output.removeSubrange(0..<outputOffset)
        // `answersWritten` left the unread answers at or after `outputOffset`.
        answers = answers[answersHead...].map { ($0.lowerBound - outputOffset)..<($0.upperBound - outputOffset) }
        answersHead = 0
        outputOffset = 0
    }
    private static let compactionBytes = 64 << 10

    private func closeIfDone() {
        guard !isClosed, output.count == outputOffset, inFlight == 0, waitingLines.isEmpty else { return }
        if readEnded || closeAfterFlush { shutDown() }
    }
}

@available(*, unavailable)
extension ControlConnection: Sendable {}
