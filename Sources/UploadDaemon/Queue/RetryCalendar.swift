import Foundation
import UploadCore
import UploadWire

/// Queued jobs waiting for their retry time, each with that time, so that the earliest is found
/// and the due ones taken without looking at every job: with a dead server and thousands of jobs
/// backing off, each failure and each timer firing used to walk (and copy) all of them.
///
/// A min-heap of (time, job) beside a dictionary of each job's current time. Removing a
/// job or moving its time leaves its old heap entry behind; an entry whose time is no longer its
/// job's is dropped when it reaches the top, and the heap is rebuilt when such entries outnumber
/// the live ones.
struct RetryCalendar: Sendable {
    private struct Entry: Sendable, Comparable {
        var time: Date
        var id: JobID

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.time < rhs.time || (lhs.time == rhs.time && lhs.id < rhs.id)
        }
    }

    private var times: [JobID: Date] = [:]
    private var heap = MinHeap<Entry>()

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
        heap.insert(Entry(time: time, id: id))
        rebuildIfMostlyStale()
    }

    mutating func remove(_ id: JobID) {
        guard times.removeValue(forKey: id) != nil else { return }
        rebuildIfMostlyStale()
    }

    /// The earliest time any job waits for.
    mutating func earliest() -> Date? {
        dropStaleTop()
        return heap.min?.time
    }

    /// Takes out the jobs whose time is at or before `now`, earliest first.
    mutating func takeDue(at now: Date) -> [JobID] {
        var due: [JobID] = []
        while true {
            dropStaleTop()
            guard let top = heap.min, top.time <= now else { break }
            heap.popMin()
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
        while let top = heap.min, !isCurrent(top) { heap.popMin() }
    }

    private mutating func rebuildIfMostlyStale() {
        if heap.count > 64 && heap.count > 2 * times.count { rebuildHeap() }
    }

    /// One entry per job.
    private mutating func rebuildHeap() {
        heap = MinHeap(times.map { Entry(time: $0.value, id: $0.key) })
    }
}
