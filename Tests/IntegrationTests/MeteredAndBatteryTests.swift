import Foundation
import Testing
import UploadCore
import UploadWire

/// A phone's hotspot and a laptop on battery, as NetworkManager and UPower tell them (python-dbusmock
/// on a private system bus): uploads wait where the config says so, say why, and start when it
/// changes.
@Suite(.serialized)
final class MeteredAndBatteryTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("metered-files")
    }

    func file(_ name: String) throws -> String {
        let path = files.appendingPathComponent(name).path
        try makeRandomFile(at: path, size: 30_000)
        return path
    }

    func daemon(_ name: String, bus: BusMock) throws -> DaemonProcess {
        let config =
            "[remote unplugged]\nurl = \(servers.nginxURL)/dav/metered/\nprotocol = put\nwait_on_battery = yes\n"
        let daemon = try DaemonProcess(name: name, config: config)
        daemon.extraEnvironment = bus.environment
        try daemon.start()
        return daemon
    }

    /// Stays queued and says why, for a while.
    func expectHeld(_ daemon: DaemonProcess, _ id: JobID, _ reason: String) throws {
        #expect(
            eventually(timeout: 10) { (try? daemon.job(id))?.waiting == reason },
            "\(String(describing: try? daemon.job(id)))")
        Thread.sleep(forTimeInterval: 1.5)
        let job = try daemon.job(id)
        #expect(job.state == .queued && job.attempts == 0 && job.waiting == reason, "\(job)")
    }

    @Test func aMeteredConnectionHoldsUploadsUntilItIsNot() throws {
        let bus = try BusMock(system: true)
        defer { bus.stop() }
        try bus.setMetered("yes")
        let daemon = try daemon("metered", bus: bus)
        defer { daemon.stop() }
        let ids = try daemon.add(
            [try file("metered.bin")], to: "\(servers.nginxURL)/dav/metered/", ["--protocol", "put"])
        try expectHeld(daemon, ids[0], "metered")
        #expect(try daemon.ctl(["list"]).stdout.contains("queued (waiting for an unmetered connection)"))
        // `status` says what the machine's services say, and what is held back for it (issue 49, 7).
        let status = try daemon.ctl(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("connection: metered\n"), "\(status.stdout)")
        #expect(status.stdout.contains("power: on mains\n"), "\(status.stdout)")
        #expect(status.stdout.contains("held back: 1 waiting for an unmetered connection\n"), "\(status.stdout)")
        let conditions = try daemon.statusJSON()["conditions"] as? [String: Any]
        #expect(conditions?["metered"] as? Bool == true, "\(String(describing: conditions))")
        #expect(conditions?["on_battery"] as? Bool == false, "\(String(describing: conditions))")
        #expect(
            conditions?["waiting"] as? [String: Int] == ["network": 0, "metered": 1, "battery": 0],
            "\(String(describing: conditions))")
        // A local copy never waits for the connection.
        let local = try daemon.add([try file("local.bin")], to: "file://\(files.path)/out/")
        #expect(try daemon.waitFor(local[0]).state == .completed)

        try bus.setMetered("no")
        let job = try daemon.waitFor(ids[0], timeout: 20)
        #expect(job.state == .completed)
        #expect(job.waiting == nil)

        // NetworkManager's own guess (a hotspot) counts too.
        try bus.setMetered("guess-yes")
        let guessed = try daemon.add(
            [try file("guessed.bin")], to: "\(servers.nginxURL)/dav/metered/", ["--protocol", "put"])
        try expectHeld(daemon, guessed[0], "metered")
        try bus.setMetered("guess-no")
        #expect(try daemon.waitFor(guessed[0], timeout: 20).state == .completed)
    }

    @Test func batteryPowerHoldsOnlyTheRemotesThatAskForIt() throws {
        let bus = try BusMock(system: true)
        defer { bus.stop() }
        try bus.setOnBattery(true)
        let daemon = try daemon("battery", bus: bus)
        defer { daemon.stop() }
        let held = try daemon.add([try file("held.bin")], to: "unplugged:")
        let free = try daemon.add(
            [try file("free.bin")], to: "\(servers.nginxURL)/dav/metered/", ["--protocol", "put"])
        #expect(try daemon.waitFor(free[0]).state == .completed, "wait_on_battery is off by default")
        try expectHeld(daemon, held[0], "battery")
        let status = try daemon.ctl(["status"]).stdout
        #expect(status.contains("connection: not metered\npower: on battery\n"), "\(status)")
        #expect(status.contains("held back: 1 waiting for mains power\n"), "\(status)")
        try bus.setOnBattery(false)
        #expect(try daemon.waitFor(held[0], timeout: 20).state == .completed)
    }

    @Test func withoutNetworkManagerOrUPowerNothingWaits() throws {
        let bus = try BusMock(system: true)
        defer { bus.stop() }
        try bus.removeNetworkManager()
        try bus.removeUPower()
        let daemon = try daemon("no-services", bus: bus)
        defer { daemon.stop() }
        let ids = try daemon.add([try file("plain.bin")], to: "unplugged:")
        #expect(try daemon.waitFor(ids[0]).state == .completed)
        #expect(daemon.logLines(containing: "error").isEmpty, "\(daemon.log(tail: 20))")
        let status = try daemon.ctl(["status"]).stdout
        #expect(
            status.contains("connection: not known (NetworkManager does not answer on the system bus)"), "\(status)")
        #expect(status.contains("power: not known (UPower does not answer on the system bus)"), "\(status)")
        #expect(!status.contains("held back"), "\(status)")
        let conditions = try daemon.statusJSON()["conditions"] as? [String: Any]
        #expect(
            conditions?["metered"] is NSNull && conditions?["on_battery"] is NSNull, "\(String(describing: conditions))"
        )
    }
}
