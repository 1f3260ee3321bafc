/// The `capacity` smallest of the values offered, in one pass and `capacity` of memory: a heap
/// whose top, the largest kept, gives way to each smaller value offered. A page of `job.list` out
/// of a million jobs costs one pass over them and the page, not a sort of them all.
struct SmallestValues<Value: Comparable> {
    /// A value ordered the other way round: the min-heap of these has the largest on top.
    private struct Largest: Comparable {
        var value: Value
        static func < (lhs: Largest, rhs: Largest) -> Bool { rhs.value < lhs.value }
    }

    let capacity: Int
    private var kept = MinHeap<Largest>()

    init(capacity: Int) {
        precondition(capacity > 0, "a page holds at least one value")
        self.capacity = capacity
    }

    /// Whether `offer(value)` would keep it: a caller whose values cost something to check first
    /// (a lookup) asks this before, and spares it for most values once the heap is full.
    func wouldKeep(_ value: Value) -> Bool {
        guard let largest = kept.min, kept.count == capacity else { return true }
        return value < largest.value
    }

    mutating func offer(_ value: Value) {
        guard wouldKeep(value) else { return }
        if kept.count < capacity {
            kept.insert(Largest(value: value))
        } else {
            kept.replaceMin(with: Largest(value: value))
        }
    }

    /// The values kept, smallest first.
    func sorted() -> [Value] { kept.elements.map(\.value).sorted() }
}
