/// Queued jobs ready to start, in the order they start: higher priority first, then FIFO (lower ID).
public struct ReadyQueue: Sendable {
    private struct Entry: Comparable {
        var priority: Int
        var id: JobID

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.priority != rhs.priority ? lhs.priority > rhs.priority : lhs.id < rhs.id
        }
    }

    /// Sorted ascending by `Entry.<`. New jobs usually go at the end, so insertion is cheap.
    private var entries: [Entry] = []
    private var members: Set<JobID> = []
    private var head = 0

    public init() {}

    /// A queue of many jobs at once, sorted once (inserting 100,000 jobs in random order one by one
    /// would move the array for each).
    public init(_ jobs: [(id: JobID, priority: Int)]) {
        for job in jobs where members.insert(job.id).inserted { entries.append(Entry(priority: job.priority, id: job.id)) }
        entries.sort()
    }

    public var count: Int { entries.count - head }
    public var isEmpty: Bool { count == 0 }

    public func contains(_ id: JobID) -> Bool { members.contains(id) }

    public mutating func insert(_ id: JobID, priority: Int) {
        guard members.insert(id).inserted else { return }
        let entry = Entry(priority: priority, id: id)
        if let last = entries.last, head < entries.count, last < entry {
            entries.append(entry)
            return
        }
        entries.insert(entry, at: insertionIndex(for: entry))
    }

    public mutating func remove(_ id: JobID, priority: Int) {
        guard members.remove(id) != nil else { return }
        let entry = Entry(priority: priority, id: id)
        let index = insertionIndex(for: entry)
        if index < entries.count, entries[index] == entry { entries.remove(at: index) }
    }

    /// The next job to start, removed from the queue.
    public mutating func popFirst() -> JobID? {
        guard head < entries.count else { return nil }
        let entry = entries[head]
        head += 1
        members.remove(entry.id)
        if head > 1024 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return entry.id
    }

    /// The IDs in start order.
    public var orderedIDs: [JobID] { entries[head...].map(\.id) }

    private func insertionIndex(for entry: Entry) -> Int {
        var low = head
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle] < entry { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
