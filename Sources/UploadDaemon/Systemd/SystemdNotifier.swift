import CSystemd
import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// Tells systemd how the service is doing (sd_notify). Does nothing outside a Type=notify unit,
/// where NOTIFY_SOCKET is unset.
struct SystemdNotifier: Sendable {
    func notify(_ fields: String) {
        _ = sd_notify(0, fields)
    }

    func ready(status: String) { notify("READY=1\nSTATUS=\(status)") }
    func status(_ text: String) { notify("STATUS=\(text)") }
    func stopping() { notify("STOPPING=1\nSTATUS=stopping") }

    func reloading() {
        let microseconds = MonotonicClock.nanoseconds() / 1000
        notify("RELOADING=1\nMONOTONIC_USEC=\(microseconds)\nSTATUS=reloading the config")
    }

    /// Asks for more start-up time while a long replay runs.
    func extendTimeout(seconds: Int) { notify("EXTEND_TIMEOUT_USEC=\(seconds * 1_000_000)") }

    /// Start-up failed: the errno for systemctl status, and a line saying why.
    func failed(errno: Int32, status: String) { notify("ERRNO=\(errno)\nSTATUS=\(status)") }

    func watchdogPing() { notify("WATCHDOG=1") }

    /// The watchdog interval systemd expects pings within, when WatchdogSec= is set for us.
    var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(microseconds))
    }
}
