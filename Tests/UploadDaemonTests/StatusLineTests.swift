import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon

/// systemd's STATUS= line: what it says, and how often it changes while uploads run.
@Suite struct StatusLineTests {
    @Test func theLineNamesWhatIsGoingOn() {
        let text = StatusLine.text(
            counts: [.running: 2, .queued: 5, .failed: 1], held: [.network: 3, .metered: 0], speed: 0, limit: 1 << 20)
        #expect(text == "2 uploading, 5 queued, 3 waiting for the network, 1 failed, limit 1.0 MiB/s")
    }

    @Test func onlyChangesGoOutAndAtMostOnceASecondWhileBusy() {
        var reports = StatusLine.Reports()
        let start = ContinuousClock.now
        #expect(reports.isDue("1 uploading", at: start, busy: true))
        _ = reports.sent("1 uploading", at: start)
        #expect(!reports.isDue("1 uploading", at: start + .seconds(5), busy: true), "no change, nothing sent")
        #expect(!reports.isDue("1 uploading, 3 MiB/s", at: start + .milliseconds(400), busy: true))
        #expect(reports.isDue("1 uploading, 3 MiB/s", at: start + .milliseconds(1_000), busy: true))
        #expect(reports.isDue("0 uploading", at: start + .milliseconds(10), busy: false), "idle gets through at once")
    }
}
