import CSystemd
import Dispatch
import Glibc
import UploadPlatform

/// Shows desktop notifications through `org.freedesktop.Notifications` on the user's session bus
/// (sd-bus). Each one opens the bus, calls Notify and closes it, on a queue of its own: they are
/// rare (one per batch), and a session bus that comes and goes (a login, a logout) needs no
/// watching. Without a session bus or a notification service, nothing is shown and nothing fails.
final class DesktopNotifier: Sendable {
    enum Urgency: UInt8 {
        case low = 0, normal = 1, critical = 2
    }

    private let queue = DispatchQueue(label: "uploadd-notifications")
    /// The session bus address uploadd was given (`DBUS_SESSION_BUS_ADDRESS`); nil: sd-bus's
    /// default, `$XDG_RUNTIME_DIR/bus`.
    private let address: String?

    init(environment: [String: String]) {
        address = environment["DBUS_SESSION_BUS_ADDRESS"]
    }

    /// Shows one notification; `done` (for tests) hears whether the service took it.
    func show(
        summary: String, body: String, urgency: Urgency, done: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        queue.async { [address] in
            var bus: OpaquePointer?
            var opened: Int32
            if let address {
                opened = sd_bus_new(&bus)
                if opened >= 0 { opened = sd_bus_set_address(bus, address) }
                if opened >= 0 { opened = sd_bus_set_bus_client(bus, 1) }
                if opened >= 0 { opened = sd_bus_start(bus) }
            } else {
                opened = sd_bus_open_user(&bus)
            }
            defer { if bus != nil { sd_bus_flush_close_unref(bus) } }
            guard opened >= 0, let bus else {
                Log.debug("no session bus (\(String(cString: strerror(-opened)))): notification not shown: \(summary)")
                done(false)
                return
            }
            let sent = CSystemd_notify_desktop(
                bus, "uploadd", urgency == .critical ? "dialog-error" : "document-send", Self.markupEscaped(summary),
                Self.markupEscaped(body), urgency.rawValue, 5_000_000)
            if sent < 0 {
                Log.debug("no notification service (\(String(cString: strerror(-sent)))): not shown: \(summary)")
            }
            done(sent >= 0)
        }
    }

    /// `text` as plain text in the markup that notification servers read in the body (and some
    /// in the summary, against the spec): a file name or a server's error holding `<a href=...>`
    /// or `<img src="file://...">` is shown, never followed or loaded.
    static func markupEscaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "&" || $0 == "<" || $0 == ">" }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.append(character)
            }
        }
        return result
    }
}
