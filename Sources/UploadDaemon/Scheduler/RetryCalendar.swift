import Foundation
import UploadCore
import UploadWire

/// Queued jobs waiting for their retry time, each with that time, so that the earliest is found
/// and the due ones taken without looking at every job: with a dead server and thousands of jobs
/// backing off, each failure and each timer firing used to walk (and copy) all of them.
///
/// A binary min-heap of (time, job) beside a dictionary of each job's current time. Removing a
/// job or moving its time leaves its old heap entry behind; an entry whose time is no longer its
/// job's is dropped when it reaches the top, and the heap is rebuilt when such entries outnumber
/// the live ones.
struct RetryCalendar: Sendable {
    private struct Entry: Sendable {
        var time: Date
        var id: JobID
    }

    private var times: [JobID: Date] = [:]
    private var heap: [Entry] = []

    init() {}

    init(_ times: [JobID: Date]) {
        self.times = times
        rebuildHeap()
    }

    var isEmpty: Bool { times.isEmpty }
    var count: Int { times.count }
    var jobs: Dictionary<JobID, Date>.Keys { times.keys }

    func contains(_ id: JobID) -> Bool { times[id] != nil }

    /// Sets (or moves) the time `id` waits for.
    mutating func insert(_ id: JobID, at time: Date) {
        guard times.updateValue(time, forKey: id) != time else { return }
        heap.append(Entry(time: time, id: id))
        siftUp(heap.count - 1)
        rebuildIfMostlyStale()
    }

    mutating func remove(_ id: JobID) {
        guard times.removeValue(forKey: id) != nil else { return }
        rebuildIfMostlyStale()
    }

    /// The earliest time any job waits for.
    mutating func earliest() -> Date? {
        dropStaleTop()
        return heap.first?.time
    }

    /// Takes out the jobs whose time is at or before `now`, earliest first.
    mutating func takeDue(at now: Date) -> [JobID] {
        var due: [JobID] = []
        while true {
            dropStaleTop()
            guard let top = heap.first, top.time <= now else { break }
            popTop()
            times[top.id] = nil
            due.append(top.id)
        }
        times.shrinkIfSparse()
        return due
    }

    mutating func shrinkIfSparse() { times.shrinkIfSparse() }

    // MARK: - The heap

    private func isCurrent(_ entry: Entry) -> Bool { times[entry.id] == entry.time }

    private mutating func dropStaleTop() {
        while let top = heap.first, !isCurrent(top) { popTop() }
    }

    private mutating func rebuildIfMostlyStale() {
        if heap.count > 64 && heap.count > 2 * times.count { rebuildHeap() }
    }

    /// One entry per job, in heap order (Floyd's bottom-up construction, linear).
    private mutating func rebuildHeap() {
        heap = times.map { Entry(time: $0.value, id: $0.key) }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.time < b.time || (a.time == b.time && a.id < b.id)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && Self.precedes(heap[left], heap[first]) { first = left }
            if right < heap.count && Self.precedes(heap[right], heap[first]) { first = right }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}
