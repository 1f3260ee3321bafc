import Synchronization

/// What other threads hand one control connection: its subscription's events and its finished
/// requests, kept in the order they came until the control queue takes them all at once.
///
/// The ends of many small uploads are announced in one turn of the scheduler: gathered here, they
/// cross to the control queue in one hop and leave in one write, not each in its own.
final class ConnectionOutbox: Sendable {
    enum Item: Sendable {
        case event([UInt8])
        /// A request of `requestBytes` was answered (nil: a notification, nothing to send).
        case finished(answer: [UInt8]?, requestBytes: Int)
    }

    private struct Contents {
        var items: [Item] = []
        var takeScheduled = false
    }

    private let contents = Mutex(Contents())

    /// Adds an item. True when the caller must have the control queue `take` it: nothing else
    /// waits to be taken, so no take is on its way.
    func post(_ item: Item) -> Bool {
        contents.withLock { contents in
            contents.items.append(item)
            defer { contents.takeScheduled = true }
            return !contents.takeScheduled
        }
    }

    /// Everything posted so far, oldest first; the next post schedules a take again.
    func take() -> [Item] {
        contents.withLock { contents in
            contents.takeScheduled = false
            defer { contents.items.removeAll(keepingCapacity: contents.items.count <= 64) }
            return contents.items
        }
    }
}
