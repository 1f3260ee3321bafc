import Testing

@testable import UploadDaemon

@Suite struct SmallestValuesTests {
    @Test func keepsTheSmallestOfAnyOrderSmallestFirst() {
        var random = SystemRandomNumberGenerator()
        for capacity in [1, 2, 3, 7, 100, 1000] {
            for count in [0, 1, capacity - 1, capacity, capacity + 1, 5 * capacity + 3] where count >= 0 {
                let values = (0..<count).map { _ in Int.random(in: 0..<(3 * count + 1), using: &random) }
                var smallest = SmallestValues<Int>(capacity: capacity)
                for value in values {
                    if capacity <= 100 {
                        let kept = smallest.sorted()
                        #expect(smallest.wouldKeep(value) == (kept.count < capacity || value < kept.last!))
                    }
                    smallest.offer(value)
                }
                #expect(smallest.sorted() == Array(values.sorted().prefix(capacity)), "\\(capacity) of \\(values)")
            }
        }
    }

    @Test func ascendingAndDescendingRuns() {
        var rising = SmallestValues<Int>(capacity: 4)
        var falling = SmallestValues<Int>(capacity: 4)
        for value in 1...1000 {
            rising.offer(value)
            falling.offer(1001 - value)
        }
        #expect(rising.sorted() == [1, 2, 3, 4])
        #expect(falling.sorted() == [1, 2, 3, 4])
    }
}

@Suite struct MinHeapTests {
    @Test func givesBackEveryElementSmallestFirstWhetherBuiltAtOnceOrOneByOne() {
        var random = SystemRandomNumberGenerator()
        for count in [0, 1, 2, 3, 10, 257] {
            let values = (0..<count).map { _ in Int.random(in: 0..<50, using: &random) }
            var built = MinHeap(values)
            var inserted = MinHeap<Int>()
            for value in values { inserted.insert(value) }
            var fromBuilt: [Int] = []
            var fromInserted: [Int] = []
            while let value = built.popMin() { fromBuilt.append(value) }
            while let value = inserted.popMin() { fromInserted.append(value) }
            #expect(fromBuilt == values.sorted())
            #expect(fromInserted == values.sorted())
        }
    }
}
