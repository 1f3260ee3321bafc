import Glibc

/// CLOCK_MONOTONIC, read straight (no allocation, no Foundation): the clock of libcurl's timers,
/// of systemd's MONOTONIC_USEC, and of the HTTP thread's stall checks.
package enum MonotonicClock {
    package static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    package static func seconds() -> Double { Double(nanoseconds()) / 1e9 }
}
