/// The order in which one client's adds take their IDs.
///
/// A client may send its next `add` before the answer to the one before (`uploadctl add` of a
/// folder keeps two requests in flight, so that the daemon checks and copies one request's files
/// while it syncs the other's). Their files are checked at the same time, and the second's checks
/// may end first; its IDs still come after the first's, so the jobs queue in the order they reached
/// the scheduler. An add takes its turn when it reaches the scheduler and ends it once its IDs are
/// handed out: nothing in between can fail or wait for anything but the checks, so a turn always
/// ends. Turns are per client: an add whose files take long to check (a hung network mount) holds
/// back only the adds its own client sent after it.
struct AddTurns {
    /// The next turn handed out.
    private var next = 0
    /// The turn that may hand out IDs now.
    private var current = 0
    /// Adds whose checks ended before their turn came.
    private var parked: [Int: CheckedContinuation<Void, Never>] = [:]

    mutating func take() -> Int {
        defer { next += 1 }
        return next
    }

    func isCurrent(_ turn: Int) -> Bool { turn == current }

    /// Every turn handed out has ended.
    var isIdle: Bool { current == next }

    /// The add of `turn` waits in `continuation` until the turns before it end.
    mutating func park(_ turn: Int, _ continuation: CheckedContinuation<Void, Never>) {
        precondition(turn > current && parked[turn] == nil, "a turn waits once, before it comes")
        parked[turn] = continuation
    }

    /// Turn `turn` is over. Returns the next turn's add to go on, if it is waiting.
    mutating func end(_ turn: Int) -> CheckedContinuation<Void, Never>? {
        precondition(turn == current, "add turns end in order")
        current += 1
        return parked.removeValue(forKey: current)
    }
}

extension Scheduler {
    /// One add's place among its client's.
    struct AddTurn {
        var client: ControlClientID
        var number: Int
    }

    /// The add's turn among `client`'s adds; nil: no client to keep in order (the add goes on).
    func takeAddTurn(for client: ControlClientID?) -> AddTurn? {
        guard let client else { return nil }
        return AddTurn(client: client, number: addTurns[client, default: AddTurns()].take())
    }

    /// Returns once every add its client sent before `turn` has its IDs.
    func waitForTurn(_ turn: AddTurn?) async {
        guard let turn, addTurns[turn.client]?.isCurrent(turn.number) == false else { return }
        await withCheckedContinuation { addTurns[turn.client]?.park(turn.number, $0) }
    }

    func endTurn(_ turn: AddTurn?) {
        guard let turn else { return }
        let next = addTurns[turn.client]?.end(turn.number)
        if addTurns[turn.client]?.isIdle == true { addTurns[turn.client] = nil }
        next?.resume()
    }
}
