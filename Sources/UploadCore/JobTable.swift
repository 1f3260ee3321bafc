import UploadWire

/// The jobs by ID. IDs are handed out in order and jobs are cleared mostly in the order they were
/// added, so the table is kept in pages of `pageSize` IDs: a page is made when its first job comes
/// and freed when its last job goes. A job costs one 8-byte slot, where a dictionary by ID cost
/// about 34 bytes (16 per entry at up to 75% load, in a power of two): with a million jobs queued,
/// 24 MiB less (issue 51). The pages are kept in order of their numbers and found by a binary
/// search, the last page (the newest jobs') first, so IDs far apart (a few old jobs kept among
/// millions cleared) cost a page each (2 KiB), not the room between them. A dictionary of the
/// pages hashed the number at each of the ~17 looks a small file's upload makes. Jobs iterate by
/// ID.
public struct JobTable: Sendable, Equatable, Sequence {
    static let pageShift = 8
    static let pageSize = 1 << pageShift

    fileprivate struct Page: Sendable {
        /// IDs `number << pageShift` and the `pageSize - 1` after it.
        let number: UInt64
        var slots = [Job?](repeating: nil, count: JobTable.pageSize)
        var count = 0

        init(number: UInt64) { self.number = number }
    }

    /// By `number`, ascending.
    private var pages: [Page] = []
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { count == 0 }

    /// How many pages are kept: what the table costs beyond a slot per job.
    var pageCount: Int { pages.count }

    fileprivate static func split(_ id: JobID) -> (page: UInt64, slot: Int) {
        (id.rawValue >> UInt64(pageShift), Int(id.rawValue & UInt64(pageSize - 1)))
    }

    /// The index of page `number` in `pages`, or where it would go.
    private func index(of number: UInt64) -> (index: Int, found: Bool) {
        if let last = pages.last, last.number <= number {
            return last.number == number ? (pages.count - 1, true) : (pages.count, false)
        }
        var low = 0
        var high = pages.count
        while low < high {
            let middle = (low + high) / 2
            if pages[middle].number < number { low = middle + 1 } else { high = middle }
        }
        return (low, low < pages.count && pages[low].number == number)
    }

    public subscript(id: JobID) -> Job? {
        get {
            let (number, slot) = Self.split(id)
            let (index, found) = index(of: number)
            return found ? pages[index].slots[slot] : nil
        }
        set {
            if let newValue { updateValue(newValue, forKey: id) } else { removeValue(forKey: id) }
        }
    }

    /// Sets the job of `id`; the job it replaces, if any.
    @discardableResult
    public mutating func updateValue(_ job: Job, forKey id: JobID) -> Job? {
        let (number, slot) = Self.split(id)
        let (index, found) = index(of: number)
        if !found { pages.insert(Page(number: number), at: index) }
        let old = Self.put(job, at: slot, in: &pages[index])
        if old == nil { count += 1 }
        return old
    }

    @discardableResult
    public mutating func removeValue(forKey id: JobID) -> Job? {
        let (number, slot) = Self.split(id)
        let (index, found) = index(of: number)
        guard found, pages[index].slots[slot] != nil, let old = Self.put(nil, at: slot, in: &pages[index])
        else { return nil }
        count -= 1
        if pages[index].count == 0 { pages.remove(at: index) }
        return old
    }

    /// Changes the job of `id` in place, without a copy of its fields; nil when there is none.
    public mutating func modify<Result>(_ id: JobID, _ change: (inout Job) -> Result) -> Result? {
        let (number, slot) = Self.split(id)
        let (index, found) = index(of: number)
        guard found, pages[index].slots[slot] != nil else { return nil }
        return change(&pages[index].slots[slot]!)
    }

    /// Puts `job` in a slot of `page` (changed in place), keeping the page's count; the job it replaces.
    private static func put(_ job: Job?, at slot: Int, in page: inout Page) -> Job? {
        let old = page.slots[slot]
        page.slots[slot] = job
        page.count += (job == nil ? 0 : 1) - (old == nil ? 0 : 1)
        return old
    }

    /// Makes room in the page list for about `count` jobs: a replay of a million jobs otherwise
    /// grows it twelve times.
    public mutating func reserveCapacity(_ count: Int) {
        pages.reserveCapacity(count / Self.pageSize + 1)
    }

    /// Gives back what `reserveCapacity` guessed too high, or what pages freed since left.
    public mutating func fitCapacity() {
        guard pages.capacity > pages.count else { return }
        var fitted: [Page] = []
        fitted.reserveCapacity(pages.count)
        fitted.append(contentsOf: pages)
        pages = fitted
    }

    // MARK: Sequence: the jobs by ID

    public struct Iterator: IteratorProtocol {
        private let pages: [(number: UInt64, slots: [Job?])]
        private var page = 0
        private var slot = 0

        /// The jobs from ID `first` on.
        fileprivate init(_ table: JobTable, from first: UInt64 = 0) {
            let (firstPage, firstSlot) = JobTable.split(JobID(first))
            self.pages = table.pages[table.index(of: firstPage).index...].map { ($0.number, $0.slots) }
            if self.pages.first?.number == firstPage { slot = firstSlot }
        }

        public mutating func next() -> (key: JobID, value: Job)? {
            while page < pages.count {
                let (number, slots) = pages[page]
                while slot < slots.count {
                    defer { slot += 1 }
                    if let job = slots[slot] {
                        return (JobID(number << UInt64(JobTable.pageShift) | UInt64(slot)), job)
                    }
                }
                page += 1
                slot = 0
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(self) }

    public var underestimatedCount: Int { count }

    /// The IDs, in order.
    public var keys: Keys { Keys(table: self, from: 0) }

    /// The IDs after `after` (all when nil), in order: a page of `job.list` starts where the last
    /// one ended, without a walk past the IDs before it.
    public func keys(after: JobID?) -> Keys {
        guard let after else { return keys }
        guard after.rawValue < UInt64.max else { return Keys(table: JobTable(), from: 0) }
        return Keys(table: self, from: after.rawValue + 1)
    }

    /// The jobs, by ID.
    public var values: Values { Values(table: self) }

    public struct Keys: Sequence {
        fileprivate let table: JobTable
        fileprivate let from: UInt64
        public func makeIterator() -> Iterator { Iterator(all: JobTable.Iterator(table, from: from)) }

        public struct Iterator: IteratorProtocol {
            fileprivate var all: JobTable.Iterator
            public mutating func next() -> JobID? { all.next()?.key }
        }
    }

    public struct Values: Sequence {
        fileprivate let table: JobTable
        public var underestimatedCount: Int { table.count }
        public func makeIterator() -> Iterator { Iterator(all: table.makeIterator()) }

        public struct Iterator: IteratorProtocol {
            fileprivate var all: JobTable.Iterator
            public mutating func next() -> Job? { all.next()?.value }
        }
    }

    public static func == (lhs: JobTable, rhs: JobTable) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs) { $0.key == $1.key && $0.value == $1.value }
    }
}
