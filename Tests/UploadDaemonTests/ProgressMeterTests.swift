import Synchronization
import Testing

@testable import UploadDaemon
@testable import UploadHTTP

/// The meter's speed and when it is trusted for an ETA, on a scripted clock.
struct ProgressMeterTests {
    final class ScriptedClock: Sendable {
        private let nanoseconds = Atomic<UInt64>(1_000_000_000)
        func advance(seconds: Double) { nanoseconds.add(UInt64(seconds * 1e9), ordering: .relaxed) }
        var now: UInt64 { nanoseconds.load(ordering: .relaxed) }
    }

    /// What CI saw from curl with `rate_limit = 1M`: a quarter-megabyte burst at once, then a pause
    /// while curl's average catches up, then steady quarter-second buffers.
    func rateLimitedBursts(_ meter: ProgressMeter, _ clock: ScriptedClock, until seconds: Double) -> [Double?] {
        let total = 5 << 20
        var sent = 0
        var etas: [Double?] = []
        meter.add(1 << 20)  // the first megabyte as fast as the connection takes it
        sent += 1 << 20
        var time = 0.0
        while time < seconds {
            clock.advance(seconds: 0.05)
            time += 0.05
            // After the burst, curl sends 256 KiB each quarter second once the average allows it.
            if time >= 1.0, Int((time * 100).rounded()) % 25 == 0, sent < total {
                meter.add(1 << 18)
                sent += 1 << 18
            }
            if Int((time * 100).rounded()) % 20 == 0 {
                let reading = meter.reading
                let left = Double(total - Int(meter.bytesSent))
                etas.append(reading.settled && reading.speed > 0 ? (left / reading.speed).rounded() : nil)
            }
        }
        return etas
    }

    @Test func noETABeforeTheSpeedHasSettledAndNoJumpsAfter() {
        let clock = ScriptedClock()
        let meter = ProgressMeter(now: { clock.now })
        let etas = rateLimitedBursts(meter, clock, until: 5)
        #expect(etas.prefix(4).allSatisfy { $0 == nil }, "no ETA in the first second: \(etas)")
        let known = etas.compactMap { $0 }
        #expect(known.count >= 15)
        let rises = zip(known, known.dropFirst()).filter { $1 > $0 + 1 }
        #expect(rises.isEmpty, "the ETA never goes up by more than a second: \(known)")
    }

    @Test func speedCountsTheFirstBurstOverTheTimeItTook() {
        let clock = ScriptedClock()
        let meter = ProgressMeter(now: { clock.now })
        meter.add(1000)
        clock.advance(seconds: 0.5)
        meter.add(1000)
        clock.advance(seconds: 0.5)
        let reading = meter.reading
        #expect(reading.settled)
        #expect(abs(reading.speed - 2000) < 1, "both additions count, over the second since the first: \(reading)")
    }

    @Test func aStalledTransferHasNoSpeedAndNoETA() {
        let clock = ScriptedClock()
        let meter = ProgressMeter(now: { clock.now })
        meter.add(1000)
        clock.advance(seconds: 1)
        meter.add(1000)
        clock.advance(seconds: 4)
        let reading = meter.reading
        #expect(reading.speed == 0)
        #expect(!reading.settled)
    }
}
