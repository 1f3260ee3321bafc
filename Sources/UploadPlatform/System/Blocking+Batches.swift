/// Blocking work for many items, in few hops between threads.
extension Blocking {
    /// Blocking `work` for every item, in 16 runs of the blocking queue at once, each taking its
    /// share of the items in turn; the results in the items' order. A slow file (a hung NFS
    /// mount) holds up its share only, and an add of 500 local files hops threads 16 times, not
    /// 500 (each hop cost more than the `stat` it carried).
    package static func inChunks<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ work: @escaping @Sendable (Item) throws -> Value
    ) async -> [Result<Value, any Error>] {
        let width = min(16, items.count)
        guard width > 0 else { return [] }
        let chunks = (0..<width).map { part in
            Array(items[(items.count * part / width)..<(items.count * (part + 1) / width)])
        }
        let done = await concurrently(chunks) { chunk in
            try await run { chunk.map { item in Result { try work(item) } } }
        }
        return zip(chunks, done).flatMap { chunk, outcome in
            // Blocking.run only fails when `work` does, and each item's failure is caught above.
            (try? outcome.get()) ?? chunk.map { _ in .failure(CancellationError()) }
        }
    }

    /// `work` for every item, at most 16 at once, the results in the items' order.
    package static func concurrently<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ work: @escaping @Sendable (Item) async throws -> Value
    ) async -> [Result<Value, any Error>] {
        await withTaskGroup(of: (Int, Result<Value, any Error>).self) { group in
            var results = [Result<Value, any Error>?](repeating: nil, count: items.count)
            var next = 0
            func startNext() {
                guard next < items.count else { return }
                let index = next
                let item = items[index]
                next += 1
                group.addTask {
                    do { return (index, .success(try await work(item))) } catch { return (index, .failure(error)) }
                }
            }
            for _ in 0..<min(16, items.count) { startNext() }
            while let (index, result) = await group.next() {
                results[index] = result
                startNext()
            }
            return results.map { $0! }
        }
    }
}
