import UploadWire

/// Where a job stands in the queue: higher priority first, then lower rank (its ID unless it was
/// moved, `Job.place`).
public struct QueuePlace: Sendable, Equatable {
    public var priority: Int
    public var rank: Int64

    public init(priority: Int, rank: Int64) {
        self.priority = priority
        self.rank = rank
    }

    /// The queue's order: higher priority, then lower rank, then lower ID.
    public static func startsBefore(_ lhs: (id: JobID, place: QueuePlace), _ rhs: (id: JobID, place: QueuePlace))
        -> Bool
    {
        if lhs.place.priority != rhs.place.priority { return lhs.place.priority > rhs.place.priority }
        if lhs.place.rank != rhs.place.rank { return lhs.place.rank < rhs.place.rank }
        return lhs.id < rhs.id
    }
}

/// Queued jobs ready to start, in the order they start: higher priority first, then lower rank,
/// then FIFO (lower ID).
public struct ReadyQueue: Sendable {
    private struct Entry: Comparable {
        var place: QueuePlace
        var id: JobID

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            QueuePlace.startsBefore((lhs.id, lhs.place), (rhs.id, rhs.place))
        }
    }

    /// Sorted ascending by `Entry.<`. New jobs usually go at the end, so insertion is cheap.
    private var entries: [Entry] = []
    private var members = JobIDSet()
    private var head = 0

    public init() {}

    /// A queue of many jobs at once, sorted once (inserting 100,000 jobs in random order one by one
    /// would move the array for each).
    public init(_ jobs: [(id: JobID, place: QueuePlace)]) {
        entries.reserveCapacity(jobs.count)
        for job in jobs where members.insert(job.id) {
            entries.append(Entry(place: job.place, id: job.id))
        }
        entries.sort()
    }

    /// A queue of jobs that were never moved: by priority, then ID.
    public init(_ jobs: [(id: JobID, priority: Int)]) {
        self.init(jobs.map { ($0.id, QueuePlace(priority: $0.priority, rank: Job.defaultRank(of: $0.id))) })
    }

    public var count: Int { entries.count - head }
    public var isEmpty: Bool { count == 0 }

    public func contains(_ id: JobID) -> Bool { members.contains(id) }

    public mutating func insert(_ id: JobID, priority: Int) {
        insert(id, at: QueuePlace(priority: priority, rank: Job.defaultRank(of: id)))
    }

    public mutating func remove(_ id: JobID, priority: Int) {
        remove(id, at: QueuePlace(priority: priority, rank: Job.defaultRank(of: id)))
    }

    /// False when the job was in the queue already.
    @discardableResult
    public mutating func insert(_ id: JobID, at place: QueuePlace) -> Bool {
        guard members.insert(id) else { return false }
        let entry = Entry(place: place, id: id)
        if let last = entries.last, head < entries.count, last < entry {
            entries.append(entry)
            return true
        }
        // Back at the front, where a job popped and put back goes (the slot before `head` was
        // popped already): no move of the whole queue.
        if head > 0, head == entries.count || entry < entries[head] {
            head -= 1
            entries[head] = entry
            return true
        }
        entries.insert(entry, at: insertionIndex(for: entry))
        return true
    }

    /// `place` must be where the job was inserted. False when it was not in the queue.
    @discardableResult
    public mutating func remove(_ id: JobID, at place: QueuePlace) -> Bool {
        guard members.remove(id) else { return false }
        let entry = Entry(place: place, id: id)
        let index = insertionIndex(for: entry)
        if index < entries.count, entries[index] == entry { entries.remove(at: index) }
        return true
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

    /// The next job to start, left in the queue.
    public var first: JobID? { head < entries.count ? entries[head].id : nil }

    /// The IDs in start order.
    public var orderedIDs: [JobID] { entries[head...].map(\.id) }

    /// How many jobs of the queue start before a job at `place` (in the queue or not): a binary
    /// search, for the position of a few jobs without a pass over all of them.
    public func countStartingBefore(_ id: JobID, at place: QueuePlace) -> Int {
        insertionIndex(for: Entry(place: place, id: id)) - head
    }

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
