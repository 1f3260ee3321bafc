import Dispatch

/// Runs blocking work on a thread outside the cooperative pool.
package enum Blocking {
    private static let queue = DispatchQueue(label: "uploadd.blocking", attributes: .concurrent)

    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
