import Foundation
import UploadWire

/// Exponential backoff with full jitter, capped, with two budgets that must both be spent before
/// a job fails: failed attempts in a row, and time since the first of them. A background service
/// must not fail a job over an outage of an hour or two, however many attempts that takes.
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
    /// Failed attempts in a row without progress before the job may fail for good.
    public var maxAttempts: Int
    /// How long failures in a row may go on before the job may fail for good (`retry_for`).
    public var maxDuration: Duration

    public init(
        baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), maxRetryAfter: Duration = .seconds(600),
        maxAttempts: Int = 8, maxDuration: Duration = .seconds(86_400)
    ) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.maxAttempts = maxAttempts
        self.maxDuration = maxDuration
    }

    /// Whether another attempt is allowed after `failures` failed attempts in a row, the first of
    /// them at `failingSince`: until both budgets are spent.
    public func allowsRetry(afterFailures failures: Int, failingSince: Date? = nil, now: Date = Date()) -> Bool {
        if failures < maxAttempts { return true }
        guard let failingSince else { return false }
        return now.timeIntervalSince(failingSince) < maxDuration.seconds
    }

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
