import Foundation
import Testing
import UploadCore
import UploadWire

/// Progress as people see it: bytes counted when they reach the wire, an ETA that falls to 0, and
/// a completed job that says it sent everything.
@Suite(.serialized)
final class ProgressTests {
    let servers: TestServers
    let files: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("progress-files")
    }

    @Test func aRateLimitedPutCountsWhatReachedTheWireAndItsETAFallsToZero() throws {
        let rate = 1 << 20
        let daemon = try DaemonProcess(name: "progress", config: "[daemon]\nrate_limit = 1M\n")
        try daemon.start()
        defer { daemon.stop() }
        let path = files.appendingPathComponent("five.bin").path
        let size = 5 << 20
        try makeRandomFile(at: path, size: size)
        let id = try daemon.add([path], to: "\(servers.nginxURL)/dav/progress/", ["--protocol", "put"])[0]
        var samples: [(at: Double, sent: Int64, eta: Double?)] = []
        var started: Date?
        while true {
            let job = try daemon.job(id)
            if job.state == .running && started == nil && job.bytesSent > 0 { started = Date() }
            if let started, job.state == .running {
                samples.append((Date().timeIntervalSince(started), job.bytesSent, job.eta))
            }
            if job.state.isTerminal {
                #expect(job.state == .completed)
                #expect(job.bytesSent == Int64(size), "a completed job sent every byte")
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        try #require(samples.count >= 10, "too few samples: \(samples.count)")
        // Never further ahead of the rate than one upload buffer (a quarter second) and a sample's slack.
        for sample in samples {
            let allowed = Int64((sample.at + 0.25 + 0.5) * Double(rate))
            #expect(sample.sent <= allowed, "at \(sample.at) s, \(sample.sent) bytes counted as sent")
        }
        // It moves steadily, not in 2 MiB steps: no jump larger than a second's worth.
        for (before, after) in zip(samples, samples.dropFirst()) {
            #expect(after.sent - before.sent <= Int64(rate), "jumped \(after.sent - before.sent) bytes")
        }
        let etas = samples.compactMap(\.eta)
        print("measured: ETAs every 0.2 s: \(etas)")
        try #require(etas.count >= 5)
        #expect(etas.last! <= 1, "the ETA ends near 0: \(etas)")
        #expect(etas.first! >= 3, "and starts at the seconds left: \(etas)")
        let rises = zip(etas, etas.dropFirst()).filter { $1 > $0 + 1 }.count
        #expect(rises == 0, "the ETA never goes up by more than a second: \(etas)")
    }

    /// A 5 MiB PUT to a server that reads 1 MiB/s, on a connection kept from an upload before it
    /// (issue 49, finding 2): what the list shows as sent is what the server has (within its small
    /// buffers), the speed is the server's and never negative, and a job whose bytes are all there
    /// says it waits for the answer. On a kept connection, every byte handed to the kernel counted:
    /// the list showed 3.9 MB sent while the server had 64 KiB, then "100%, eta 0s" for seconds.
    /// Then the count moved only when the socket took a megabyte more: settled speeds of 95 KB/s
    /// ("eta 53s") and 2.6 MB/s for a server reading 1 MiB/s.
    @Test func progressOnAKeptConnectionIsWhatTheServerHas() throws {
        let slow = try HostileServer(mode: "slow-read", options: ["--read-bytes", "262144", "--read-interval", "0.25"])
        defer { slow.stop() }
        let daemon = try DaemonProcess(name: "progress-kept", config: "[daemon]\ntransfers = 1\n")
        try daemon.start()
        defer { daemon.stop() }
        let small = files.appendingPathComponent("warm.bin").path
        try makeRandomFile(at: small, size: 10_000)
        let warm = try daemon.add([small], to: "\(slow.url)/kept/", ["--protocol", "put"])[0]
        #expect(try daemon.waitFor(warm, timeout: 30).state == .completed)
        let path = files.appendingPathComponent("kept-five.bin").path
        let size = 5 << 20
        try makeRandomFile(at: path, size: size)
        let id = try daemon.add([path], to: "\(slow.url)/kept/", ["--protocol", "put"])[0]
        var waitedForAnswer = false
        var samples = 0
        var settled = 0
        var readings: [String] = []
        let serverRate = 1_048_576.0
        while true {
            let job = try daemon.job(id)
            if job.state.isTerminal {
                #expect(job.state == .completed, "\(String(describing: job.error))")
                break
            }
            if job.state == .running {
                let read =
                    try slow.requests(on: .main).filter { $0.path.hasSuffix("kept-five.bin") }.map(\.bodyBytes)
                    .max() ?? 0
                samples += 1
                readings.append("\(job.bytesSent)/\(read) \(Int(job.speed)) B/s eta \(job.eta.map { "\($0)" } ?? "-")")
                #expect(job.speed >= 0, "a negative speed: \(job.speed)")
                // Within its first second the speed is an average over a burst or two of the server's
                // 256 KiB reads, and says so (no ETA); once settled, it is the server's rate.
                if job.eta != nil {
                    settled += 1
                    #expect(
                        (0.5 * serverRate...1.5 * serverRate).contains(job.speed),
                        "a settled speed of \(job.speed) B/s for a server reading \(serverRate): \(readings)")
                }
                // The server's read comes after the daemon's sample: it may only be further along.
                #expect(
                    job.bytesSent <= Int64(read) + (512 << 10),
                    "\(job.bytesSent) bytes counted as sent when the server had read \(read)")
                if job.bytesSent == Int64(size) {
                    #expect(job.activity == "waiting for the server's answer", "\(String(describing: job.activity))")
                    waitedForAnswer = true
                }
            }
            Thread.sleep(forTimeInterval: 0.3)
        }
        #expect(samples >= 8, "too few samples: \(samples)")
        #expect(settled >= 5, "too few settled speeds: \(readings)")
        print("measured: sent/read, speed, ETA every 0.3 s: \(readings)")
        print("measured: saw the wait for the answer: \(waitedForAnswer)")
    }
}
