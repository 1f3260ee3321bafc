import Dispatch
import Foundation

/// Work split across the machine's cores, for the few passes over every job that make a big
/// queue slow to start (replay, the scheduler's first look at the jobs).
public enum Parallel {
    /// Read once: Foundation reads the cgroup's files to answer.
    public static let cores = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))

    /// Runs `body` for each of `parts` at the same time, on as many cores, and returns what each
    /// returned, in order. The caller's thread takes part, and it returns when all have ended.
    public static func map<T: Sendable>(parts: Int, _ body: @Sendable (Int) -> T) -> [T] {
        [T](unsafeUninitializedCapacity: parts) { buffer, initialized in
            let results = SendablePointer(buffer.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                (results.pointer + part).initialize(to: body(part))
            }
            initialized = parts
        }
    }

    /// The bounds of `parts` nearly equal runs of `collection`'s indices.
    public static func split<C: Collection>(_ collection: C, into parts: Int) -> [Range<C.Index>] {
        let parts = max(parts, 1)
        var bounds = [collection.startIndex]
        for _ in 1..<parts { bounds.append(collection.index(bounds.last!, offsetBy: collection.count / parts)) }
        bounds.append(collection.endIndex)
        return zip(bounds, bounds.dropFirst()).map { $0..<$1 }
    }
}

/// A pointer handed to the workers of `Parallel.map`: each worker writes only its own element, and the pointee outlives them (`concurrentPerform` returns only when
/// every worker has).
struct SendablePointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>
    init(_ pointer: UnsafeMutablePointer<Pointee>) { self.pointer = pointer }
}
