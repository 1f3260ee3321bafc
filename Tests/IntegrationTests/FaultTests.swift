import Foundation
import Testing
import UploadCore
import UploadWire

/// Faulty servers and networks: contrib/test/faultproxy.py between the daemon and the real servers
/// (nginx PUT, tuspyserver, the chunked receiver) resets, stalls, trickles, answers errors with and
/// without `Retry-After`, truncates answers, drops connections and restarts; plus nginx over TLS
/// with a private CA. Every upload must still complete (resuming where the protocol allows), within
/// the retry policy's timing, or fail with a classified error when no retry can help.
@Suite(.serialized)
final class FaultTests {
    let servers: TestServers
    let files: URL
    private var daemon: DaemonProcess?
    private var proxy: FaultProxy?

    /// Quick retries: full-jitter bounds of 0.2, 0.4, 0.8 s, at most 2 s; four attempts; a stall is
    /// "no bytes for 3 s".
    static let stallTimeout = 3.0
    static let config = """
        [daemon]
        retry_attempts = 4
        retry_for = 0
        retry_base_delay = 200
        retry_max_delay = 2
        stall_timeout = 3
        connect_timeout = 5

        """
    /// For server restarts: four quick retries can all fall inside a two-second restart, so these
    /// jobs get many more (at most 1 s apart).
    static let patientConfig = """
        [daemon]
        retry_attempts = 30
        retry_for = 0
        retry_base_delay = 200
        retry_max_delay = 1
        stall_timeout = 3
        connect_timeout = 5

        """
    static let chunk = 1 << 20
    /// Request and multipart headers on top of the file's bytes, generously.
    static let overhead = 64 << 10

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("fault-files")
    }

    deinit {
        daemon?.stop()
        proxy?.stop()
        try? FileManager.default.removeItem(at: files)
    }

    // MARK: - Helpers

    private func startDaemon(_ config: String = FaultTests.config, name: String = "fault") throws -> DaemonProcess {
        let daemon = try DaemonProcess(name: name, config: config)
        self.daemon = daemon
        try daemon.start()
        return daemon
    }

    private func startProxy(upstream: String, _ faults: [FaultProxy.Fault], otherwise: FaultProxy.Fault? = nil) throws
        -> FaultProxy
    {
        let proxy = try FaultProxy(upstream: upstream)
        self.proxy = proxy
        try proxy.plan(faults, otherwise: otherwise)
        return proxy
    }

    private func makeFile(_ name: String, size: Int) throws -> (path: String, name: String) {
        let unique = "\(UUID().uuidString.prefix(8))-\(name)"
        let path = files.appendingPathComponent(unique).path
        try makeRandomFile(at: path, size: size)
        return (path, unique)
    }

    /// `url` with its port replaced by the proxy's (both are on 127.0.0.1).
    private func viaProxy(_ url: String, _ proxy: FaultProxy) -> String {
        var components = URLComponents(string: url)!
        components.port = proxy.port
        return components.string!
    }

    /// The delays the daemon chose, from the job's history ("...; retrying in 0.7s").
    private func retryDelays(_ job: JobInfo) -> [Double] {
        (job.history ?? []).compactMap { event in
            guard let range = event.message.range(of: "retrying in ") else { return nil }
            return Double(event.message[range.upperBound...].prefix { $0.isNumber || $0 == "." })
        }
    }

    /// The bound of the n-th retry's full-jitter delay (n from 1) under `config`.
    private func bound(_ n: Int, base: Double = 0.2, cap: Double = 2) -> Double {
        min(base * pow(2, Double(n - 1)), cap)
    }

    private struct PutRun {
        var job: JobInfo
        var stats: FaultProxy.Stats
        var path: String
        var stored: String
        var seconds: Double
    }

    /// Uploads a file with PUT to nginx through a proxy that follows `faults`, and waits for the end.
    private func putThrough(
        _ faults: [FaultProxy.Fault], otherwise: FaultProxy.Fault? = nil, size: Int = 768 << 10,
        config: String = FaultTests.config, timeout: Double = 60
    ) throws -> PutRun {
        let daemon = try startDaemon(config)
        let proxy = try startProxy(upstream: servers.nginxURL, faults, otherwise: otherwise)
        let file = try makeFile("put.bin", size: size)
        let directory = "dav/fault-\(UUID().uuidString.prefix(8))"
        let started = Date()
        let ids = try daemon.add([file.path], to: "\(proxy.url)/\(directory)/", ["--protocol", "put"])
        _ = try daemon.waitFor(ids[0], timeout: timeout)
        let seconds = Date().timeIntervalSince(started)
        return PutRun(
            job: try daemon.job(ids[0]), stats: try proxy.stats(), path: file.path,
            stored: "\(servers.nginxRoot)/\(directory)/\(file.name)", seconds: seconds)
    }

    private func expectCompleted(_ run: PutRun, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(
            run.job.state == .completed, "\(String(describing: run.job.error))\n\(daemon?.log(tail: 20) ?? "")",
            sourceLocation: sourceLocation)
        let stored = FileManager.default.fileExists(atPath: run.stored) ? try Command.sha256(run.stored) : "missing"
        #expect(
            stored == (try Command.sha256(run.path)), "the server's file matches the source",
            sourceLocation: sourceLocation)
    }

    // MARK: - PUT to nginx, one fault kind at a time

    @Test func putSurvivesAResetMidBody() throws {
        let run = try putThrough([.resetAfter(bytes: 300_000)])
        try expectCompleted(run)
        #expect(run.job.attempts == 2, "one retry after the reset")
        #expect(run.stats.connections == 2)
        #expect(run.stats.conns.first?.closedBy == "proxy" && (run.stats.conns.first?.up ?? 0) >= 300_000)
        #expect(run.job.history?.contains { $0.message.contains("attempt 1 failed") } == true)
    }

    @Test func putStallIsDetectedWithinTheStallTimeoutAndRetried() throws {
        // The proxy takes 200 kB, then swallows the rest and never answers.
        let run = try putThrough([.stall(seconds: 60, after: 200_000)])
        try expectCompleted(run)
        #expect(run.job.attempts == 2)
        #expect(run.job.history?.contains { $0.message.contains("stalled") } == true, "\(run.job.history ?? [])")
        #expect(run.stats.conns.first?.closedBy == "client", "the daemon gave up on the stalled connection")
        let silent = try stallSilence(run.stats, "PUT")
        #expect(silent >= Self.stallTimeout - 0.5, "not before stall_timeout: \(silent) s")
        #expect(
            silent <= Self.stallTimeout + 2.5,
            "a stall is 'no bytes for stall_timeout seconds'; detected after \(silent) s")
    }

    /// Seconds from the last byte up the stalled (first) connection to its close: how long the
    /// daemon took to notice the stall.
    private func stallSilence(
        _ stats: FaultProxy.Stats, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    )
        throws -> Double
    {
        let stalled = try #require(stats.conns.first, sourceLocation: sourceLocation)
        let silent = try #require(
            stalled.closed.flatMap { closed in stalled.lastUp.map { closed - $0 } }, sourceLocation: sourceLocation)
        print(
            "measured: \(what) stall detected \(String(format: "%.2f", silent)) s after the last byte (stall_timeout \(Self.stallTimeout) s)"
        )
        return silent
    }

    @Test func putTrickleIsSlowNotStalled() throws {
        // 768 KiB at 256 KiB/s: about 3 s, never below the stall limit, so one attempt.
        let run = try putThrough([.trickle(rate: 256 << 10)])
        try expectCompleted(run)
        #expect(run.job.attempts == 1, "a slow link is not a stall")
        let request = try #require(run.stats.requests.first)
        let answer = try #require(run.stats.responses.first { $0.conn == request.conn && $0.status >= 200 })
        print("measured: trickled PUT took \(String(format: "%.2f", answer.t - request.t)) s")
        #expect(answer.t - request.t >= 2.5, "the proxy really trickled")
    }

    /// (Not 500: a PUT answered 500 asks the server whether its folder exists, and the proxy's next
    /// fault would answer that PROPFIND.)
    @Test func putRetriesServerErrorsWithinTheBackoffBounds() throws {
        let run = try putThrough([.respond(status: 504), .respond(status: 502), .respond(status: 503)])
        try expectCompleted(run)
        #expect(run.job.attempts == 4)
        #expect(run.stats.requests.count == 4)
        for status in [504, 502, 503] {
            #expect(
                run.job.history?.contains { $0.message.contains("HTTP \(status)") } == true, "\(status) in the history")
        }
        let gaps = run.stats.gapsAfterInjectedAnswers
        let delays = retryDelays(run.job)
        print("measured: backoff gaps \(gaps.map { String(format: "%.3f", $0) }), chosen delays \(delays)")
        #expect(gaps.count == 3 && delays.count == 3)
        for (index, gap) in gaps.enumerated() {
            #expect(gap <= bound(index + 1) + 0.5, "retry \(index + 1) after \(gap) s; bound \(bound(index + 1)) s")
        }
        for (index, delay) in delays.enumerated() { #expect(delay <= bound(index + 1) + 0.05) }
    }

    @Test(arguments: [(503, 2), (429, 2), (502, 1)])
    func retryAfterIsHonoured(status: Int, seconds: Int) throws {
        let daemon = try startDaemon()
        let proxy = try startProxy(upstream: servers.nginxURL, [.respond(status: status, retryAfter: "\(seconds)")])
        let file = try makeFile("retry-after.bin", size: 100_000)
        let directory = "dav/fault-\(UUID().uuidString.prefix(8))"
        let ids = try daemon.add([file.path], to: "\(proxy.url)/\(directory)/", ["--protocol", "put"])
        // While the job waits, next_attempt_at says when it will go again.
        var waiting: JobInfo?
        _ = try eventually(timeout: Double(seconds) + 10) {
            let job = try daemon.job(ids[0])
            if job.state == .queued, job.nextAttemptAt != nil { waiting = job }
            return waiting != nil || job.state.isTerminal
        }
        let queued = try #require(waiting, "the job waited for its next attempt")
        let planned = try #require(queued.nextAttemptAt).timeIntervalSince(queued.updatedAt)
        #expect(abs(planned - Double(seconds)) < 0.05, "next_attempt_at is \(planned) s after the failure")
        #expect(queued.error?.status == status)
        let job = try daemon.waitFor(ids[0], timeout: 30)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.attempts == 2)
        #expect(try Command.sha256("\(servers.nginxRoot)/\(directory)/\(file.name)") == Command.sha256(file.path))
        let stats = try proxy.stats()
        let gap = try #require(stats.gapsAfterInjectedAnswers.first)
        print("measured: Retry-After \(seconds) on \(status): next request \(String(format: "%.3f", gap)) s later")
        #expect(gap >= Double(seconds) - 0.05, "the next attempt came \(gap) s after Retry-After: \(seconds)")
        #expect(gap <= Double(seconds) + 1.0, "and not much later: \(gap) s")
    }

    @Test func putRecoversFromATruncatedAnswer() throws {
        // "HTTP/1.1 201" and then nothing: the status line never ends.
        let run = try putThrough([.truncate(bytes: 12)])
        try expectCompleted(run)
        #expect(run.job.attempts == 2)
        #expect(run.stats.conns.first?.down == 12 && run.stats.conns.first?.closedBy == "proxy")
    }

    @Test func putRecoversFromDroppedConnections() throws {
        let run = try putThrough([.drop, .drop])
        try expectCompleted(run)
        #expect(run.job.attempts == 3)
        #expect(run.stats.connections == 3)
    }

    @Test func putSurvivesAServerRestart() throws {
        // After 300 kB the "server" goes away for 2 s: open connections are reset, new ones refused.
        let run = try putThrough([.down(after: 300_000, seconds: 2)], config: Self.patientConfig)
        try expectCompleted(run)
        let down = try #require(run.stats.downs.first)
        let end = try #require(down.end, "the proxy came back")
        #expect(end - down.start >= 1.9)
        #expect(run.job.attempts >= 2)
        let last = try #require(run.stats.requests.last)
        #expect(last.t >= end, "the upload that completed started after the restart")
    }

    // MARK: - The retry budget and the backoff cap

    @Test func theAttemptBudgetEndsInAClassifiedFailure() throws {
        let run = try putThrough([], otherwise: .respond(status: 503), size: 100_000, timeout: 30)
        #expect(run.job.state == .failed)
        #expect(run.job.error?.code == "http")
        #expect(run.job.error?.status == 503)
        #expect(run.job.error?.message.contains("503") == true, "\(String(describing: run.job.error))")
        #expect(run.job.attempts == 4, "retry_attempts = 4")
        #expect(run.job.nextAttemptAt == nil)
        print(
            "measured: 4 attempts against an always-503 server failed the job in \(String(format: "%.2f", run.seconds)) s"
        )
        #expect(run.seconds < 10, "bounded: the four attempts' delays are at most 0.2 + 0.4 + 0.8 s")
        #expect(run.stats.requests.count == 4)
        // Never an endless loop: nothing more arrives at the server.
        usleep(1_500_000)
        #expect(try proxy!.stats().requests.count == 4)
        #expect(try daemon!.job(run.job.id).state == .failed)
    }

    @Test func backoffStaysWithinRetryMaxDelay() throws {
        // Uncapped, a 2 s base would give bounds of 2, 4, 8, 16, 32 s; the cap holds them all to 1 s.
        let config =
            "[daemon]\nretry_attempts = 6\nretry_for = 0\nretry_base_delay = 2000\nretry_max_delay = 1\nstall_timeout = 3\n"
        let run = try putThrough([], otherwise: .respond(status: 502), size: 10_000, config: config, timeout: 30)
        #expect(run.job.state == .failed)
        #expect(run.job.error?.code == "http" && run.job.error?.status == 502)
        #expect(run.job.attempts == 6)
        let delays = retryDelays(run.job)
        let gaps = run.stats.gapsAfterInjectedAnswers
        print("measured: capped backoff gaps \(gaps.map { String(format: "%.3f", $0) }), chosen delays \(delays)")
        #expect(delays.count == 5, "\(run.job.history ?? [])")
        #expect(delays.allSatisfy { $0 <= 1.05 }, "every delay within retry_max_delay: \(delays)")
        #expect(gaps.count == 5)
        #expect(gaps.allSatisfy { $0 <= 1.5 }, "every retry within retry_max_delay (+ slack): \(gaps)")
        #expect(run.seconds < 5 + 3, "five capped delays of at most 1 s")
    }

    // MARK: - tus: resumes from the server's offset (HEAD)

    private struct ResumableRun {
        var job: JobInfo
        var stats: FaultProxy.Stats
        var path: String
        var name: String
        var size: Int
    }

    private func tusThrough(_ faults: [FaultProxy.Fault], config: String = FaultTests.config) throws -> ResumableRun {
        let daemon = try startDaemon(config)
        let proxy = try startProxy(upstream: servers.tusURL, faults)
        let size = 8 << 20
        let file = try makeFile("tus.bin", size: size)
        let ids = try daemon.add(
            [file.path], to: viaProxy(servers.tusURL, proxy), ["--protocol", "tus", "--chunk-size", "1M"])
        _ = try daemon.waitFor(ids[0], timeout: 60)
        return ResumableRun(
            job: try daemon.job(ids[0]), stats: try proxy.stats(), path: file.path, name: file.name, size: size)
    }

    private func expectTusResumed(_ run: ResumableRun, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(run.job.state == .completed, "\(String(describing: run.job.error))", sourceLocation: sourceLocation)
        let url = try #require(run.job.result?.url, sourceLocation: sourceLocation)
        let stored = "\(servers.tusDirectory)/\((url as NSString).lastPathComponent)"
        #expect(try Command.sha256(stored) == Command.sha256(run.path), sourceLocation: sourceLocation)
        #expect(run.job.attempts >= 2, sourceLocation: sourceLocation)
        // One upload on the server, continued from its offset, not a second one from zero.
        let infos = try FileManager.default.contentsOfDirectory(atPath: servers.tusDirectory).filter {
            $0.hasSuffix(".info")
        }
        let sameName = try infos.filter {
            try String(contentsOfFile: "\(servers.tusDirectory)/\($0)", encoding: .utf8).contains(run.name)
        }
        #expect(sameName.count == 1, "no second upload: \(sameName)", sourceLocation: sourceLocation)
        #expect(
            run.job.history?.contains {
                $0.message.hasPrefix("resuming at byte ") && !$0.message.hasPrefix("resuming at byte 0 ")
            }
                == true, "\(run.job.history ?? [])", sourceLocation: sourceLocation)
        print("measured: tus sent \(run.stats.bytesUp) bytes for \(run.size) (\(run.stats.connections) connections)")
        #expect(
            run.stats.bytesUp <= run.size + Self.chunk + Self.overhead,
            "resent at most one chunk: \(run.stats.bytesUp) bytes on the wire for \(run.size)",
            sourceLocation: sourceLocation)
    }

    @Test func tusResumesAfterAReset() throws {
        let run = try tusThrough([.resetAfter(bytes: 3 << 20 + 512 << 10)])
        try expectTusResumed(run)
    }

    @Test func tusResumesAfterAStall() throws {
        let run = try tusThrough([.stall(seconds: 60, after: 3 << 20 + 512 << 10)])
        try expectTusResumed(run)
        let silent = try stallSilence(run.stats, "tus")
        #expect(silent <= Self.stallTimeout + 2.5, "detected after \(silent) s")
    }

    @Test func tusRecoversFromAnAnswerCutInItsHead() throws {
        // The 4th answer (OPTIONS, POST, PATCH, PATCH) ends before its Upload-Offset header: the
        // status is 204, but the answer is incomplete. HEAD tells where the server is.
        let run = try tusThrough([.truncateHead(answer: 4, beforeHeader: "upload-offset")])
        let cut = run.stats.requests.filter { $0.conn == 1 }.dropFirst(3).first
        #expect(cut?.method == "PATCH", "the cut answer was a PATCH's: \(run.stats.requests)")
        try expectTusResumed(run)
    }

    @Test func tusResumesAfterAServerRestart() throws {
        let run = try tusThrough([.down(after: 3 << 20 + 512 << 10, seconds: 2)], config: Self.patientConfig)
        try expectTusResumed(run)
        #expect(run.stats.downs.count == 1 && run.stats.downs[0].end != nil)
    }

    // MARK: - chunked: resumes from the last acknowledged block (journal)

    private func chunkedThrough(_ faults: [FaultProxy.Fault], config: String = FaultTests.config) throws -> ResumableRun
    {
        let daemon = try startDaemon(config)
        let proxy = try startProxy(upstream: servers.receiverURL, faults)
        let size = 8 << 20
        let file = try makeFile("blocks.mp4", size: size)
        let ids = try daemon.add(
            [file.path], to: "\(proxy.url)/upload", ["--protocol", "chunked"] + servers.receiverTokenField)
        _ = try daemon.waitFor(ids[0], timeout: 60)
        return ResumableRun(
            job: try daemon.job(ids[0]), stats: try proxy.stats(), path: file.path, name: file.name, size: size)
    }

    private func expectChunkedResumed(_ run: ResumableRun, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(run.job.state == .completed, "\(String(describing: run.job.error))", sourceLocation: sourceLocation)
        let url = try #require(run.job.result?.url, sourceLocation: sourceLocation)
        let stored = "\(servers.receiverDirectory)/\((url as NSString).lastPathComponent)"
        #expect(try Command.sha256(stored) == Command.sha256(run.path), sourceLocation: sourceLocation)
        #expect(run.job.attempts >= 2, sourceLocation: sourceLocation)
        let posts = run.stats.requests.filter { $0.method == "POST" }.count
        print(
            "measured: chunked sent \(run.stats.bytesUp) bytes for \(run.size) in \(posts) POSTs (\(run.stats.connections) connections)"
        )
        #expect(
            posts <= run.size / Self.chunk + 1 + 1, "one init, every block once, one block again: \(posts) POSTs",
            sourceLocation: sourceLocation)
        #expect(
            run.stats.bytesUp <= run.size + Self.chunk + Self.overhead,
            "resent at most one block: \(run.stats.bytesUp) bytes on the wire for \(run.size)",
            sourceLocation: sourceLocation)
    }

    @Test func chunkedResumesAfterAReset() throws {
        let run = try chunkedThrough([.resetAfter(bytes: 3 << 20 + 512 << 10)])
        try expectChunkedResumed(run)
    }

    @Test func chunkedResumesAfterAStall() throws {
        let run = try chunkedThrough([.stall(seconds: 60, after: 3 << 20 + 512 << 10)])
        try expectChunkedResumed(run)
        let silent = try stallSilence(run.stats, "chunked")
        #expect(silent <= Self.stallTimeout + 2.5, "detected after \(silent) s")
    }

    @Test func chunkedRecoversFromAnAnswerCutInItsBody() throws {
        // Block 1's answer ({"code":0,...}) stops 10 bytes into its JSON: block 1 is sent again.
        let run = try chunkedThrough([.truncateBody(answer: 2, bodyBytes: 10)])
        try expectChunkedResumed(run)
    }

    @Test func chunkedRecoversFromAnAnswerCutInItsHead() throws {
        // Block 2's answer ends before its Content-Length: "200 OK" with no body, an incomplete answer.
        let run = try chunkedThrough([.truncateHead(answer: 3, beforeHeader: "content-length")])
        try expectChunkedResumed(run)
    }

    @Test func chunkedResumesAfterAServerRestart() throws {
        let run = try chunkedThrough([.down(after: 3 << 20 + 512 << 10, seconds: 2)], config: Self.patientConfig)
        try expectChunkedResumed(run)
        #expect(run.stats.downs.count == 1 && run.stats.downs[0].end != nil)
    }

    // MARK: - TLS with a private CA

    @Test func tlsWithoutTheCAFailsAtOnceWithACertificateError() throws {
        let tls = try TLSTestServer.load()
        let daemon = try startDaemon()
        let file = try makeFile("tls.bin", size: 100_000)
        let directory = "dav/tls-\(UUID().uuidString.prefix(8))"
        let ids = try daemon.add([file.path], to: "\(tls.url)/\(directory)/", ["--protocol", "put"])
        let job = try daemon.waitFor(ids[0], timeout: 30)
        #expect(job.state == .failed)
        #expect(job.error?.code == "tls", "\(String(describing: job.error))")
        #expect(job.error?.message.lowercased().contains("certificate") == true, "\(String(describing: job.error))")
        #expect(job.error?.message.contains("ca_file") == true, "the message says what to do")
        #expect(job.attempts == 1, "a certificate error is not retried")
        #expect(
            !FileManager.default.fileExists(atPath: "\(tls.root)/\(directory)/\(file.name)"), "nothing was uploaded")
    }

    @Test func tlsWithTheRemotesCACompletesAndStillVerifies() throws {
        let tls = try TLSTestServer.load()
        let directory = "dav/tls-\(UUID().uuidString.prefix(8))"
        let config =
            Self.config + """
                [remote private-ca]
                url = \(tls.url)/\(directory)/
                protocol = put
                ca_file = \(tls.caFile)

                [remote wrong-name]
                url = \(tls.wrongNameURL)/\(directory)/
                protocol = put
                ca_file = \(tls.caFile)

                [remote other-ca]
                url = \(tls.url)/\(directory)/other/
                protocol = put
                ca_file = /etc/ssl/certs/ca-certificates.crt

                """
        let daemon = try startDaemon(config)
        let file = try makeFile("tls.bin", size: 3 << 20)
        let good = try daemon.add([file.path], to: "private-ca:sub/")[0]
        let done = try daemon.waitFor(good, timeout: 30)
        #expect(done.state == .completed, "\(String(describing: done.error))")
        #expect(done.attempts == 1)
        #expect(try Command.sha256("\(tls.root)/\(directory)/sub/\(file.name)") == Command.sha256(file.path))
        // The CA file adds trust; it does not turn verification off: the name must match, and a
        // bundle without the CA is refused.
        for remote in ["wrong-name", "other-ca"] {
            let id = try daemon.add([file.path], to: "\(remote):\(remote)/")[0]
            let job = try daemon.waitFor(id, timeout: 30)
            #expect(job.state == .failed, "\(remote)")
            #expect(job.error?.code == "tls", "\(remote): \(String(describing: job.error))")
            #expect(
                job.error?.message.lowercased().contains("certificate") == true,
                "\(remote): \(String(describing: job.error))")
            #expect(job.attempts == 1, "\(remote)")
        }
    }

    /// Uploads speak HTTP/1.1 even to a server that offers HTTP/2, unless the remote says
    /// `http2 = true`: nginx's access log shows the protocol of each request.
    @Test func uploadsUseHTTP1UnlessTheRemoteAllowsHTTP2() throws {
        let tls = try TLSTestServer.load()
        let directory = "dav/h2-\(UUID().uuidString.prefix(8))"
        let config =
            Self.config + """
                [remote offered]
                url = \(tls.http2URL)/\(directory)/one/
                protocol = put
                ca_file = \(tls.caFile)

                [remote allowed]
                url = \(tls.http2URL)/\(directory)/two/
                protocol = put
                ca_file = \(tls.caFile)
                http2 = true

                """
        let daemon = try startDaemon(config)
        let file = try makeFile("h2.bin", size: 1 << 20)
        // Allowed first: libcurl may send a later request over an open HTTP/1.1 connection, but
        // not one that must be HTTP/1.1 over an HTTP/2 connection.
        for remote in ["allowed", "offered"] {
            let id = try daemon.add([file.path], to: "\(remote):")[0]
            let done = try daemon.waitFor(id, timeout: 30)
            #expect(done.state == .completed, "\(remote): \(String(describing: done.error))")
        }
        for folder in ["one", "two"] {
            #expect(try Command.sha256("\(tls.root)/\(directory)/\(folder)/\(file.name)") == Command.sha256(file.path))
        }
        let log = try String(contentsOfFile: tls.accessLog, encoding: .utf8).split(separator: "\n")
        let one = log.filter { $0.contains("PUT /\(directory)/one/\(file.name) ") }
        let two = log.filter { $0.contains("PUT /\(directory)/two/\(file.name) ") }
        #expect(one.count == 1 && one.allSatisfy { $0.contains(" HTTP/1.1\"") }, "\(one)")
        #expect(two.count == 1 && two.allSatisfy { $0.contains(" HTTP/2.0\"") }, "\(two)")
    }
}
