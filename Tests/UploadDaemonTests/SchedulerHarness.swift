import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP
@testable import UploadPlatform

/// A scheduler wired to a real journal, snapshot cache and event hub in a temp directory, with a
/// `FakeTransfer` in place of the network.
final class SchedulerHarness: Sendable {
    /// The scheduler's HTTP seam: `FakeTransfer` stands in for every transfer, so nothing may
    /// reach the network (no libcurl is started).
    static let http = NoHTTP()

    let directory: TemporaryDirectory
    let journal: Journal
    let replay: Journal.Replay
    let snapshots: SnapshotCache
    let events = EventHub()
    let fake: FakeTransfer
    let scheduler: Scheduler

    init(
        config: DaemonConfig = DaemonConfig(), fake: FakeTransfer = FakeTransfer(), reusing: TemporaryDirectory? = nil,
        start: Bool = true, crashed: Bool = false, crashSuspects: [JobID] = [],
        reachability: @escaping @Sendable (String, Bool) async -> Reachability.Answer = { _, _ in .reachable },
        clock: TestClock? = nil, preparationSteps: [String: any PreparationStep] = [:],
        smallFilesRunWider: Bool = false,
        startRecordDelay: Duration = .milliseconds(100)
    ) async throws {
        // As if the config set `transfers`: the tests count on the exact limit unless they ask.
        var config = config
        config.smallFilesRunWider = smallFilesRunWider
        directory = try reusing ?? TemporaryDirectory("uploadd-scheduler")
        try FileOps.makeDirectory(directory.path + "/state")
        (journal, replay) = try Journal.open(directory: directory.path + "/state")
        snapshots = SnapshotCache(cacheDirectory: directory.path + "/cache")
        try snapshots.prepare()
        self.fake = fake
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        scheduler = Scheduler(
            replayed: replay.state, config: config,
            dependencies: Scheduler.Dependencies(
                journal: journal, http: Self.http, snapshots: snapshots, events: events, environment: [:],
                reachability: reachability, makeTransfer: { _, _ in fake }, now: now,
                preparationSteps: preparationSteps, startRecordDelay: startRecordDelay),
            crashed: crashed, crashSuspects: crashSuspects)
        if start { await scheduler.start() }
    }

    static func config(transfers: Int = 2, attempts: Int = 8) -> DaemonConfig {
        var config = DaemonConfig()
        config.maxTransfers = transfers
        config.retry.baseDelay = .milliseconds(10)
        config.retry.maxDelay = .milliseconds(50)
        config.retry.maxAttempts = attempts
        config.retry.maxDuration = .zero
        return config
    }

    /// Adds a real temp file named `name`, to a `file://` destination in the temp directory.
    func add(
        _ name: String, priority: Int = 0, token: String? = nil, snapshot: SnapshotMode? = nil,
        destination: String? = nil,
        protocol uploadProtocol: UploadProtocol? = nil, image: String? = nil, size: Int? = nil
    ) async throws -> JobID {
        let path = try directory.write(
            "src/" + name, size.map { String(repeating: "x", count: $0) } ?? "the content of \(name)\n")
        var params = AddParams(source: path, destination: destination ?? "file://\(directory.path)/out/")
        params.protocol = uploadProtocol
        params.priority = priority
        params.clientToken = token
        params.snapshot = snapshot
        params.image = image
        return try await scheduler.add(params).id
    }

    func job(_ id: JobID) async -> JobInfo? { try? await scheduler.get(id) }
    func state(_ id: JobID) async -> JobState? { await job(id)?.state }

    /// Waits (up to 5 s) for the job to reach `state`.
    func wait(_ id: JobID, _ state: JobState, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        let reached = await eventually { await self.state(id) == state }
        if !reached {
            Issue.record(
                "job \(id) is \(await self.state(id).map(\.rawValue) ?? "gone"), not \(state.rawValue)",
                sourceLocation: sourceLocation)
        }
        return reached
    }

    func waitForStarts(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        let reached = await eventually { self.fake.started.count >= count }
        if !reached { Issue.record("\(fake.started) started, wanted \(count)", sourceLocation: sourceLocation) }
        return reached
    }

    /// Waits (up to 20 s) until the fake is inside `upload` for `name`: the job's state turns
    /// `running` a moment before its transfer is called.
    func waitUntilUploading(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        let reached = await eventually { self.fake.snapshot.running.contains(name) }
        if !reached { Issue.record("\(name) is not uploading: \(fake.snapshot)", sourceLocation: sourceLocation) }
        return reached
    }

    func perform(_ command: JobCommand, _ id: JobID) async throws -> JobInfo? {
        try await scheduler.perform(command, selection: JobSelection(id: id)).first
    }

    /// Whether job `id`'s copy is in the cache, once the deletions asked for so far are done.
    func snapshotExists(_ id: JobID) -> Bool {
        snapshots.waitForRemovals()
        return FileManager.default.fileExists(atPath: snapshots.path(for: id))
    }

    func stop() async {
        await scheduler.shutdown()
        journal.close()
    }
}

/// The time of day, which a test can move forward: hours of a retry budget pass at once. Between
/// jumps it runs with the real clock, because the scheduler's timers wait in real time.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}

/// An HTTP seam that fails every request: for tests in which no request may be sent.
struct NoHTTP: HTTPSending {
    func send(_ request: HTTPRequest, meter: ProgressMeter?) async throws -> HTTPResponse {
        Issue.record("a scheduler test sent \(request.method) \(request.url)")
        throw TransferFailure.network("no network in scheduler tests")
    }
}

extension EventHub {
    /// Subscribes a client that has just connected, as the control server's clients do.
    func subscribeNewClient(_ subscriber: Subscriber) {
        let client = ControlClientID.next()
        connect(client)
        subscribe(client, subscriber)
    }
}
