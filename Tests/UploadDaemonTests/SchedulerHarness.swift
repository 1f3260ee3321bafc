import Foundation
import Testing
import UploadCore

@testable import UploadDaemon

/// A scheduler wired to a real journal, snapshot cache and event hub in a temp directory, with a
/// `FakeTransfer` in place of the network.
final class SchedulerHarness: Sendable {
    /// One libcurl client for every test: the fake never uses it, but the scheduler needs one.
    static let http: HTTPClient = {
        HTTPClient.globalInit()
        return HTTPClient()
    }()

    let directory: TemporaryDirectory
    let journal: Journal
    let replay: Journal.Replay
    let snapshots: SnapshotCache
    let events = EventHub()
    let fake: FakeTransfer
    let scheduler: Scheduler

    init(
        config: DaemonConfig = DaemonConfig(), fake: FakeTransfer = FakeTransfer(), reusing: TemporaryDirectory? = nil,
        start: Bool = true
    ) async throws {
        directory = try reusing ?? TemporaryDirectory("uploadd-scheduler")
        try FileOps.makeDirectory(directory.path + "/state")
        (journal, replay) = try Journal.open(directory: directory.path + "/state")
        snapshots = SnapshotCache(cacheDirectory: directory.path + "/cache")
        try snapshots.prepare()
        self.fake = fake
        scheduler = Scheduler(
            replayed: replay.state, config: config,
            dependencies: Scheduler.Dependencies(
                journal: journal, http: Self.http, snapshots: snapshots, events: events, environment: [:],
                makeTransfer: { _, _ in fake }))
        if start { await scheduler.start() }
    }

    static func config(transfers: Int = 2, attempts: Int = 8) -> DaemonConfig {
        var config = DaemonConfig()
        config.maxTransfers = transfers
        config.retry.baseDelay = .milliseconds(10)
        config.retry.maxDelay = .milliseconds(50)
        config.retry.maxAttempts = attempts
        return config
    }

    /// Adds a real temp file named `name`, to a `file://` destination in the temp directory.
    func add(_ name: String, priority: Int = 0, token: String? = nil, snapshot: SnapshotMode? = nil) async throws
        -> JobID
    {
        let path = try directory.write("src/" + name, "the content of \(name)\n")
        var params = AddParams(source: path, destination: "file://\(directory.path)/out/")
        params.priority = priority
        params.clientToken = token
        params.snapshot = snapshot
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

    func snapshotExists(_ id: JobID) -> Bool { FileManager.default.fileExists(atPath: snapshots.path(for: id)) }

    func stop() async {
        await scheduler.shutdown()
        journal.close()
    }
}
