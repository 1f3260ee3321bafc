/// A binary min-heap: the smallest element on top, found at once, inserted and taken out in
/// log(count) steps. (swift-collections' `Heap` would do; the package takes no outside dependency.)
struct MinHeap<Element: Comparable> {
    private(set) var elements: [Element] = []

    init() {}

    /// Floyd's bottom-up construction: linear in the number of elements.
    init(_ elements: [Element]) {
        self.elements = elements
        for index in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    var count: Int { elements.count }
    var isEmpty: Bool { elements.isEmpty }
    var min: Element? { elements.first }

    mutating func insert(_ element: Element) {
        elements.append(element)
        siftUp(from: elements.count - 1)
    }

    @discardableResult
    mutating func popMin() -> Element? {
        guard let last = elements.popLast() else { return nil }
        guard let top = elements.first else { return last }
        elements[0] = last
        siftDown(from: 0)
        return top
    }

    /// Takes out the smallest element and puts `element` in, in one pass down (the heap must not
    /// be empty).
    mutating func replaceMin(with element: Element) {
        elements[0] = element
        siftDown(from: 0)
    }

    private mutating func siftUp(from index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child] < elements[parent] else { return }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < elements.count && elements[left] < elements[smallest] { smallest = left }
            if right < elements.count && elements[right] < elements[smallest] { smallest = right }
            guard smallest != parent else { return }
            elements.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

extension MinHeap: Sendable where Element: Sendable {}
