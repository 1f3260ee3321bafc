import Foundation
import Testing

@testable import UploadCore

@Suite("RetryPolicy: exponential backoff with full jitter")
struct RetryPolicyTests {
    let policy = RetryPolicy(
        baseDelay: .seconds(1), maxDelay: .seconds(60), maxRetryAfter: .seconds(600), maxAttempts: 8)

    /// The random source is asked for a range; returning its upper bound shows the bound.
    func bound(after failures: Int, policy: RetryPolicy? = nil) -> (range: ClosedRange<Double>, delay: Double) {
        var asked: ClosedRange<Double>?
        let delay = (policy ?? self.policy).delay(afterFailures: failures, retryAfter: nil) { range in
            asked = range
            return range.upperBound
        }
        return (asked ?? 0...0, delay.seconds)
    }

    @Test(arguments: [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 32.0), (7, 60.0), (8, 60.0)])
    func boundDoublesUntilTheCap(failures: Int, expected: Double) {
        let (range, delay) = bound(after: failures)
        #expect(range.lowerBound == 0)
        #expect(range.upperBound == expected)
        #expect(delay == expected)
    }

    @Test(arguments: [31, 64, 1000, Int.max])
    func capHoldsForLargeFailureCounts(failures: Int) {
        let (range, delay) = bound(after: failures)
        #expect(range == 0...60)
        #expect(delay == 60)
    }

    @Test func zeroOrNegativeFailuresUseTheBaseDelay() {
        #expect(bound(after: 0).range == 0...1)
        #expect(bound(after: -3).range == 0...1)
    }

    @Test func jitterPicksWithinTheRange() {
        let low = policy.delay(afterFailures: 5, retryAfter: nil) { $0.lowerBound }
        let middle = policy.delay(afterFailures: 5, retryAfter: nil) { ($0.lowerBound + $0.upperBound) / 2 }
        #expect(low == .zero)
        #expect(middle == .seconds(8))
    }

    @Test func realRandomDelaysStayWithinBounds() {
        for failures in 1...12 {
            let limit = min(60, pow(2, Double(failures - 1)))
            for _ in 0..<50 {
                let seconds = policy.delay(afterFailures: failures).seconds
                #expect(seconds >= 0 && seconds <= limit, "failures \(failures): \(seconds)")
            }
        }
    }

    @Test func subSecondBaseDelay() {
        let fast = RetryPolicy(baseDelay: .milliseconds(10), maxDelay: .seconds(1))
        #expect(bound(after: 1, policy: fast).delay == 0.01)
        #expect(abs(bound(after: 3, policy: fast).delay - 0.04) < 1e-9)
        #expect(bound(after: 20, policy: fast).delay == 1)
    }

    @Test func retryAfterReplacesTheJitteredDelay() {
        let delay = policy.delay(afterFailures: 1, retryAfter: .seconds(120)) { _ in
            Issue.record("Retry-After must not be jittered")
            return 0
        }
        #expect(delay == .seconds(120))
    }

    @Test func retryAfterIsCappedAtMaxRetryAfter() {
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(86_400)) == .seconds(600))
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(-5)) == .zero)
    }

    @Test func allowsRetryUntilTheBudgetIsSpent() {
        let small = RetryPolicy(maxAttempts: 3)
        #expect(small.allowsRetry(afterFailures: 0))
        #expect(small.allowsRetry(afterFailures: 1))
        #expect(small.allowsRetry(afterFailures: 2))
        #expect(!small.allowsRetry(afterFailures: 3))
        #expect(!small.allowsRetry(afterFailures: 4))
    }

    @Test func theTimeBudgetKeepsRetryingAfterTheCountIsSpent() {
        let policy = RetryPolicy(maxAttempts: 3, maxDuration: .seconds(600))
        let start = Date(timeIntervalSince1970: 1_000_000)
        #expect(policy.allowsRetry(afterFailures: 50, failingSince: start, now: start.addingTimeInterval(599)))
        #expect(!policy.allowsRetry(afterFailures: 50, failingSince: start, now: start.addingTimeInterval(600)))
        #expect(policy.allowsRetry(afterFailures: 2, failingSince: start, now: start.addingTimeInterval(10_000)))
    }

    @Test func durationSecondsIncludesFractions() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.seconds(3).seconds == 3)
    }
}
