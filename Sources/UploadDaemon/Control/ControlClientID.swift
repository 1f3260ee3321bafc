import Synchronization

/// One client of the control socket, for as long as the daemon runs.
///
/// Numbered at accept and never reused. The connection object's address was the key before, and a
/// connection accepted after another was freed could get its address: the old connection's late
/// answers, events and subscriptions then went to the new client, and its count of requests in
/// flight never came back to 0.
struct ControlClientID: Hashable, Sendable, CustomStringConvertible {
    let number: UInt64

    private static let last = Atomic<UInt64>(0)

    /// A number no client had before.
    static func next() -> ControlClientID {
        ControlClientID(number: last.add(1, ordering: .relaxed).newValue)
    }

    var description: String { "control client \(number)" }
}
