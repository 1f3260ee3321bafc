import TestSupport
import Testing
import UploadWire

@testable import UploadCore

@Suite("ReadyQueue: priority, then FIFO")
struct ReadyQueueTests {
    static func drain(_ queue: inout ReadyQueue) -> [UInt64] {
        var out: [UInt64] = []
        while let id = queue.popFirst() { out.append(id.rawValue) }
        return out
    }

    @Test func higherPriorityFirstThenLowerID() {
        var queue = ReadyQueue()
        queue.insert(JobID(5), priority: 0)
        queue.insert(JobID(3), priority: 0)
        queue.insert(JobID(9), priority: 10)
        queue.insert(JobID(1), priority: -5)
        queue.insert(JobID(4), priority: 10)
        #expect(queue.orderedIDs.map(\.rawValue) == [4, 9, 3, 5, 1])
        #expect(Self.drain(&queue) == [4, 9, 3, 5, 1])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }

    @Test func builtAtOnceItIsInTheSameOrderAsInsertedOneByOne() {
        let jobs: [(id: JobID, priority: Int)] = (1...500).map { (JobID(UInt64($0)), $0 % 3) }.shuffled()
        var oneByOne = ReadyQueue()
        for job in jobs { oneByOne.insert(job.id, priority: job.priority) }
        var atOnce = ReadyQueue(jobs + [jobs[0]])
        #expect(atOnce.count == 500)
        #expect(atOnce.orderedIDs == oneByOne.orderedIDs)
        atOnce.insert(JobID(1000), priority: 5)
        #expect(atOnce.popFirst() == JobID(1000))
    }

    @Test func duplicatesAreIgnored() {
        var queue = ReadyQueue()
        queue.insert(JobID(1), priority: 0)
        queue.insert(JobID(1), priority: 0)
        queue.insert(JobID(1), priority: 7)
        #expect(queue.count == 1)
        #expect(Self.drain(&queue) == [1])
    }

    @Test func removeTakesOutJustThatJob() {
        var queue = ReadyQueue()
        for id in UInt64(1)...5 { queue.insert(JobID(id), priority: Int(id % 2)) }
        queue.remove(JobID(3), priority: 1)
        queue.remove(JobID(42), priority: 0)  // unknown: nothing happens
        #expect(!queue.contains(JobID(3)))
        #expect(queue.contains(JobID(5)))
        #expect(queue.count == 4)
        #expect(Self.drain(&queue) == [1, 5, 2, 4])
    }

    @Test func aPoppedJobCanBeInsertedAgain() {
        var queue = ReadyQueue()
        queue.insert(JobID(1), priority: 0)
        queue.insert(JobID(2), priority: 0)
        #expect(queue.popFirst() == JobID(1))
        #expect(!queue.contains(JobID(1)))
        queue.insert(JobID(1), priority: 0)
        #expect(Self.drain(&queue) == [1, 2])
    }

    /// Random inserts, removes and pops against a plain sorted array; long enough that the queue
    /// compacts its consumed head (more than 1024 pops).
    @Test(arguments: [UInt64(1), 2, 3])
    func matchesASortedReference(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var queue = ReadyQueue()
        var reference: [(priority: Int, id: UInt64)] = []
        var priorities: [UInt64: Int] = [:]
        func sortedReference() -> [UInt64] {
            reference.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }.map(\.id)
        }
        for step in 0..<20_000 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 5 {
                let id = UInt64.random(in: 1...3000, using: &random)
                let priority = priorities[id] ?? Int.random(in: -2...2, using: &random)
                queue.insert(JobID(id), priority: priority)
                if !reference.contains(where: { $0.id == id }) {
                    reference.append((priority, id))
                    priorities[id] = priority
                }
            } else if roll < 7, let victim = reference.randomElement(using: &random) {
                queue.remove(JobID(victim.id), priority: victim.priority)
                reference.removeAll { $0.id == victim.id }
            } else {
                let expected = reference.min { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }?
                    .id
                #expect(queue.popFirst()?.rawValue == expected, "step \(step)")
                if let expected { reference.removeAll { $0.id == expected } }
            }
            #expect(queue.count == reference.count)
            if step % 1000 == 0 { #expect(queue.orderedIDs.map(\.rawValue) == sortedReference()) }
        }
        #expect(Self.drain(&queue) == sortedReference())
    }

    @Test func manyPopsThenInsertsKeepOrder() {
        var queue = ReadyQueue()
        for id in UInt64(1)...3000 { queue.insert(JobID(id), priority: 0) }
        for expected in UInt64(1)...2000 { #expect(queue.popFirst() == JobID(expected)) }
        queue.insert(JobID(5000), priority: 1)
        queue.insert(JobID(1), priority: 0)
        #expect(queue.popFirst() == JobID(5000))
        #expect(queue.popFirst() == JobID(1))
        #expect(queue.popFirst() == JobID(2001))
        #expect(queue.count == 999)
    }
}
