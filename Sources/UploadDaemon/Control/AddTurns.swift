import Synchronization

/// The order in which one client's requests may hand out job IDs: the order their lines were read.
///
/// A client may send its next `add` before the answer to the one before (`uploadctl add` of a
/// folder keeps two requests in flight, so that the daemon checks and copies one request's files
/// while it syncs the other's). Each request runs in its own task, and tasks run in no set order:
/// on a busy machine the third line's task may reach the scheduler before the second's. So the
/// turn is taken where the lines are read, on the control queue (`take`), and an add hands out
/// its IDs only once every request read before it has ended its turn. A request that adds nothing
/// ends its turn as soon as it knows that; an add ends it once its IDs are handed out. Nothing in
/// between can fail or wait for anything but the checks of its files, so a turn always ends.
/// Turns are per client: an add whose files take long to check (a hung network mount) holds back
/// only the adds its own client sent after it.
final class AddTurns: Sendable {
    private struct State {
        /// The next turn handed out.
        var next = 0
        /// The oldest turn that has not ended: the one that may hand out IDs now.
        var current = 0
        /// Turns after `current` that ended already (a request that adds nothing ends at once).
        var ended: Set<Int> = []
        /// Adds waiting for the turns before theirs to end.
        var parked: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// The next request's turn, in the order the lines are read.
    func take() -> AddTurn {
        AddTurn(
            turns: self,
            number: state.withLock { state in
                defer { state.next += 1 }
                return state.next
            })
    }

    /// Returns once every turn before `number` has ended.
    func wait(for number: Int) async {
        await withCheckedContinuation { continuation in
            let goesOn = state.withLock { state in
                // Its turn, or one already over (a batch's adds ended it before its other requests ran).
                guard number > state.current, !state.ended.contains(number) else { return true }
                precondition(state.parked[number] == nil, "a turn waits once")
                state.parked[number] = continuation
                return false
            }
            if goesOn { continuation.resume() }
        }
    }

    /// Turn `number` is over; ending it again does nothing. The next turn's add goes on if it waits.
    func end(_ number: Int) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard number >= state.current, !state.ended.contains(number) else { return nil }
            state.ended.insert(number)
            while state.ended.remove(state.current) != nil { state.current += 1 }
            return state.parked.removeValue(forKey: state.current)
        }
        next?.resume()
    }

    /// Every turn handed out has ended.
    var isIdle: Bool { state.withLock { $0.current == $0.next } }

    /// How many adds wait for their turn (for tests).
    var parkedCount: Int { state.withLock { $0.parked.count } }
}

/// One request's place among its client's.
struct AddTurn: Sendable {
    let turns: AddTurns
    let number: Int

    /// Returns once every request its client sent before has ended its turn.
    func wait() async { await turns.wait(for: number) }

    func end() { turns.end(number) }
}
