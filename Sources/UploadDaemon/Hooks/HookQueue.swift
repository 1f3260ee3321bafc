import UploadWire

/// The hooks owed, in the order their jobs ended: at most `maxRunning` at once, a job's hook once
/// however often it is owed while it waits or runs. A state machine with no clock and no
/// processes: the scheduler says what happened and starts the hooks `next()` hands it.
struct HookQueue {
    /// Hooks running at once; more wait their turn.
    static let maxRunning = 4

    private var backlog: [JobID] = []
    private var start = 0
    /// Jobs waiting or running: owing again changes nothing.
    private var owed: Set<JobID> = []
    private(set) var running = 0

    /// A job's hook is owed; false if it was already.
    @discardableResult
    mutating func owe(_ id: JobID) -> Bool {
        guard owed.insert(id).inserted else { return false }
        backlog.append(id)
        return true
    }

    /// The next hook to start while a slot is free, counted as running from now on; nil: none
    /// waits, or every slot is taken.
    mutating func next() -> JobID? {
        guard running < Self.maxRunning, start < backlog.count else { return nil }
        let id = backlog[start]
        start += 1
        if start == backlog.count {
            backlog.removeAll(keepingCapacity: true)
            start = 0
        }
        running += 1
        return id
    }

    /// A hook `next()` handed out ended, or turned out not to be owed (its job is gone, or owes
    /// none now): its slot is free, and its job may owe a hook again.
    mutating func ended(_ id: JobID) {
        guard owed.remove(id) != nil else { return }
        running -= 1
    }

}
