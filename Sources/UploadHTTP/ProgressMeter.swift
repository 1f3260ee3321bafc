import Dispatch
import Foundation
import Synchronization

/// Bytes a transfer has put on the wire (acknowledged by the peer's TCP stack, as `CurlRequest`
/// counts them), and its recent speed. Written from the HTTP thread, read by the scheduler.
///
/// The speed is an exponentially weighted rate over a few seconds, as rsync's and curl's are:
/// a plain average over a window jumped with each burst a rate limit or a socket buffer lets
/// through. Before a second has passed since the first byte, it is the average since then, and
/// not settled (no ETA from it). It is never negative: a body sent again starts the meter over.
package final class ProgressMeter: Sendable {
    private struct Samples {
        /// When the first byte of this attempt (or of the body sent again) reached the wire, and
        /// the bytes counted before it.
        var firstByteAt: UInt64?
        var startBytes: Int64 = 0
        /// When bytes last reached the wire.
        var lastByteAt: UInt64 = 0
        /// The weighted rate, and the time and count it has taken in so far.
        var rate: Double?
        var rateAt: UInt64 = 0
        var rateBytes: Int64 = 0
        /// Why the body is being sent again, for people (`restart(because:)`).
        var note: String?
    }

    private let sent = Atomic<Int64>(0)
    private let samples = Mutex(Samples())
    private let now: @Sendable () -> UInt64
    /// Nothing moved for this long: no speed (a stall).
    private static let window: UInt64 = 3_000_000_000
    /// The weighted rate's time constant: a change of speed shows about this long after.
    private static let timeConstant = 3.0
    /// The weighted rate takes in what moved at most this often.
    private static let sampleInterval: UInt64 = 250_000_000
    /// A rate-limited or slow-starting upload sends in bursts: the first second's speed says little,
    /// and an ETA made from it jumps (3 s, then 15 s, then 6 s). No ETA before this much has passed.
    package static let settleTime: UInt64 = 1_000_000_000

    /// `now` is the monotonic clock in nanoseconds; tests pass their own.
    package init(now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.now = now
    }

    /// Bytes sent on the wire during this attempt.
    package var bytesSent: Int64 { sent.load(ordering: .relaxed) }

    package func add(_ count: Int) {
        let total = sent.add(Int64(count), ordering: .relaxed).newValue
        samples.withLock { samples in
            // Read under the lock, so that no sample is ever newer than `now` (unsigned differences).
            let now = self.now()
            samples.lastByteAt = now
            if samples.firstByteAt == nil {
                // The first burst took time to reach the wire too: measure from before it, not after.
                samples.firstByteAt = now
                samples.startBytes = total - Int64(count)
            }
        }
    }

    /// Forgets bytes that will be sent again (a rewound request): the speed starts over. With a
    /// `reason`, the job's bar says why meanwhile ("sending again: ...").
    package func rewind(by count: Int64, because reason: String? = nil) {
        sent.subtract(count, ordering: .relaxed)
        samples.withLock { samples in
            let note = reason ?? samples.note
            samples = Samples()
            samples.note = note
        }
    }

    /// The body is sent again from its start, for `reason`.
    package func restart(because reason: String) {
        rewind(by: bytesSent, because: reason)
    }

    /// Why the body is being sent again, if it is.
    package var note: String? { samples.withLock { $0.note } }

    /// Bytes per second lately; zero when nothing moved lately.
    package var speed: Double { reading.speed }

    /// The speed, and whether it has been measured long enough to predict the time left.
    package var reading: (speed: Double, settled: Bool) {
        let current = bytesSent
        return samples.withLock { samples in
            let now = self.now()
            guard let start = samples.firstByteAt, now > start else { return (0, false) }
            if now - samples.lastByteAt > Self.window { return (0, false) }
            let average = Double(max(current - samples.startBytes, 0)) / (Double(now - start) / 1e9)
            guard now - start >= Self.settleTime else { return (average, false) }
            guard let rate = samples.rate else {
                (samples.rate, samples.rateAt, samples.rateBytes) = (average, now, current)
                return (average, true)
            }
            let elapsed = now - samples.rateAt
            guard elapsed >= Self.sampleInterval else { return (rate, true) }
            let seconds = Double(elapsed) / 1e9
            let recent = Double(max(current - samples.rateBytes, 0)) / seconds
            let weight = 1 - exp(-seconds / Self.timeConstant)
            let updated = weight * recent + (1 - weight) * rate
            (samples.rate, samples.rateAt, samples.rateBytes) = (updated, now, current)
            return (max(updated, 0), true)
        }
    }
}
