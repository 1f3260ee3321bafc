import CSystemd
import Foundation
import Glibc
import UploadPlatform
import UploadWire

/// What the machine's services say about the connection and the power: NetworkManager's `Metered`
/// and UPower's `OnBattery`, read over the system bus with sd-bus and followed through their
/// PropertiesChanged signals. Nil: not known (no system bus, or the service does not answer on
/// it), which counts as unmetered and on mains, with no error.
struct PowerAndNetwork: Sendable, Equatable {
    var metered: Bool?
    var onBattery: Bool?

    var isMetered: Bool { metered == true }
    var isOnBattery: Bool { onBattery == true }
}

/// Watches `PowerAndNetwork` on the system bus on a thread of its own.
///
/// Threading: the sd-bus connection belongs to that thread alone (sd-bus objects are not
/// thread-safe); `stop` wakes it through a pipe and waits for it to end.
final class SystemConditionsWatcher: Sendable {
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    /// The state when the watcher started, read before anything could start an upload.
    let initial: PowerAndNetwork

    /// Nil without a system bus (a container): everything then counts as unmetered, on mains.
    /// `onChange` gets every change after `initial`.
    init?(onChange: @escaping @Sendable (PowerAndNetwork) -> Void) {
        var bus: OpaquePointer?
        let opened = sd_bus_open_system(&bus)
        guard opened >= 0, let bus else {
            Log.info(
                "no system bus (\(String(cString: strerror(-opened)))): metered connections and battery power are not watched"
            )
            return nil
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            sd_bus_flush_close_unref(bus)
            return nil
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        let connection = BusConnection(bus)
        let initial = connection.read()
        self.initial = initial
        NamedThread.start("uploadd-sysbus") { [wakeRead, finished] in
            connection.run(wake: wakeRead, initial: initial, onChange: onChange)
            finished.signal()
        }
    }

    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        finished.wait()
        close(wakeRead)
        close(wakeWrite)
    }
}

/// The sd-bus connection and the signal matches, owned by the watcher's thread.
private final class BusConnection: @unchecked Sendable {
    // Invariant: created on the caller's thread, then used only by the watcher's thread.
    private let bus: OpaquePointer
    private var slots: [OpaquePointer?] = []
    private var changed = true

    init(_ bus: OpaquePointer) { self.bus = bus }

    deinit {
        for slot in slots { sd_bus_slot_unref(slot) }
        sd_bus_flush_close_unref(bus)
    }

    private static let watched: [(service: String, path: String, interface: String)] = [
        ("org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager"),
        ("org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.UPower"),
    ]

    func run(wake: Int32, initial: PowerAndNetwork, onChange: @Sendable (PowerAndNetwork) -> Void) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        for watched in Self.watched {
            var slot: OpaquePointer?
            // Any change of the service's properties, and the service coming or going: read again.
            sd_bus_match_signal(
                bus, &slot, nil, watched.path, "org.freedesktop.DBus.Properties", "PropertiesChanged", busSignal,
                context)
            slots.append(slot)
        }
        var slot: OpaquePointer?
        sd_bus_match_signal(
            bus, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
            busSignal,
            context)
        slots.append(slot)
        var last = initial
        while true {
            if sd_bus_process(bus, nil) > 0 { continue }
            if changed {
                changed = false
                let now = read()
                if now != last {
                    last = now
                    onChange(now)
                }
                // The calls above may have queued messages that poll(2) will not report.
                continue
            }
            var descriptors = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || descriptors[1].revents != 0 { return }
            if descriptors[0].revents & Int16(POLLHUP | POLLERR) != 0 && descriptors[0].revents & Int16(POLLIN) == 0 {
                Log.warning("the system bus went away: metered connections and battery power are no longer watched")
                onChange(PowerAndNetwork())
                return
            }
        }
    }

    fileprivate func signalArrived() { changed = true }

    /// The current values; a missing service or property reads as not known.
    func read() -> PowerAndNetwork {
        var state = PowerAndNetwork()
        var metered: UInt32 = 0
        if property(Self.watched[0], "Metered", type: "u", into: &metered) {
            // NMMetered: 1 yes, 3 guess-yes (a phone's hotspot, by NetworkManager's own guess).
            state.metered = metered == 1 || metered == 3
        }
        var onBattery: Int32 = 0
        if property(Self.watched[1], "OnBattery", type: "b", into: &onBattery) { state.onBattery = onBattery != 0 }
        return state
    }

    private func property<T>(
        _ watched: (service: String, path: String, interface: String), _ name: String, type: Character,
        into value: inout T
    ) -> Bool {
        var error = CSystemd_bus_error_null()
        defer { sd_bus_error_free(&error) }
        let result = withUnsafeMutablePointer(to: &value) { pointer in
            sd_bus_get_property_trivial(
                bus, watched.service, watched.path, watched.interface, name, &error, CChar(type.asciiValue!), pointer)
        }
        return result >= 0
    }
}

/// sd-bus calls this for each matched signal; context comes through `userdata`.
private let busSignal:
    @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32 = {
        _, userdata, _ in
        if let userdata { Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue().signalArrived() }
        return 0
    }

extension PowerAndNetwork {
    /// Why an upload to `target` must not start now, if it must not: a metered connection or
    /// battery power its destination is set to spare. Local copies never wait.
    func holdReason(for target: ResolvedTarget) -> WaitReason? {
        guard TransferRegistry.entry(target.uploadProtocol).usesNetwork else { return nil }
        if isMetered && target.waitOnMetered { return .metered }
        if isOnBattery && target.waitOnBattery { return .battery }
        return nil
    }
}
