import UploadCore

/// What the config says of sharing transfer slots (`Scheduler+Fairness`).
extension DaemonConfig {
    /// The most transfers to one server while jobs for other servers wait: the config's
    /// `transfers_per_server`, else one fewer than `transfers`, at least 1.
    var serverShare: Int {
        transfersPerServer ?? max(maxTransfers - 1, 1)
    }

    /// A transfer is judged over this long: one that moved less than `crawlSpeed` in it crawls.
    /// 30 s, or `min_speed_time` when that is shorter.
    var paceWindow: Duration { .seconds(min(30, minSpeedTime)) }

    /// Four times `min_speed` (8 KiB/s by default), or 8 KiB/s when that rule is off.
    var crawlSpeed: Double {
        Double(minSpeed > 0 ? 4 * minSpeed : 8 << 10)
    }
}
