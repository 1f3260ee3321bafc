/// What all clients of the control socket may cost together. Each connection keeps limits of its
/// own (`ControlConnection`); these bound their sum, so that any number of clients at once (a
/// script that starts thousands of `uploadctl`, a program that opens connections and never reads)
/// costs the daemon a known amount, and never the descriptors its uploads need.
///
/// - Clients: at most `maxClients` at once; one more is told so (`refusal`) and closed.
/// - Requests being worked on: at most `maxRequests`, holding at most `maxRequestBytes` of request
///   lines. A client whose next line does not fit waits, and waiting clients are let on in the
///   order they began to wait.
/// - Bytes held for clients (answers and events they have not read, and lines they have begun but
///   not ended): over `maxHeldBytes`, the client holding the most is disconnected, then the next,
///   until the rest fit.
///
/// Threading: everything runs on the control server's queue.
final class ControlBudget {
    /// Half the descriptors the daemon may open (the other half are for its uploads: a source,
    /// a snapshot and a socket each), at most 4,096 and at least 16.
    let maxClients: Int
    let maxRequests: Int
    let maxRequestBytes: Int
    let maxHeldBytes: Int
    private(set) var requests = 0
    private(set) var requestBytes = 0
    private(set) var heldBytes = 0
    /// Clients waiting for room for their next request, oldest first from `waitingHead`.
    private var waiting: [() -> Void] = []
    private var waitingHead = 0
    /// Says that the bytes held grew past the budget: the server then disconnects the greediest.
    var onOverspent: () -> Void = {}

    /// `descriptorLimit`: the daemon's soft RLIMIT_NOFILE, as it raised it at start. The other
    /// limits are the daemon's; smaller ones are for tests.
    init(
        descriptorLimit: Int, maxRequests: Int = 4096,
        maxRequestBytes: Int = 32 << 20, maxHeldBytes: Int = 128 << 20
    ) {
        maxClients = min(4096, max(16, descriptorLimit / 2))
        self.maxRequests = maxRequests
        self.maxRequestBytes = maxRequestBytes
        self.maxHeldBytes = maxHeldBytes
    }

    /// The error a client over `maxClients` gets before it is closed.
    var refusal: String {
        "uploadd is serving as many clients as it takes at once (\(maxClients)); "
            + "close some of them (or wait for them to finish) and try again"
    }

    /// False when a request of `bytes` must wait for others to end. One request always fits.
    func hasRoom(forRequestOf bytes: Int) -> Bool {
        requests == 0 || (requests < maxRequests && requestBytes + bytes <= maxRequestBytes)
    }

    func requestStarted(bytes: Int) {
        requests += 1
        requestBytes += bytes
    }

    /// A request of `bytes` ended (answered, or its client is gone): the clients waiting when it
    /// ended are let on, oldest first, while there is room; one whose line still does not fit
    /// waits again, behind them.
    func requestEnded(bytes: Int) {
        requests -= 1
        requestBytes -= bytes
        let end = waiting.count
        while waitingHead < end && requests < maxRequests {
            let resume = waiting[waitingHead]
            waitingHead += 1
            resume()
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 64)
            waitingHead = 0
        }
    }

    /// A client has a request that does not fit: `resume` is called once one ends.
    func waitForRoom(_ resume: @escaping () -> Void) {
        waiting.append(resume)
    }

    /// The bytes held for a client grew (positive) or were written or dropped (negative).
    func heldChanged(by delta: Int) {
        heldBytes += delta
        if delta > 0 && isOverspent { onOverspent() }
    }

    /// Whether the server should disconnect another client now.
    var isOverspent: Bool { heldBytes > maxHeldBytes }
}

@available(*, unavailable)
extension ControlBudget: Sendable {}
