import Foundation
import Testing
import UploadCore
import UploadWire

/// `reload` tells the truth: every problem of a broken file, a non-zero exit, the old settings
/// kept, and status saying which config is in use.
@Suite(.serialized)
final class ReloadTests {
    @Test func aBrokenFileIsRefusedWithEveryProblemAndTheOldSettingsStay() throws {
        let daemon = try DaemonProcess(name: "reload", config: "[daemon]\ntransfers = 3\n")
        try daemon.start()
        defer { daemon.stop() }
        #expect(try daemon.ctlJSON(DaemonStatus.self, ["status"]).maxTransfers == 3)

        try "[deamon]\ntransfers = 1\n[daemon]\nretry_attempts = lots\n".write(
            toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.ctl(["reload"])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("line 1: unknown section [deamon] (did you mean [daemon]?)"), "\(refused)")
        #expect(refused.stderr.contains("line 4: retry_attempts must be a whole number"), "\(refused)")
        #expect(refused.stderr.contains("the one in use stays"), "\(refused)")
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(status.maxTransfers == 3, "the old settings stay")
        #expect(status.configErrors?.count == 2, "\(String(describing: status.configErrors))")
        #expect(try daemon.ctl(["status"]).stdout.contains("config errors (the last reload was refused"))

        try "[daemon]\ntransfers = 1\ncolour = blue\n".write(
            toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let reloaded = try daemon.ctl(["reload"])
        #expect(reloaded.status == 0, "\(reloaded)")
        #expect(reloaded.stdout == "reloaded\n")
        #expect(reloaded.stderr.contains("warning: line 3: unknown key 'colour'"), "\(reloaded)")
        let after = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(after.maxTransfers == 1)
        #expect(after.configErrors == nil, "the errors of the refused file are gone")
        #expect(after.configWarnings.count == 1)
    }
}
