import Dispatch
import Foundation
import Synchronization
import UploadWire

/// A typed, async client of uploadd's control socket, for Swift programs that hand their files to
/// the daemon (the protocol is in contrib/PROTOCOL.md).
///
/// ```swift
/// let client = try UploaddClient()
/// let job = try await client.add(AddParams(source: "/home/me/a.jpg", destination: "nas:2026/"))
/// for try await event in client.events(SubscribeParams(ids: [job.id])) { print(event) }
/// ```
///
/// Requests go one at a time over one connection, on a queue of the client's own (the socket
/// calls block); `events` opens a connection of its own. The socket is found as uploadctl finds
/// it (`SocketLocation`), and only the user's own daemon (or root's) is talked to.
public final class UploaddClient: Sendable {
    public let socketPath: String
    private let queue = DispatchQueue(label: "uploadd-client")
    /// The connection, used only on `queue` (so never by two threads at once).
    private nonisolated(unsafe) var connection: DaemonConnection?

    /// - Parameters:
    ///   - socketPath: the daemon's socket; nil: `$UPLOADD_SOCKET`, `$XDG_RUNTIME_DIR/uploadd/`,
    ///     else `/tmp/uploadd-UID/`, as uploadctl resolves it.
    public init(socketPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.socketPath = SocketLocation.resolve(option: socketPath, environment: environment)
    }

    // MARK: - Calls

    /// Sends one request and decodes its result; throws the daemon's `RPCError` or a
    /// `ControlClientError` (not running, connection lost).
    public func call<Params: Encodable & Sendable, Answer: Decodable & Sendable>(
        _ method: ControlMethod, _ params: Params, as answer: Answer.Type
    ) async throws -> Answer {
        try await onQueue { connection in try connection.call(method, params: params, as: answer) }
    }

    /// Sends several requests as one JSON-RPC batch; each gets its own outcome.
    public func callBatch(_ calls: [(method: ControlMethod, params: JSONValue)]) async throws -> [Result<
        RPCResult, RPCError
    >] {
        let sendable = calls.map { SendableCall(method: $0.method, params: $0.params) }
        return try await onQueue { connection in
            try connection.callBatch(sendable.map { (method: $0.method, params: $0.params) })
        }
    }

    public func hello() async throws -> HelloInfo { try await call(.hello, NoParams(), as: HelloInfo.self) }
    public func status() async throws -> DaemonStatus { try await call(.status, NoParams(), as: DaemonStatus.self) }
    public func reload() async throws -> ReloadResult { try await call(.reload, NoParams(), as: ReloadResult.self) }
    public func limit(_ params: LimitParams) async throws -> LimitResult {
        try await call(.limit, params, as: LimitResult.self)
    }
    public func remotes() async throws -> [RemoteInfo] {
        try await call(.remotes, NoParams(), as: RemoteList.self).remotes
    }
    public func testRemote(named name: String) async throws -> RemoteTestResult {
        try await call(.testRemote, RemoteParams(name: name), as: RemoteTestResult.self)
    }
    /// The watched folders (`[folder NAME]`), their state and what each took.
    public func folders() async throws -> [FolderInfo] {
        try await call(.folders, NoParams(), as: FolderList.self).folders
    }
    /// Pauses (true) or resumes (false) the watched folder `name`: its answer is the folder.
    public func setFolder(named name: String, paused: Bool) async throws -> FolderInfo {
        try await call(paused ? .pauseFolder : .resumeFolder, FolderParams(name: name), as: FolderInfo.self)
    }

    public func add(_ params: AddParams) async throws -> JobInfo { try await call(.add, params, as: JobInfo.self) }

    /// Adds many files, `chunk` a request, as one batch of jobs (the first job starts it, the
    /// others join it): the added jobs, and for each file that was not added, why (with `index`,
    /// its place in `files`, when it went in `sources`). Files whose
    /// params differ only in their source, identity and destination go as one `job.add` of
    /// `sources` each request; to a daemon older than `sources`, one `job.add` per file.
    public func add(_ files: [AddParams], chunk: Int = 500) async throws -> (jobs: [JobInfo], errors: [JobFailure]) {
        var jobs: [JobInfo] = []
        var errors: [JobFailure] = []
        var batch: JobID?
        var rest = files[...]
        var sendsSources = true
        while !rest.isEmpty {
            let take = batch == nil ? 1 : max(1, min(chunk, AddParams.maxSources))
            var slice = Array(rest.prefix(take))
            for index in slice.indices {
                if let batch { slice[index].batch = batch } else { slice[index].newBatch = true }
            }
            let offset = rest.startIndex  // the slice's place in `files`
            rest = rest.dropFirst(take)
            if sendsSources, let requests = Self.sourcesRequests(slice) {
                do {
                    for (run, params) in requests {
                        do {
                            let answer = try await call(.add, params, as: JobList.self)
                            jobs += answer.jobs
                            errors += (answer.errors ?? []).map { failure in
                                var failure = failure
                                failure.index = failure.index.map { offset + run.lowerBound + $0 }
                                return failure
                            }
                            batch = batch ?? answer.jobs.first.map { $0.batch ?? $0.id }
                        } catch let error as RPCError where !error.refusesUnknownKey("sources") {
                            errors += run.map { JobFailure(source: slice[$0].source, index: offset + $0, error: error) }
                        }
                    }
                    continue
                } catch let error as RPCError where error.refusesUnknownKey("sources") {
                    sendsSources = false  // only the first request can meet it: nothing was added
                }
            }
            let outcomes = try await callBatch(
                try slice.map { (method: ControlMethod.add, params: try JSONValue(encoding: $0)) })
            for (params, outcome) in zip(slice, outcomes) {
                switch outcome {
                case .success(let result):
                    let job = try result.decode(JobInfo.self)
                    batch = batch ?? job.batch ?? job.id
                    jobs.append(job)
                case .failure(let error):
                    errors.append(JobFailure(source: params.source, error: error))
                }
            }
        }
        return (jobs, errors)
    }

    /// `job.add` requests of `sources` for `files`, each with the files it names, when they differ
    /// only in their source, identity and destination (no client token: one names one job); nil
    /// otherwise.
    private static func sourcesRequests(_ files: [AddParams]) -> [(files: Range<Int>, params: JSONValue)]? {
        guard var template = files.first, template.clientToken == nil else { return nil }
        let destination = template.destination
        template.source = ""
        template.sourceIdentity = nil
        let sources = files.map { file in
            var shared = file
            shared.source = ""
            shared.sourceIdentity = nil
            shared.destination = destination
            return shared == template ? AddSource(file, requestDestination: destination) : nil
        }
        guard sources.allSatisfy({ $0 != nil }), var object = try? JSONValue(encoding: template).objectValue else {
            return nil
        }
        object["source"] = nil
        object["source_identity"] = nil
        let all = sources.map { $0! }
        guard let sharedBytes = try? JSONValue.object(object).jsonBytes().count else { return nil }
        return AddSource.requests(all, sharedBytes: sharedBytes).map { run in
            var params = object
            params["sources"] = .array(all[run].map(\.json))
            return (run, .object(params))
        }
    }

    public func get(_ id: JobID) async throws -> JobInfo {
        try await call(.get, JobSelection(id: id), as: JobInfo.self)
    }
    /// Every job `params` picks, a page at a time (`DaemonConnection.listJobs`).
    public func list(_ params: ListParams = ListParams()) async throws -> [JobInfo] {
        try await onQueue { connection in try connection.listJobs(params) }
    }
    /// One page: at most `params.limit` jobs after `params.after`, and the `after` of the next.
    public func listPage(_ params: ListParams) async throws -> JobList {
        try await call(.list, params, as: JobList.self)
    }
    public func pause(_ selection: JobSelection) async throws -> JobList { try await act(.pause, selection) }
    public func resume(_ selection: JobSelection) async throws -> JobList { try await act(.resume, selection) }
    public func retry(_ selection: JobSelection) async throws -> JobList { try await act(.retry, selection) }
    public func cancel(_ selection: JobSelection) async throws -> JobList { try await act(.cancel, selection) }
    public func remove(_ selection: JobSelection) async throws -> JobList { try await act(.remove, selection) }
    public func delete(_ selection: JobSelection) async throws -> JobList { try await act(.delete, selection) }
    public func setPriority(_ id: JobID, to priority: Int) async throws -> JobInfo {
        try await call(.priority, PriorityParams(id: id, priority: priority), as: JobInfo.self)
    }
    public func move(_ params: MoveParams) async throws -> JobInfo { try await call(.move, params, as: JobInfo.self) }
    public func clear() async throws -> [JobInfo] { try await call(.clear, NoParams(), as: JobList.self).jobs }

    /// A verb on jobs: always answered as a list (with `errors` for the jobs it could not act on),
    /// whether one job or many were named.
    private func act(_ method: ControlMethod, _ selection: JobSelection) async throws -> JobList {
        var selection = selection
        if selection.isSingle, let id = selection.id { selection = JobSelection(ids: [id]) }
        return try await call(method, selection, as: JobList.self)
    }

    // MARK: - Events

    /// What `events` yields.
    public enum Event: Sendable, Equatable {
        /// A job changed (any transition or change), or, with `snapshot`, its state when the
        /// subscription began.
        case state(JobInfo)
        case progress(JobProgressEvent)
        case removed(JobID)
    }

    /// The daemon's events, on a connection of their own, until the task iterating them is
    /// cancelled or the daemon goes. Views older than one already yielded for the same job (by
    /// `revision`) are dropped, so a consumer never goes back in time. With `snapshot`, the jobs
    /// the filters match come first. Ends with `SubscriptionOverflow` if the daemon dropped us for
    /// reading too slowly: subscribe again with `snapshot` (`wait` does so by itself). A consumer
    /// that falls `eventBuffer` events behind holds the reading back, as if it read the socket
    /// itself: the daemon then drops it as too slow, and memory stays bounded on both sides.
    /// `jobFields` is not sent: each `Event.state` carries a whole `JobInfo`.
    public func events(_ params: SubscribeParams = SubscribeParams()) -> AsyncThrowingStream<Event, any Error> {
        var params = params
        params.jobFields = nil
        return subscription(params) { (delivery) -> Event? in
            guard case .event(let event) = delivery else { return nil }
            return event
        }
    }

    /// Waits until every job named has ended (completed, failed, canceled, or removed) and returns
    /// their last views (a removed job's is its last one seen, if any); throws `RPCError` (job not
    /// found) for an ID the daemon does not know when waiting begins, `CancellationError` past
    /// `timeout`. Hears only of ends (and `queued`), and subscribes again by itself if it falls
    /// behind (`SubscriptionOverflow`), however many jobs.
    public func wait(for ids: [JobID], timeout: Duration? = nil) async throws -> [JobInfo] {
        try await withThrowingTaskGroup(of: [JobInfo]?.self) { group in
            group.addTask { try await self.waitWithoutTimeout(ids) }
            if let timeout {
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let jobs = first else { throw CancellationError() }
            return jobs
        }
    }

    /// A waiter hears of ends, and of `queued` (a job retried after it ended goes on): each
    /// job's "running" costs the daemon and the client an event otherwise.
    static let waitedStates: [JobState] = JobState.allCases.filter(\.isTerminal) + [.queued]

    private func waitWithoutTimeout(_ ids: [JobID]) async throws -> [JobInfo] {
        var pending = Set(ids)
        var last: [JobID: JobInfo] = [:]
        var states: [JobState]? = Self.waitedStates
        var firstSnapshot = true
        while !pending.isEmpty {
            try Task.checkCancellation()
            let params = SubscribeParams(
                ids: ids.filter { pending.contains($0) }, kinds: [.state, .removed], states: states, snapshot: true)
            do {
                for try await delivery in deliveries(params) {
                    switch delivery {
                    case .snapshotListed(let listed):
                        // Not listed: unknown at first; removed while we were cut off, later.
                        if firstSnapshot, let missing = ids.first(where: { !listed.contains($0) }) {
                            throw RPCError.jobNotFound(missing)
                        }
                        firstSnapshot = false
                        pending.formIntersection(listed)
                    case .event(.state(let job)):
                        last[job.id] = job
                        if job.state.isTerminal { pending.remove(job.id) }
                    case .event(.removed(let id)):
                        pending.remove(id)
                    case .event(.progress):
                        break
                    }
                    if pending.isEmpty && !firstSnapshot { break }
                }
            } catch is SubscriptionOverflow {
                continue  // fell behind: again, with a snapshot of the jobs still pending
            } catch let refusal as RPCError where states != nil && refusal.refusesUnknownKey("states") {
                states = nil  // an older daemon: every state
                continue
            }
        }
        return ids.compactMap { last[$0] }
    }

    /// A subscription's events, and which jobs its snapshot listed (before any event).
    private func deliveries(_ params: SubscribeParams) -> AsyncThrowingStream<EventReader.Delivery, any Error> {
        subscription(params) { $0 }
    }

    /// One subscription on a reader of its own, as the stream of what `pick` keeps of it.
    private func subscription<Element: Sendable>(
        _ params: SubscribeParams, keeping pick: @escaping @Sendable (EventReader.Delivery) -> Element?
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(Self.eventBuffer)) { continuation in
            let reader = EventReader(socketPath: socketPath, params: params) { delivery in
                guard let element = pick(delivery) else { return true }
                if case .dropped = continuation.yield(element) { return false }
                return true
            } finish: { error in
                continuation.finish(throwing: error)
            }
            continuation.onTermination = { _ in reader.stop() }
            reader.start()
        }
    }

    /// Events a subscription holds for a consumer that has not taken them yet.
    public static let eventBuffer = 4096

    // MARK: - The queue

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable (DaemonConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    let connection = try self.connection ?? DaemonConnection(socketPath: self.socketPath)
                    self.connection = connection
                    do {
                        continuation.resume(returning: try body(connection))
                    } catch let error as ControlClientError {
                        self.connection = nil  // lost: the next call connects again
                        continuation.resume(throwing: error)
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// The daemon stopped sending events to a subscriber that read too slowly (`events.overflow`).
public struct SubscriptionOverflow: Error, Sendable, Equatable {
    public var message: String
}

private struct SendableCall: Sendable {
    var method: ControlMethod
    var params: JSONValue
}

/// Reads one subscription on a thread of its own (the socket calls block).
private final class EventReader: Sendable {
    /// What a reader hands on: events, and (with `snapshot`) which jobs the snapshot listed,
    /// after their views and before any later event: a job missing from it does not exist.
    enum Delivery: Sendable {
        case event(UploaddClient.Event)
        case snapshotListed(Set<JobID>)
    }

    let socketPath: String
    let params: SubscribeParams
    /// Hands a delivery on; false when the consumer's buffer is full (it is offered again later).
    private let deliver: @Sendable (Delivery) -> Bool
    /// Called once, last: nil when stopped, else why the subscription ended.
    private let finish: @Sendable ((any Error)?) -> Void
    private let stopped = Mutex(false)

    init(
        socketPath: String, params: SubscribeParams, deliver: @escaping @Sendable (Delivery) -> Bool,
        finish: @escaping @Sendable ((any Error)?) -> Void
    ) {
        self.socketPath = socketPath
        self.params = params
        self.deliver = deliver
        self.finish = finish
    }

    func stop() { stopped.withLock { $0 = true } }
    private var isStopped: Bool { stopped.withLock { $0 } }

    /// Hands `delivery` on, waiting while the consumer is a full buffer behind: the socket is not
    /// read meanwhile, so a slow consumer slows the daemon's sending, not the client's memory.
    private func hand(_ delivery: Delivery) {
        while !deliver(delivery) && !isStopped { usleep(2_000) }
    }

    func start() {
        let thread = Thread { [self] in finish(run()) }
        thread.name = "uploadd-client-events"
        thread.start()
    }

    /// Reads until stopped (nil) or until the subscription ends (why).
    private func run() -> (any Error)? {
        var newest: [JobID: UInt64] = [:]
        /// Hands on a view unless a newer one of the same job was handed on already.
        func yield(_ event: UploaddClient.Event, id: JobID, revision: UInt64) {
            if let seen = newest[id], revision < seen { return }
            newest[id] = revision
            hand(.event(event))
        }
        do {
            let connection = try DaemonConnection(socketPath: socketPath)
            let answer = try connection.call(.subscribe, params: params, as: SnapshotAnswer.self)
            // Events that came with the answer are older or newer than the snapshot: revisions sort it out.
            for job in answer.jobs ?? [] { yield(.state(job), id: job.id, revision: job.revision) }
            if let jobs = answer.jobs { hand(.snapshotListed(Set(jobs.map(\.id)))) }
            var queued = connection.takeQueuedNotifications()[...]
            while !isStopped {
                let notification: RPCNotification
                if let next = queued.popFirst() {
                    notification = next
                } else {
                    // Woken every half second to notice a cancelled consumer.
                    guard let next = try connection.nextNotification(until: .now + .milliseconds(500)) else { continue }
                    notification = next
                }
                switch ControlEvent(rawValue: notification.method) {
                case .state:
                    let job = try notification.params.decode(JobInfo.self)
                    yield(.state(job), id: job.id, revision: job.revision)
                case .progress:
                    let progress = try notification.params.decode(JobProgressEvent.self)
                    yield(.progress(progress), id: progress.id, revision: progress.revision)
                case .removed:
                    let removed = try notification.params.decode(JobSelection.self)
                    if let id = removed.id { hand(.event(.removed(id))) }
                case .overflow:
                    if case .string(let text)? = notification.params.objectValue?["message"] {
                        return SubscriptionOverflow(message: text)
                    }
                    return SubscriptionOverflow(message: "too many unread events")
                case nil:
                    continue  // an event a newer daemon added: ignored, as the protocol says
                }
            }
            return nil
        } catch {
            return error
        }
    }

    private struct SnapshotAnswer: Decodable {
        var jobs: [JobInfo]?
    }
}
