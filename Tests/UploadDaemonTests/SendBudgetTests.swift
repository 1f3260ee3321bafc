import Testing

@testable import UploadDaemon
@testable import UploadHTTP

/// The token buckets of the bandwidth limits (issue 49, finding 1: a lowered limit froze uploads
/// for a minute, paying back the old rate's bytes; issue 51: a global limit ran 35% over).
@Suite("SendBudget: bandwidth limits as token buckets")
struct SendBudgetTests {
    @Test func aBucketHoldsItsRateOverTime() {
        var bucket = TokenBucket(rate: 100_000, now: 0)
        var sent = 0
        var now = 0.0
        while now < 10 {
            let allowed = bucket.available(at: now)
            bucket.take(allowed, at: now)
            sent += allowed
            now += 0.013
        }
        // The bucket's size as a burst at the start (16 KiB here), then the rate.
        let burst = Int(TokenBucket.capacity(100_000))
        #expect(sent >= 998_000 && sent <= 1_000_000 + burst, "\(sent) bytes in 10 s at 100,000 B/s")
    }

    @Test func aLowerRateStartsAtOnceWithNoDebtOfTheOldOne() {
        var bucket = TokenBucket(rate: 10 << 20, now: 0)
        bucket.take(50 << 20, at: 0)  // a body sent whole, far over: the bucket owes 50 MiB
        bucket.setRate(200 << 10, at: 4)
        // Owed at the old rate, 50 MiB would take 256 s at the new one: it starts from empty instead.
        #expect(bucket.secondsUntil(16 << 10, at: 4) <= 0.1, "bytes go within a tenth of a second at the new rate")
        #expect(bucket.available(at: 5) <= Int(TokenBucket.capacity(200 << 10)))
    }

    @Test func aTinyRateStillLetsItsWholeBucketGo() {
        var bucket = TokenBucket(rate: 1024, now: 0)
        #expect(TokenBucket.capacity(1024) == 1024)
        bucket.take(bucket.available(at: 0), at: 0)
        #expect(bucket.secondsUntil(1024, at: 0) > 0.99)
        #expect(bucket.available(at: 1) == 1024)
    }

    @Test func aPacerTakesTheLowerOfTheGlobalShareAndItsOwnLimit() {
        let budget = SendBudget()
        budget.setLimit(1 << 20, at: 0)
        budget.senders = 4
        let pacer = SendPacer(budget: budget, own: TransferRate(bytesPerSecond: 64 << 10, now: 0))
        #expect(pacer.rate == 64 << 10)
        #expect(pacer.allowance(1 << 20, at: 0) <= 16 << 10, "its own bucket's size")
        budget.setLimit(nil, at: 1)
        #expect(pacer.rate == 64 << 10)
        let unlimited = SendPacer(budget: budget, own: nil)
        #expect(!unlimited.isLimited)
        #expect(unlimited.allowance(5 << 20, at: 1) == 5 << 20)
    }

    @Test func aHeldPacerSaysSoForTheStallClock() {
        let budget = SendBudget()
        budget.setLimit(10_000, at: 0)
        let pacer = SendPacer(budget: budget, own: nil)
        let first = pacer.allowance(1 << 20, at: 0)
        pacer.spend(first, at: 0)
        #expect(pacer.allowance(1 << 20, at: 0) == 0)
        #expect(pacer.wasHeld(within: 2, at: 1))
        #expect(!pacer.wasHeld(within: 2, at: 3))
    }

    /// A chunked upload's requests share the transfer's bucket: the second chunk's request does
    /// not start with a full one. (With a bucket per request, each 1 MiB tus chunk under a 12M
    /// `rate_limit` went whole at once, and the limit did not hold at all.)
    @Test func theRequestsOfOneTransferShareItsOwnLimit() {
        let budget = SendBudget()
        let rate = TransferRate(bytesPerSecond: 1 << 20, now: 0)
        let first = SendPacer(budget: budget, own: rate)
        var sent = 0
        while case let allowed = first.allowance(1 << 20, at: 0), allowed > 0 {
            first.spend(allowed, at: 0)
            sent += allowed
        }
        #expect(sent <= (1 << 20) / 10 + 1, "a tenth of a second's worth at most: \(sent)")
        let second = SendPacer(budget: budget, own: rate)
        #expect(second.allowance(1 << 20, at: 0) == 0, "the next request of the transfer waits its turn")
        #expect(second.allowance(1 << 20, at: 0.5) > 0)
    }
}
