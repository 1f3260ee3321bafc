import Dispatch
import Synchronization

/// Bytes a transfer has put on the wire, and its recent speed. Written from the HTTP thread, read
/// by the scheduler.
final class ProgressMeter: Sendable {
    private struct Samples {
        var points: [(time: UInt64, bytes: Int64)] = []
    }

    private let sent = Atomic<Int64>(0)
    private let samples = Mutex(Samples())
    /// Speed is measured over about this window.
    private static let window: UInt64 = 3_000_000_000
    private static let sampleInterval: UInt64 = 250_000_000

    /// Bytes sent on the wire during this attempt.
    var bytesSent: Int64 { sent.load(ordering: .relaxed) }

    func add(_ count: Int) {
        let total = sent.add(Int64(count), ordering: .relaxed).newValue
        samples.withLock { samples in
            // Read under the lock, so that no sample is ever newer than `now` (unsigned differences).
            let now = DispatchTime.now().uptimeNanoseconds
            if let last = samples.points.last, now - last.time < Self.sampleInterval { return }
            samples.points.append((now, total))
            while let first = samples.points.first, now - first.time > Self.window, samples.points.count > 2 {
                samples.points.removeFirst()
            }
        }
    }

    /// Forgets bytes that will be sent again (a rewound request).
    func rewind(by count: Int64) {
        sent.subtract(count, ordering: .relaxed)
    }

    /// Bytes per second over the last few seconds; zero when nothing moved lately.
    var speed: Double {
        samples.withLock { samples in
            let now = DispatchTime.now().uptimeNanoseconds
            let current = bytesSent
            guard let first = samples.points.first, now - first.time > 0 else { return 0 }
            if let last = samples.points.last, now - last.time > Self.window { return 0 }
            return Double(current - first.bytes) / (Double(now - first.time) / 1e9)
        }
    }
}
