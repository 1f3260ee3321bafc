import Foundation

/// Exponential backoff with full jitter, capped, with a budget of failed attempts in a row.
///
/// Full jitter (a uniformly random delay between zero and the exponential bound) spreads retries of
/// many jobs against one recovering server, as AWS's architecture note on backoff recommends.
public struct RetryPolicy: Sendable, Equatable {
    /// The bound of the first retry's delay; each failure doubles it.
    public var baseDelay: Duration
    /// No computed delay is longer than this.
    public var maxDelay: Duration
    /// A server's `Retry-After` is honoured up to this long.
    public var maxRetryAfter: Duration
    /// Failed attempts in a row without progress before the job fails for good.
    public var maxAttempts: Int

    public init(
        baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), maxRetryAfter: Duration = .seconds(600),
        maxAttempts: Int = 8
    ) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.maxAttempts = maxAttempts
    }

    /// Whether another attempt is allowed after `failures` failed attempts in a row.
    public func allowsRetry(afterFailures failures: Int) -> Bool { failures < maxAttempts }

    /// The delay before the next attempt after `failures` failures in a row (1 for the first).
    /// `retryAfter`, when the server sent one, replaces the jittered delay (up to `maxRetryAfter`).
    public func delay(
        afterFailures failures: Int, retryAfter: Duration? = nil,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Duration {
        if let retryAfter {
            return min(max(retryAfter, .zero), maxRetryAfter)
        }
        let exponent = min(max(failures - 1, 0), 30)
        let bound = min(baseDelay.seconds * pow(2, Double(exponent)), maxDelay.seconds)
        return .seconds(random(0...bound))
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
