import CShims
import Dispatch
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Accepts clients on the control socket and serves them on one serial queue; a thread of its own
/// (`ReadinessWatcher`) says which descriptors are ready.
///
/// Only clients with the daemon's own uid (SO_PEERCRED) are served, whatever the socket's mode,
/// and all of them together within a `ControlBudget`.
final class ControlServer: @unchecked Sendable {
    // Invariant: everything but `queue`, `listenFD` and `handler` is touched only on `queue`.
    private let queue = DispatchQueue(label: "uploadd.control")
    private let listenFD: Int32
    private let handler: ControlHandler
    private var watcher: ReadinessWatcher?
    private var stopped = false
    private var connections: [ControlClientID: ControlConnection] = [:]
    private let budget: ControlBudget
    private var overspendCheckScheduled = false
    /// Said once each time the clients reach `budget.maxClients`, not for every client refused.
    private var reportedClientLimit = false
    private var acceptPaused = false
    /// The listening socket's token in the watcher's reports; clients' are their numbers (from 1).
    private static let listenerToken: UInt64 = 0
    /// Said once per shortage of descriptors, not at every retry.
    private var reportedDescriptorShortage = false
    private var refusalLog = RefusalLogThrottle()

    init(listenFD: Int32, handler: ControlHandler, budget: ControlBudget) {
        self.listenFD = listenFD
        self.handler = handler
        self.budget = budget
    }

    func start() {
        let queue = queue
        let watcher = ReadinessWatcher(name: "uploadd-control") { [weak self] reports in
            queue.async { [weak self] in self?.ready(reports) }
        }
        queue.sync {
            self.watcher = watcher
            budget.onOverspent = { [unowned self] in scheduleOverspendCheck() }
            armListener()
        }
    }

    /// Stops accepting and closes every client.
    func stop() {
        queue.sync {
            guard !stopped else { return }
            stopped = true
            watcher?.forget(listenFD)
            for connection in Array(connections.values) { connection.shutDown() }
            watcher?.stop()
        }
    }

    private func ready(_ reports: [ReadinessWatcher.Report]) {
        guard !stopped else { return }
        for report in reports {
            if report.token == Self.listenerToken {
                acceptClients()
            } else {
                // A report about a client that has gone since finds nothing.
                connections[ControlClientID(number: report.token)]?.ready(report)
            }
        }
    }

    /// Arms the listening socket for a report of the next client.
    private func armListener() {
        guard let watcher, !stopped, !acceptPaused else { return }
        do {
            try watcher.arm(listenFD, token: Self.listenerToken, readable: true, writable: false)
        } catch {
            Log.error("control socket: \(error); trying again in a moment")
            retryAcceptingSoon()
        }
    }

    private func acceptClients() {
        while true {
            let fd = CShims_accept_nonblocking(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    pauseAccepting(because: SystemError("accept"))
                    return
                }
                if errno != EAGAIN && errno != EWOULDBLOCK { Log.warning("control socket: \(SystemError("accept"))") }
                armListener()
                return
            }
            var pid: pid_t = 0
            var uid: uid_t = 0
            var gid: gid_t = 0
            guard CShims_peer_credentials(fd, &pid, &uid, &gid) == 0, uid == getuid() else {
                logRefusal(uid: uid, pid: pid)
                refuse(
                    fd,
                    RPCError(code: RPCError.deniedCode, message: "permission denied: uploadd serves only its own user"))
                continue
            }
            reportedDescriptorShortage = false
            guard connections.count < budget.maxClients else {
                refuseOverLimit(fd)
                continue
            }
            reportedClientLimit = false
            let id = ControlClientID.next()
            handler.connectionOpened(id)
            let connection = ControlConnection(
                fd: fd, token: id.number, watcher: watcher!, budget: budget,
                onRequest: { [unowned self] connection, line in dispatch(line, from: connection, id: id) },
                onClose: { [unowned self] _ in
                    connections[id] = nil
                    handler.connectionClosed(id)
                })
            connections[id] = connection
            connection.start()
        }
    }

    /// Tells a client it is not served, and closes it. The line fits in the socket's buffer.
    private func refuse(_ fd: Int32, _ error: RPCError) {
        var bytes = ControlHandler.answerLine(RPCResponse(id: .null, error: error))
        _ = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
    }

    /// Logs a client refused for its uid, or counts it once more have been (`RefusalLogThrottle`).
    private func logRefusal(uid: uid_t, pid: pid_t) {
        let (log, startTimer) = refusalLog.refused("\(uid) (pid \(pid))")
        if log {
            Log.warning("control socket: refused a client of uid \(uid) (pid \(pid)): only uid \(getuid()) is served")
        }
        if startTimer { countRefusalsInAMinute() }
    }

    private func countRefusalsInAMinute() {
        queue.asyncAfter(deadline: .now() + RefusalLogThrottle.interval) { [weak self] in
            guard let self, !stopped else { return }
            let (line, again) = refusalLog.minutePassed()
            if let line { Log.warning(line) }
            if again { countRefusalsInAMinute() }
        }
    }

    private func refuseOverLimit(_ fd: Int32) {
        if !reportedClientLimit {
            reportedClientLimit = true
            Log.warning(
                "control socket: \(budget.maxClients) clients connected, the most served at once; refusing more")
        }
        refuse(fd, RPCError(code: RPCError.busyCode, message: budget.refusal))
    }

    /// The bytes held for clients grew past the budget: once the work at hand is done, the clients
    /// holding the most are disconnected until the rest fit.
    private func scheduleOverspendCheck() {
        guard !overspendCheckScheduled else { return }
        overspendCheckScheduled = true
        queue.async { [weak self] in self?.disconnectGreediestWhileOverspent() }
    }

    private func disconnectGreediestWhileOverspent() {
        overspendCheckScheduled = false
        while budget.isOverspent,
            let greediest = connections.values.max(by: { $0.heldBytes < $1.heldBytes }), greediest.heldBytes > 0
        {
            Log.warning(
                "control client on fd \(greediest.fd) holds \(greediest.heldBytes >> 10) KiB (unread or unfinished), the most of all clients, who hold more than the \(budget.maxHeldBytes >> 20) MiB allowed together; disconnecting it"
            )
            greediest.shutDown()
        }
    }

    /// Out of descriptors: the listening socket stays readable, so accepting again at once would
    /// spin. Wait a moment (clients finish and free descriptors), saying so once.
    private func pauseAccepting(because error: SystemError) {
        if !reportedDescriptorShortage {
            reportedDescriptorShortage = true
            Log.warning(
                "control socket: \(error); \(connections.count) clients connected; accepting more as they leave")
        }
        retryAcceptingSoon()
    }

    private func retryAcceptingSoon() {
        guard !acceptPaused else { return }
        acceptPaused = true
        queue.asyncAfter(deadline: .now() + .milliseconds(250)) { [weak self] in
            guard let self, self.acceptPaused else { return }
            self.acceptPaused = false
            self.armListener()
        }
    }

    /// Hands a request line to the handler; its answer and its subscription's events come back to
    /// the connection numbered `id`, and go nowhere once that has closed.
    private func dispatch(_ line: [UInt8], from connection: ControlConnection, id: ControlClientID) {
        let outbox = connection.outbox
        let queue = queue
        let post: @Sendable (ConnectionOutbox.Item) -> Void = { [weak self] item in
            guard outbox.post(item) else { return }
            queue.async { [weak self] in self?.deliver(outbox.take(), to: id) }
        }
        let handler = handler
        let requestBytes = line.count
        budget.requestStarted(bytes: requestBytes)
        // Taken here, in the order the lines are read: the tasks below may run in any order.
        let turn = connection.addTurns.take()
        Task {
            let client = ControlHandler.Client(id: id, deliver: { post(.event($0)) }, turn: turn)
            let answer = await handler.handle(line: line, client: client)
            post(.finished(answer: answer, requestBytes: requestBytes))
        }
    }

    /// Hands a connection what its outbox held, once the budget has taken back its requests that
    /// ended: whether or not the client is still there to read the answers.
    private func deliver(_ items: [ConnectionOutbox.Item], to id: ControlClientID) {
        for case .finished(_, let requestBytes) in items { budget.requestEnded(bytes: requestBytes) }
        connections[id]?.receive(items)
    }
}
