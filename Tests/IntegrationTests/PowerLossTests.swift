import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import UploadCore
import UploadWire

/// Power cuts, simulated: uploadd runs with its state and cache on contrib/test/lossyfs.py, which
/// forgets what a real file system may forget when the power goes (writes and directory entries
/// not yet made durable with fsync, or a seeded random subset of them). At random moments the
/// daemon is killed, the power cut, the file system mounted again and the daemon started; then
/// everything it acknowledged must still be there: every add, every state it announced, every
/// cached copy, and no job it announced as completed runs again.
///
/// CI: 50 cuts. `UPLOADD_SOAK=1`: 1,000, by hand. `UPLOADD_TEST_SEED=N` repeats a run.
@Suite(
    .serialized,
    .enabled(
        if: LossyMount.isAvailable, "needs root, /dev/fuse and python3-pyfuse3 (contrib/scripts/install-deps --test)"))
final class PowerLossTests {
    enum Kind: String, CaseIterable {
        case file, put, post, tus, chunked, s3
    }

    /// What the daemon acknowledged about a job: its add, and the last state it announced.
    struct Acknowledged {
        var kind: Kind
        var name: String
        var path: String
        var state: JobState = .queued
        /// Successful PUTs of its name nginx had logged when its completion was announced.
        var putsAtCompletion: Int?
        /// What an acknowledged `clear` said of it: it must never come back.
        var cleared: JobInfo?
        /// A clear was sent and the daemon died before it answered: it may have taken effect.
        var inUnansweredClear = false
        /// It was gone after a restart that followed an unanswered clear (so it was finished).
        var vanished = false
        var isGone: Bool { cleared != nil || vanished }
        /// The pack its copy went into (`snapshots/pack-FIRST`) and the pack's size, when it was
        /// added with other small files.
        var pack: (first: JobID, bytes: Int)?
    }

    let servers: TestServers
    let s3: S3TestServer
    let root: URL
    let files: URL
    let run = "power-\(UUID().uuidString.prefix(8).lowercased())"
    let soak = ProcessInfo.processInfo.environment["UPLOADD_SOAK"] == "1"

    init() throws {
        servers = try TestServers.load()
        s3 = try #require(servers.s3, "the S3 test server is not running")
        root = try TestPaths.scratch("power")
        files = root.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
    }

    func config() throws -> String {
        let secret = files.appendingPathComponent("s3-secret").path
        try "\(s3.secretKey)\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        return """
            [daemon]
            transfers = 4
            rate_limit = 4M
            retry_base_delay = 100
            retry_max_delay = 1
            stall_timeout = 10
            compact_after = 20

            [remote powers3]
            protocol = s3
            url = s3://\(s3.bucket)/itest/\(run)/
            endpoint = \(s3.endpoint)
            region = \(s3.region)
            access_key_id = \(s3.accessKey)
            secret_access_key_file = \(secret)
            multipart_threshold = 1M
            """
    }

    func destination(_ kind: Kind) -> [String] {
        switch kind {
        case .file: return ["--to", "file://\(root.path)/out/"]
        case .put: return ["--to", "\(servers.nginxURL)/dav/\(run)/", "--protocol", "put"]
        case .post:
            return [
                "--to", "\(servers.receiverURL)/form", "--protocol", "post", "--header", servers.receiverAuthorization,
            ]
        case .tus: return ["--to", servers.tusURL, "--protocol", "tus", "--chunk-size", "256K"]
        case .chunked:
            return ["--to", "\(servers.receiverURL)/upload", "--protocol", "chunked", "--chunk-size", "256K"]
                + servers.receiverTokenField
        case .s3: return ["--to", "powers3:", "--chunk-size", "5M"]
        }
    }

    /// Successful PUTs of `name` in nginx's access log.
    func successfulPuts(of name: String) -> Int {
        let log = URL(fileURLWithPath: servers.nginxRoot).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("logs/nginx-access.log").path
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        return lines.filter {
            $0.contains("\"PUT /dav/\(run)/\(name) ") && ($0.contains("\" 201 ") || $0.contains("\" 204 "))
        }
        .count
    }

    @Test func everyAcknowledgedJobSurvivesPowerCuts() throws {
        let cuts = soak ? 1000 : 50
        let seed =
            ProcessInfo.processInfo.environment["UPLOADD_TEST_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("power loss: seed \(seed) (UPLOADD_TEST_SEED=\(seed) repeats it), \(cuts) cuts")
        var random = SeededRandom(seed: seed)
        let mount = try LossyMount(root: root)
        let daemon = try DaemonProcess(name: "power", config: try config())
        daemon.dataRoot = mount.mountpoint
        var acknowledged: [JobID: Acknowledged] = [:]
        var fileCount = 0
        var damageReports = 0
        var cutsAtACompaction = 0
        var upgradeChecked = false
        var highestID: UInt64 = 0
        defer {
            daemon.crash()
            mount.unmount()
        }

        // The first start upgrades a journal of uploadd 0.2 (format 2) in place: the rewrite is
        // among the moments the power may go. Its jobs' files are long gone: they fail, unchecked.
        let golden = TestPaths.repository.appendingPathComponent("Tests/Fixtures/journals/format2/compacted/journal")
        let state = mount.backing.appendingPathComponent("state")
        try FileManager.default.createDirectory(
            at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(at: golden, to: state.appendingPathComponent("journal"))
        let inherited: UInt64 = 26  // the golden journal's next ID: IDs below it are its own jobs
        highestID = inherited - 1
        // First the power goes the moment the rewritten journal is renamed into place, before
        // anything else is written: nothing later can make its data durable by the way.
        try mount.mount(seed: UInt64.random(in: 1...UInt64(UInt32.max), using: &random))
        daemon.extraEnvironment["UPLOADD_TEST_CRASH_AT"] = "journal-rewritten"
        #expect(throws: TestFailure.self, "uploadd stops at its crash point") { try daemon.start() }
        #expect(daemon.diedOfSIGKILL, "uploadd killed itself at the rewrite")
        daemon.crash()
        try mount.cut()

        for cut in 1...cuts {
            try mount.mount(seed: UInt64.random(in: 1...UInt64(UInt32.max), using: &random))
            // Every fourth lifetime ends the moment a compaction's journal is renamed into place:
            // the classic rename-without-data failure.
            let armed = cut % 4 == 0
            daemon.extraEnvironment["UPLOADD_TEST_CRASH_AT"] = armed ? "journal-compacted" : nil
            do {
                try daemon.start()
                if !upgradeChecked {
                    let ids = try daemon.ctlJSON(JobList.self, ["list"]).jobs.map(\.id.rawValue)
                    #expect(!ids.isEmpty && ids.allSatisfy { $0 < inherited }, "the 0.2 journal was read: \(ids)")
                    upgradeChecked = true
                }
                let restart = try daemon.ctlJSON(DaemonStatus.self, ["status"])
                if restart.journalDamage != nil { damageReports += 1 }
                try checkSurvivors(daemon, &acknowledged, cut: cut, seed: seed)
            } catch  where armed && daemon.diedOfSIGKILL {
                // It compacted and died there: while starting (its first commit), or once ready,
                // when an end of the jobs it went on with came before the checks were done. The
                // checks run after the next start.
                cutsAtACompaction += 1
                daemon.crash()
                try mount.cut()
                continue
            }

            let events = EventListener(socket: daemon.socket)
            // Some adds, and now and then a pause or a cancel of a job the daemon acknowledged.
            /// Adds files in one `uploadctl add`; false when the daemon did not acknowledge them all.
            /// uploadctl sends the first file alone and the rest together: small ones then share a pack.
            func add(_ kind: Kind, sizes: [Int]) throws -> Bool {
                var added: [(name: String, path: String)] = []
                for size in sizes {
                    fileCount += 1
                    let name = "\(run)-\(fileCount)-\(kind.rawValue).bin"
                    let path = files.appendingPathComponent(name).path
                    try makeRandomFile(at: path, size: size)
                    added.append((name, path))
                }
                let result = try daemon.ctl(["add"] + added.map(\.path) + destination(kind))
                // The IDs printed were acknowledged, even when the daemon died before the rest.
                let ids = result.stdout.split(separator: "\n").compactMap { JobID(String($0)) }
                let packBytes = sizes.dropFirst().reduce(0, +)
                for (index, id) in ids.enumerated() {
                    // IDs are never given twice, even to a job added after every other was cleared.
                    #expect(
                        id.rawValue > highestID,
                        "after cut \(cut) (seed \(seed)): job ID \(id) given after \(highestID)")
                    highestID = max(highestID, id.rawValue)
                    var upload = Acknowledged(kind: kind, name: added[index].name, path: added[index].path)
                    if index > 0 && sizes.count > 2 { upload.pack = (ids[1], packBytes) }
                    acknowledged[id] = upload
                }
                return result.status == 0 && ids.count == sizes.count
            }
            func add(_ kind: Kind, size: Int) throws -> Bool { try add(kind, sizes: [size]) }
            /// Clears the finished jobs; false when the daemon died before it answered.
            func clear() -> Bool {
                guard let reply = try? daemon.ctlJSON(JobList.self, ["clear"]) else {
                    // No answer (the daemon died at its crash point): done or not, as may be.
                    for id in acknowledged.keys where !acknowledged[id]!.isGone {
                        acknowledged[id]!.inUnansweredClear = true
                    }
                    return false
                }
                for job in reply.jobs {
                    guard var upload = acknowledged[job.id] else { continue }
                    if job.state == .completed, upload.kind == .put, upload.putsAtCompletion == nil {
                        upload.putsAtCompletion = successfulPuts(of: upload.name)
                    }
                    upload.cleared = job
                    upload.state = job.state
                    acknowledged[job.id] = upload
                }
                return true
            }

            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let kind = Kind.allCases.randomElement(using: &random)!
                _ = try add(kind, size: [1, 40_000, 600_000, 3 << 20].randomElement(using: &random)!)
            }
            // Now and then small files in one add: the power goes while their pack is made too.
            if Int.random(in: 0..<3, using: &random) == 0 {
                let kind: Kind = Bool.random(using: &random) ? .put : .file
                _ = try add(kind, sizes: (0..<4).map { _ in Int.random(in: 1...90_000, using: &random) })
            }
            let open = acknowledged.filter { !$0.value.state.isTerminal && $0.value.state != .paused }.keys.sorted()
            if let id = open.randomElement(using: &random), Int.random(in: 0..<4, using: &random) == 0 {
                let verb = Bool.random(using: &random) ? "pause" : "cancel"
                if try daemon.ctl([verb, "\(id)"]).status == 0 {
                    acknowledged[id]?.state = verb == "pause" ? .paused : .canceled
                }
            }
            // Now and then a clear: finished jobs go, and with fewer live jobs the journal is
            // compacted sooner, so compactions are among the moments the power goes.
            if Int.random(in: 0..<3, using: &random) == 0 {
                _ = clear()
            }
            Thread.sleep(forTimeInterval: Double.random(in: 0...0.8, using: &random))
            // An armed lifetime goes on until it compacts (and dies there): tiny adds, each
            // cleared once done, write records until the journal is worth compacting. So every
            // armed lifetime, not a lucky few, ends at that moment.
            if armed {
                for _ in 0..<80 {
                    guard try add(.file, size: 1) else { break }
                    Thread.sleep(forTimeInterval: 0.02)
                    guard clear() else { break }
                }
            }
            if armed && daemon.diedOfSIGKILL { cutsAtACompaction += 1 }

            // The power goes: the process dies with it, then the file system forgets.
            daemon.crash()
            for (id, state) in events.stop() {
                guard var job = acknowledged[id], job.cleared == nil, state.isTerminal || state == .paused else {
                    continue
                }
                if job.state.isTerminal { continue }
                job.state = state
                if state == .completed && job.kind == .put { job.putsAtCompletion = successfulPuts(of: job.name) }
                acknowledged[id] = job
            }
            try mount.cut()
        }

        // Power stays on: every job not canceled completes, once, with its bytes.
        try mount.mount(seed: 1, mode: "all")
        daemon.extraEnvironment["UPLOADD_TEST_CRASH_AT"] = nil
        try daemon.start()
        try checkSurvivors(daemon, &acknowledged, cut: cuts + 1, seed: seed)
        _ = try daemon.ctl(["resume", "--all"])
        let open = acknowledged.filter { $0.value.state != .canceled && !$0.value.isGone }.keys.sorted()
        if !open.isEmpty {
            let wait = try daemon.ctl(["wait"] + open.map(\.description) + ["--timeout", "300"], timeout: 320)
            #expect(wait.status == 0, "\(wait)")
        }
        for id in open {
            let upload = acknowledged[id]!
            let job = try daemon.job(id)
            #expect(
                job.state == .completed, "job \(id) (\(upload.name)): \(job.state) \(String(describing: job.error))")
            if let puts = upload.putsAtCompletion {
                #expect(
                    successfulPuts(of: upload.name) == puts,
                    "job \(id) was uploaded again after its completion was announced")
            }
            guard job.state == .completed else { continue }
            if let stored = try storedHash(upload, resultURL: job.result?.url) {
                #expect(stored == (try Command.sha256(upload.path)), "job \(id) (\(upload.name)) differs on its server")
            } else {
                Issue.record("job \(id) (\(upload.name)) completed, and is not on its server")
            }
        }
        for (id, upload) in acknowledged.sorted(by: { $0.key < $1.key }) {
            if upload.vanished, upload.state != .canceled, [.file, .put, .s3].contains(upload.kind) {
                // Gone in a clear that was never answered: it had finished, so it is on its server.
                let stored = try storedHash(upload, resultURL: nil)
                #expect(
                    stored == (try Command.sha256(upload.path)),
                    "job \(id) (\(upload.name)) vanished, and is not on its server")
                continue
            }
            guard let job = upload.cleared, job.state == .completed else { continue }
            if let puts = upload.putsAtCompletion {
                #expect(successfulPuts(of: upload.name) == puts, "job \(id) was uploaded again after it was cleared")
            }
            if let stored = try storedHash(upload, resultURL: job.result?.url) {
                #expect(
                    stored == (try Command.sha256(upload.path)),
                    "cleared job \(id) (\(upload.name)) differs on its server")
            } else {
                Issue.record("cleared job \(id) (\(upload.name)) is not on its server")
            }
        }
        // Compactions ran between the cuts (compact_after = 20), and armed lifetimes ended at one.
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        let compactions = log.components(separatedBy: "journal: compacted").count - 1
        #expect(
            compactions + cutsAtACompaction >= cuts / 5,
            "only \(compactions + cutsAtACompaction) compactions in \(cuts) cuts")
        #expect(cutsAtACompaction >= cuts / 10, "only \(cutsAtACompaction) cuts at a compaction in \(cuts)")
        print(
            "power loss: survived \(cuts) power cuts (seed \(seed)); \(compactions) compactions,"
                + " \(cutsAtACompaction) cut the moment one was renamed into place;"
                + " \(acknowledged.count) jobs acknowledged, \(acknowledged.values.filter { $0.cleared != nil }.count) cleared"
                + " (\(acknowledged.values.filter(\.vanished).count) more in clears never answered),"
                + " \(acknowledged.values.filter { $0.state == .completed }.count) completions announced before a cut;"
                + " journal damage handled at \(damageReports) restarts")
    }

    /// After a restart: every acknowledged job is there, in the state it was announced in or a
    /// later one, and a job that still needs its cached copy has all of it.
    func checkSurvivors(_ daemon: DaemonProcess, _ acknowledged: inout [JobID: Acknowledged], cut: Int, seed: UInt64)
        throws
    {
        let listed = Dictionary(
            uniqueKeysWithValues: try daemon.ctlJSON(JobList.self, ["list"]).jobs.map { ($0.id, $0) })
        for (id, upload) in acknowledged.sorted(by: { $0.key < $1.key }) {
            if upload.isGone {
                #expect(listed[id] == nil, "after cut \(cut) (seed \(seed)): job \(id) was cleared, and is back")
                continue
            }
            guard let job = listed[id] else {
                if upload.inUnansweredClear {
                    acknowledged[id]?.vanished = true
                    continue
                }
                Issue.record("after cut \(cut) (seed \(seed)): acknowledged job \(id) (\(upload.name)) is gone")
                continue
            }
            acknowledged[id]?.inUnansweredClear = false
            switch upload.state {
            case .completed, .canceled, .failed:
                #expect(
                    job.state == upload.state,
                    "after cut \(cut) (seed \(seed)): job \(id) was announced \(upload.state), is \(job.state)")
            case .paused:
                #expect(
                    job.state == .paused || job.state == .canceled,
                    "after cut \(cut) (seed \(seed)): paused job \(id) is \(job.state)")
            case .queued, .running:
                break
            }
            if !job.state.isTerminal, job.snapshot == "copy" || job.snapshot == "reflink" {
                // A packed copy is in its pack, with the other small files of its add.
                let copy = daemon.cacheDirectory + "/snapshots/" + (upload.pack.map { "pack-\($0.first)" } ?? "\(id)")
                let expected = upload.pack.map { Int64($0.bytes) } ?? job.bytesTotal
                var info = stat()
                let size = stat(copy, &info) == 0 ? Int64(info.st_size) : -1
                // The job runs from the moment the daemon is ready: it may have finished since
                // the list, and a finished job's copy goes once its end is durable.
                if size != expected, try daemon.job(id).state.isTerminal { continue }
                #expect(
                    size == expected,
                    "after cut \(cut) (seed \(seed)): job \(id)'s cached copy \(copy) is \(size) of \(expected) bytes")
            }
        }
    }

    /// The SHA-256 of the upload as its server stores it; post, tus and chunked need the URL
    /// the server answered with.
    func storedHash(_ upload: Acknowledged, resultURL: String?) throws -> String? {
        func local(_ path: String) throws -> String? {
            FileManager.default.fileExists(atPath: path) ? try Command.sha256(path) : nil
        }
        let resultName = resultURL.map { ($0 as NSString).lastPathComponent }
        switch upload.kind {
        case .file: return try local("\(root.path)/out/\(upload.name)")
        case .put: return try local("\(servers.nginxRoot)/dav/\(run)/\(upload.name)")
        case .post: return try resultName.flatMap { try local("\(servers.receiverDirectory)/\($0)") }
        case .tus: return try resultName.flatMap { try local("\(servers.tusDirectory)/\($0)") }
        case .chunked: return try resultName.flatMap { try local("\(servers.receiverDirectory)/\($0)") }
        case .s3: return try s3.sha256(of: "itest/\(run)/\(upload.name)")
        }
    }
}

/// The `job.state` events of one daemon lifetime: what it announced (after making it durable).
final class EventListener: @unchecked Sendable {
    // Invariant: `states` is behind its mutex; the client is used by the reading thread only.
    private let states = Mutex<[(JobID, JobState)]>([])
    private let done = DispatchSemaphore(value: 0)
    private let client: RawClient?

    init(socket: String) {
        client = try? RawClient(socket)
        guard let client else {
            done.signal()
            return
        }
        client.send(line: #"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{}}"#)
        let thread = Thread { self.read(client) }
        thread.start()
    }

    private func read(_ client: RawClient) {
        defer { done.signal() }
        while true {
            guard case .line(let bytes) = client.readLine(timeout: 120) else { return }
            guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                object["method"] as? String == "job.state", let params = object["params"] as? [String: Any],
                let id = params["id"] as? Int, let state = (params["state"] as? String).flatMap(JobState.init)
            else { continue }
            states.withLock { $0.append((JobID(UInt64(id)), state)) }
        }
    }

    /// Once the daemon is gone: the last state announced for each job.
    func stop() -> [JobID: JobState] {
        done.wait()
        var last: [JobID: JobState] = [:]
        for (id, state) in states.withLock({ $0 }) { last[id] = state }
        return last
    }
}

/// The power cuts fall on every protocol uploadd has: one added to `UploadProtocol` joins them or
/// fails here.
@Suite struct PowerLossProtocols {
    @Test func everyProtocolTakesPowerCuts() {
        let expected = Set(UploadProtocol.allCases.map(\.rawValue)).subtracting(["auto"])
        #expect(Set(PowerLossTests.Kind.allCases.map(\.rawValue)) == expected)
    }
}
