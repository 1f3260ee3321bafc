import Synchronization
import UploadPlatform

/// A rate in bytes per second as a token bucket: bytes are taken before they are read from the
/// file, and the bucket refills at the rate, holding at most a tenth of a second's worth.
///
/// Why not libcurl's `CURLOPT_MAX_SEND_SPEED_LARGE`: it limits each handle on its own, by the
/// average since the transfer's limit started. A global limit shared among handles that start and
/// stop then ran 35% over (8 MiB/s with four transfers went at 10.5-11.1), and a limit lowered
/// during an upload (10M to 200K) left the handle owing the old rate's bytes: it sent nothing
/// for a minute, which the stall detector took for a dead connection. Tokens are never owed from
/// an old rate: a new rate starts from what the bucket holds, capped to the new size.
package struct TokenBucket {
    private(set) var rate: Int64
    private var tokens: Double
    private var refilledAt: Double

    package init(rate: Int64, now: Double) {
        self.rate = max(rate, 1)
        tokens = Self.capacity(self.rate)
        refilledAt = now
    }

    /// A tenth of a second's worth, at least 16 KiB (a few libcurl reads) unless that is over a
    /// second's worth: a limit holds within a few percent over any few seconds.
    package static func capacity(_ rate: Int64) -> Double {
        Double(max(rate / 10, min(rate, 16 << 10)))
    }

    /// Bytes that may be sent now (whole, never negative).
    package mutating func available(at now: Double) -> Int {
        refill(at: now)
        return tokens >= 1 ? Int(tokens) : 0
    }

    /// `count` bytes were sent (or are owed: a body sent whole may take the bucket below zero).
    package mutating func take(_ count: Int, at now: Double) {
        refill(at: now)
        tokens -= Double(count)
    }

    /// Seconds until `count` bytes may be sent.
    package mutating func secondsUntil(_ count: Int, at now: Double) -> Double {
        refill(at: now)
        let missing = Double(count) - tokens
        return missing <= 0 ? 0 : missing / Double(rate)
    }

    /// A new rate from now on: what the bucket holds stays, up to the new size, and no debt of
    /// the old rate is carried over.
    package mutating func setRate(_ newRate: Int64, at now: Double) {
        refill(at: now)
        rate = max(newRate, 1)
        tokens = min(max(tokens, 0), Self.capacity(rate))
    }

    private mutating func refill(at now: Double) {
        if now > refilledAt {
            tokens = min(tokens + (now - refilledAt) * Double(rate), Self.capacity(rate))
            refilledAt = now
        }
    }
}

/// The global bandwidth limit (`uploadctl limit`): one bucket all requests that send a body take
/// from. Used by the HTTP thread only.
package final class SendBudget {
    fileprivate(set) var bucket: TokenBucket?
    /// Requests sending a body now: a read takes at most an equal share of a full bucket, so that
    /// the first request woken cannot take all of it each time.
    package var senders = 1

    package func setLimit(_ rate: Int64?, at now: Double) {
        guard let rate else {
            bucket = nil
            return
        }
        if bucket == nil {
            bucket = TokenBucket(rate: rate, now: now)
        } else {
            bucket?.setRate(rate, at: now)
        }
    }

    /// The most one read may take now.
    package var shareOfAFullBucket: Int {
        guard let bucket else { return .max }
        return max(Int(TokenBucket.capacity(bucket.rate)) / max(senders, 1), 4 << 10)
    }
}

@available(*, unavailable)
extension SendBudget: Sendable {}

/// One transfer's own limit (`rate_limit`): a bucket that every request of the transfer takes
/// from, made once per attempt. A bucket per request started each request full: a tus upload in
/// 1 MiB chunks under `rate_limit = 12M` sent every chunk whole at once, a tenth of a second's
/// bucket being larger than the chunk, and went at the server's speed.
package final class TransferRate: Sendable, Equatable {
    package let bytesPerSecond: Int64
    private let bucket: Mutex<TokenBucket>

    package init(bytesPerSecond: Int64, now: Double = MonotonicClock.seconds()) {
        self.bytesPerSecond = bytesPerSecond
        bucket = Mutex(TokenBucket(rate: bytesPerSecond, now: now))
    }

    package func available(at now: Double) -> Int { bucket.withLock { $0.available(at: now) } }
    package func take(_ count: Int, at now: Double) { bucket.withLock { $0.take(count, at: now) } }
    package func secondsUntil(_ count: Int, at now: Double) -> Double {
        bucket.withLock { $0.secondsUntil(count, at: now) }
    }

    /// Two targets with the same limit are the same target, whoever's bucket it is.
    package static func == (lhs: TransferRate, rhs: TransferRate) -> Bool { lhs.bytesPerSecond == rhs.bytesPerSecond }
}

/// What one request may send now: the global budget and its own limit (`rate_limit`) together.
/// Its body readers ask before each read; a read that gets nothing pauses the request, and the
/// HTTP thread resumes it once bytes may go (`CurlRequest.resumeReadingIfReady`). Used by the
/// HTTP thread only.
package final class SendPacer {
    private let budget: SendBudget
    private let own: TransferRate?
    /// When a read last found no bytes allowed (monotonic seconds): the request is then held by
    /// uploadd, not by the server, and the stall and minimum-speed checks must not count it.
    private(set) var heldAt: Double?

    package init(budget: SendBudget, own: TransferRate?) {
        self.budget = budget
        self.own = own
    }

    /// Whether anything limits this request at all.
    package var isLimited: Bool { own != nil || budget.bucket != nil }

    /// The lowest rate that applies to it (nil: none).
    package var rate: Int64? {
        let shared = budget.bucket.map { $0.rate / Int64(max(budget.senders, 1)) }
        guard let own = own?.bytesPerSecond else { return shared }
        return min(shared ?? own, own)
    }

    /// Bytes the next read may take, at most `wanted`; 0 holds the request.
    package func allowance(_ wanted: Int, at now: Double) -> Int {
        var allowed = wanted
        if budget.bucket != nil {
            allowed = min(allowed, budget.bucket!.available(at: now), budget.shareOfAFullBucket)
        }
        if let own { allowed = min(allowed, own.available(at: now)) }
        if allowed <= 0 { heldAt = now }
        return max(allowed, 0)
    }

    /// `count` bytes were read for sending (or sent whole with the request's head).
    package func spend(_ count: Int, at now: Double) {
        guard count > 0 else { return }
        budget.bucket?.take(count, at: now)
        own?.take(count, at: now)
    }

    /// Seconds until a read worth waking for may go (for the HTTP thread's wait), 0 when it may
    /// now: 16 KiB, or a bucket's whole size when that is smaller, so that a held request is not
    /// woken for every few bytes.
    package func secondsUntilAllowed(at now: Double) -> Double {
        var seconds = 0.0
        if let rate = budget.bucket?.rate {
            let step = min(16 << 10, Int(TokenBucket.capacity(rate)))
            seconds = max(seconds, budget.bucket!.secondsUntil(step, at: now))
        }
        if let own {
            let step = min(16 << 10, Int(TokenBucket.capacity(own.bytesPerSecond)))
            seconds = max(seconds, own.secondsUntil(step, at: now))
        }
        return seconds
    }

    /// Whether uploadd held this request at some point in the last `seconds`.
    package func wasHeld(within seconds: Double, at now: Double) -> Bool {
        guard let heldAt else { return false }
        return now - heldAt <= seconds
    }
}

@available(*, unavailable)
extension SendPacer: Sendable {}
