import Testing

@testable import UploadDaemon

@Suite("Refused clients' log lines")
struct RefusalLogThrottleTests {
    @Test func theFirstFewAreLoggedThenOneLineAMinuteCountsTheRest() {
        var throttle = RefusalLogThrottle()
        var logged = 0
        var timers = 0
        for pid in 1...1000 {
            let (log, startTimer) = throttle.refused("65534 (pid \(pid))")
            logged += log ? 1 : 0
            timers += startTimer ? 1 : 0
        }
        #expect(logged == RefusalLogThrottle.burst)
        #expect(timers == 1, "one timer, however many are refused")
        let first = throttle.minutePassed()
        #expect(first.again)
        #expect(first.line?.contains("refused 995 more clients of other users in the last minute") == true)
        #expect(first.line?.contains("uid 65534 (pid 1000)") == true, "\(first.line ?? "")")

        // Still refusing in the next minute: counted, in the next line.
        #expect(throttle.refused("65534 (pid 1001)") == (false, false))
        #expect(throttle.minutePassed().line?.contains("refused 1 more client of") == true)
        // A quiet minute: the next refusals are logged one by one again.
        #expect(throttle.minutePassed() == (nil, false))
        #expect(throttle.refused("65534 (pid 1002)") == (true, false))
    }
}
