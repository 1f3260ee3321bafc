import CShims
import Foundation
import Glibc
import UploadWire

/// A blocking JSON-RPC connection to the daemon's control socket: one request line out, answers and
/// notifications in, one JSON document per line.
///
/// Not thread-safe: one thread uses a connection at a time. Notifications that arrive while a call
/// waits for its answer are kept, in order, for `nextNotification(until:)`.
public final class DaemonConnection {
    public let socketPath: String
    private let descriptor: Int32
    /// Answers can be far larger than the daemon's 1 MiB request limit (a list of every job).
    private var framer = LineFramer(maxLineLength: 1 << 30)
    private var pendingLines: ArraySlice<[UInt8]> = []
    private var queuedNotifications: ArraySlice<RPCNotification> = []
    private var nextRequestID = 1
    /// Answers that came while the client read those of an earlier batch.
    private var unclaimedAnswers: [Int: Result<RPCResult, RPCError>] = [:]
    private var readBuffer = [UInt8](repeating: 0, count: 1 << 16)

    /// Connects to the Unix socket at `socketPath`. The corresponding C calls are `socket` and `connect`.
    public init(socketPath: String) throws(ControlClientError) {
        self.socketPath = socketPath
        let folder = (socketPath as NSString).deletingLastPathComponent
        if folder == SocketLocation.fallbackDirectory(), let problem = SocketLocation.problem(withFolder: folder) {
            throw .untrusted(socketPath: socketPath, reason: problem)
        }
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        do {
            descriptor = try syscall("socket") { socket(AF_UNIX, socketType, 0) }
        } catch {
            throw .unreachable(socketPath: socketPath, reason: error.errnoText)
        }
        // From here on every stored property is set, so a throw runs `deinit`, which closes the
        // socket: closing it here as well would close whatever another thread of the app opened
        // under its number in between.
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else {
            throw .unreachable(socketPath: socketPath, reason: "the path is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        // Not retried on EINTR: an interrupted connect goes on in the background and a second call
        // fails with EALREADY. uploadctl installs no signal handlers, so it cannot be interrupted anyway.
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result == -1 {
            let failure = SystemError("connect")
            throw .unreachable(socketPath: socketPath, reason: failure.errnoText)
        }
        // Whoever listens there gets our commands, passwords included: only our own daemon (or
        // root's, which could read them anyway) may.
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard CShims_peer_credentials(descriptor, &pid, &uid, &gid) == 0 else {
            let failure = SystemError("getsockopt")
            throw .untrusted(socketPath: socketPath, reason: "cannot tell who serves it (\(failure.errnoText))")
        }
        guard uid == getuid() || uid == 0 else {
            throw .untrusted(
                socketPath: socketPath,
                reason: "it is served by uid \(uid) (pid \(pid)), not by you (uid \(getuid())) or root")
        }
    }

    deinit { close(descriptor) }

    /// Sends one request and returns its result; throws the daemon's `RPCError` or a `ControlClientError`.
    public func call(_ method: ControlMethod, _ params: JSONValue = .object([:])) throws -> RPCResult {
        try callBatch([(method, params)])[0].get()
    }

    /// Sends one request with typed params and decodes its result.
    public func call<Params: Encodable, Answer: Decodable>(
        _ method: ControlMethod, params: Params, as answer: Answer.Type
    ) throws -> Answer {
        let result = try call(method, JSONValue(encoding: params))
        do {
            return try result.decode(Answer.self)
        } catch {
            throw ControlClientError.unexpectedAnswer("\(method.rawValue) returned something else than \(Answer.self)")
        }
    }

    /// Sends the requests as one batch line (a lone request as a plain object) and returns each one's
    /// outcome in the order given, matching answers by id whatever order they come in.
    ///
    /// A batch that would exceed the daemon's line limit (`ControlProtocol.maxLineLength`) goes out as
    /// several batch lines instead of being refused whole.
    public func callBatch(_ calls: [(method: ControlMethod, params: JSONValue)]) throws -> [Result<RPCResult, RPCError>]
    {
        try answers(to: startBatch(calls))
    }

    /// Requests sent whose answers are not read yet (`startBatch`, `answers(to:)`).
    public struct PendingCalls: Sendable {
        fileprivate let firstID: Int
        public let count: Int
    }

    /// Sends the requests as `callBatch` does, without waiting for their answers: a client may send
    /// the next batch while the daemon works on this one, then read each batch's answers in turn.
    public func startBatch(_ calls: [(method: ControlMethod, params: JSONValue)]) throws -> PendingCalls {
        let firstID = nextRequestID
        nextRequestID += calls.count
        let requests = calls.enumerated().map { offset, call in
            RPCRequest(id: .number(Double(firstID + offset)), method: call.method.rawValue, params: call.params)
        }
        if !requests.isEmpty {
            for line in try Self.encodeLines(requests[...]) { try send(line) }
        }
        return PendingCalls(firstID: firstID, count: calls.count)
    }

    /// The outcome of each request `startBatch` sent, in the order given. Answers to other requests
    /// still pending that come first are kept for their own turn.
    public func answers(to pending: PendingCalls) throws -> [Result<RPCResult, RPCError>] {
        let ids = pending.firstID..<(pending.firstID + pending.count)
        var outcomes = [Result<RPCResult, RPCError>?](repeating: nil, count: pending.count)
        var unanswered = pending.count
        for id in ids {
            guard let early = unclaimedAnswers.removeValue(forKey: id) else { continue }
            outcomes[id - pending.firstID] = early
            unanswered -= 1
        }
        while unanswered > 0 {
            guard let message = try readMessage(until: nil) else { continue }
            switch message {
            case .notification(let notification):
                queuedNotifications.append(notification)
            case .replies(let replies):
                for reply in replies {
                    guard let id = reply.id else {
                        // The daemon could not read the request at all: that is this call's answer.
                        if case .failure(let error) = reply.outcome { throw error }
                        continue
                    }
                    guard ids.contains(id) else {
                        if id > 0 && id < nextRequestID { unclaimedAnswers[id] = reply.outcome }
                        continue
                    }
                    guard outcomes[id - pending.firstID] == nil else { continue }
                    outcomes[id - pending.firstID] = reply.outcome
                    unanswered -= 1
                }
            }
        }
        return outcomes.map { $0! }
    }

    /// Request lines, each within the daemon's limit unless a single request is longer on its own.
    public static func encodeLines(_ requests: ArraySlice<RPCRequest>) throws -> [[UInt8]] {
        var line =
            requests.count == 1 ? try requests.first!.jsonBytes() : try RPCRequest.jsonBytes(batch: requests)
        if line.count >= ControlProtocol.maxLineLength, requests.count > 1 {
            let middle = requests.startIndex + requests.count / 2
            return try encodeLines(requests[..<middle]) + encodeLines(requests[middle...])
        }
        line.append(UInt8(ascii: "\n"))
        return [line]
    }

    /// The next notification, or nil when `deadline` passes first (nil waits for ever).
    /// Throws `connectionLost` when the daemon closes the connection.
    public func nextNotification(until deadline: ContinuousClock.Instant?) throws(ControlClientError)
        -> RPCNotification?
    {
        if let queued = queuedNotifications.popFirst() { return queued }
        while let message = try readMessage(until: deadline) {
            if case .notification(let notification) = message { return notification }
        }
        return nil
    }

    /// Hands over, and forgets, the notifications that arrived while calls waited for their answers.
    public func takeQueuedNotifications() -> [RPCNotification] {
        defer { queuedNotifications = [] }
        return Array(queuedNotifications)
    }

    private func send(_ bytes: [UInt8]) throws(ControlClientError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in
                    try syscall("send") {
                        // MSG_NOSIGNAL: a daemon that went away is an error to report, not a SIGPIPE.
                        Glibc.send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                    }
                }
            }
            do {
                offset += try sent.get()
            } catch {
                // The daemon may have said why before it closed (another user is refused): read it.
                let goodbye = try? readMessage(until: .now + .milliseconds(300))
                if case .replies(let replies)? = goodbye, case .failure(let refusal)? = replies.first?.outcome {
                    throw .connectionLost(socketPath: socketPath, reason: refusal.message)
                }
                throw .connectionLost(socketPath: socketPath, reason: error.errnoText)
            }
        }
    }

    /// The next message, or nil when the deadline passed.
    private func readMessage(until deadline: ContinuousClock.Instant?) throws(ControlClientError) -> IncomingMessage? {
        while true {
            while let line = pendingLines.popFirst() {
                if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                return try IncomingMessage.decode(line: line)
            }
            // Without a deadline the read itself waits (the socket blocks): no poll before each read.
            if deadline != nil {
                guard try waitUntilReadable(deadline) else { return nil }
            }
            let received = readBuffer.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) in
                    try syscall("read") { read(descriptor, buffer.baseAddress, buffer.count) }
                }
            }
            let count: Int
            do {
                count = try received.get()
            } catch {
                throw .connectionLost(socketPath: socketPath, reason: error.errnoText)
            }
            if count == 0 { throw .connectionLost(socketPath: socketPath, reason: "the daemon closed the connection") }
            for output in framer.feed(readBuffer[..<count]) {
                switch output {
                case .line(let line): pendingLines.append(line)
                case .tooLong: throw .unexpectedAnswer("a line longer than \(framer.maxLineLength) bytes")
                }
            }
        }
    }

    /// Waits with `poll` until the socket has data (or was closed); false when the deadline passed.
    private func waitUntilReadable(_ deadline: ContinuousClock.Instant?) throws(ControlClientError) -> Bool {
        do {
            let ready = try syscall("poll") {
                // Computed again on each try, so an interrupted wait does not start its timeout over.
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                return poll(&entry, 1, Self.milliseconds(until: deadline))
            }
            return ready > 0
        } catch {
            throw .connectionLost(socketPath: socketPath, reason: error.description)
        }
    }

    /// `poll`'s timeout: -1 for no deadline, else the milliseconds left, rounded up.
    public static func milliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        if seconds >= Int64(Int32.max / 1000) { return Int32.max }
        let roundedUp = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(seconds * 1000 + roundedUp)
    }
}

@available(*, unavailable) extension DaemonConnection: Sendable {}
