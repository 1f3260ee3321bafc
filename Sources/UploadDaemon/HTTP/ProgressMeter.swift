import Dispatch
import Synchronization

/// Bytes a transfer has put on the wire, and its recent speed. Written from the HTTP thread, read
/// by the scheduler.
final class ProgressMeter: Sendable {
    private struct Samples {
        var points: [(time: UInt64, bytes: Int64)] = []
        /// When the first byte of this attempt reached the wire.
        var firstByteAt: UInt64?
    }

    private let sent = Atomic<Int64>(0)
    private let samples = Mutex(Samples())
    private let now: @Sendable () -> UInt64
    /// Speed is measured over about this window.
    private static let window: UInt64 = 3_000_000_000
    private static let sampleInterval: UInt64 = 250_000_000
    /// A rate-limited or slow-starting upload sends in bursts: the first second's speed says little,
    /// and an ETA made from it jumps (3 s, then 15 s, then 6 s). No ETA before this much has passed.
    static let settleTime: UInt64 = 1_000_000_000

    /// `now` is the monotonic clock in nanoseconds; tests pass their own.
    init(now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.now = now
    }

    /// Bytes sent on the wire during this attempt.
    var bytesSent: Int64 { sent.load(ordering: .relaxed) }

    func add(_ count: Int) {
        let total = sent.add(Int64(count), ordering: .relaxed).newValue
        samples.withLock { samples in
            // Read under the lock, so that no sample is ever newer than `now` (unsigned differences).
            let now = self.now()
            if samples.firstByteAt == nil {
                // The first burst took time to reach the wire too: measure from before it, not after.
                samples.firstByteAt = now
                samples.points.append((now, total - Int64(count)))
                return
            }
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
    var speed: Double { reading.speed }

    /// The speed, and whether it has been measured long enough to predict the time left.
    var reading: (speed: Double, settled: Bool) {
        samples.withLock { samples in
            let now = self.now()
            let current = bytesSent
            guard let first = samples.points.first, let start = samples.firstByteAt, now - first.time > 0 else {
                return (0, false)
            }
            if let last = samples.points.last, now - last.time > Self.window { return (0, false) }
            let speed = Double(current - first.bytes) / (Double(now - first.time) / 1e9)
            return (speed, now - start >= Self.settleTime)
        }
    }
}
