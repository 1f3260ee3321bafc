import Foundation
import UploadClient
import UploadWire

/// What a tracker keeps of each job: the whole `JobInfo` (for bars and `--json`), or the
/// `JobStatus` a waiter needs, which the daemon sends narrowed (`job_fields`).
protocol TrackedJob: Decodable, Sendable {
    var id: JobID { get }
    var state: JobState { get }
    var revision: UInt64 { get }
    var updatedAt: Date { get }
    var error: JobError? { get }
    var waiting: String? { get }
    /// The `job_fields` to subscribe with; nil: all.
    static var subscribedFields: [String]? { get }
    /// The job whole, when this is it.
    var whole: JobInfo? { get }
    /// Reads a job as the daemon sent it (a snapshot's element, a `job.state`'s params); nil when
    /// it is not one.
    static func read(_ json: JSONValue) -> Self?
}

extension JobInfo: TrackedJob {
    static var subscribedFields: [String]? { nil }
    var whole: JobInfo? { self }
    static func read(_ json: JSONValue) -> JobInfo? { try? json.decode(JobInfo.self) }
}

extension JobStatus: TrackedJob {
    static var subscribedFields: [String]? { fields }
    var whole: JobInfo? { nil }
    static func read(_ json: JSONValue) -> JobStatus? { JobStatus(json: json) }
}

/// `{"jobs": [...]}` of either kind of tracked job.
private struct TrackedJobs<Job: TrackedJob>: Decodable {
    var jobs: [Job]
}

/// What is known of a set of jobs being waited for: their latest state, and which are not done.
struct JobTracker<Job: TrackedJob> {
    /// The jobs followed, in the order named.
    let ids: [JobID]
    private(set) var jobs: [JobID: Job] = [:]
    private var unfinished: Set<JobID>
    /// Followed jobs removed while waited for: they will never end.
    private(set) var removed: Set<JobID> = []

    init(ids: [JobID]) {
        self.ids = ids
        unfinished = Set(ids)
    }

    /// Records a job's new state; jobs not followed are ignored.
    mutating func update(_ job: Job) {
        guard jobs[job.id] != nil || unfinished.contains(job.id) else { return }
        jobs[job.id] = job
        if job.state.isTerminal { unfinished.remove(job.id) } else { unfinished.insert(job.id) }
    }

    /// Records a state that arrived before the snapshot it may be older than: only when it is newer,
    /// by revision. From a daemon without revisions, by time: timestamps have whole seconds, so
    /// within one second the state further along wins.
    mutating func updateIfNewer(_ job: Job) -> Bool {
        if let known = jobs[job.id], known.revision > 0, job.revision > 0 {
            guard job.revision > known.revision else { return false }
        } else if let known = jobs[job.id] {
            let newer = job.updatedAt > known.updatedAt
            let sameSecondFurther = job.updatedAt == known.updatedAt && Self.rank(job.state) > Self.rank(known.state)
            guard newer || sameSecondFurther else { return false }
        }
        update(job)
        return true
    }

    /// A followed job was removed (`job.removed`): there is nothing more to wait for.
    mutating func markRemoved(_ id: JobID) {
        guard unfinished.remove(id) != nil else { return }
        removed.insert(id)
    }

    private static func rank(_ state: JobState) -> Int {
        switch state {
        case .queued, .paused: return 0
        case .running: return 1
        case .completed, .failed, .canceled: return 2
        }
    }

    /// Every followed job is completed, failed or canceled.
    var isFinished: Bool { unfinished.isEmpty }

    /// The jobs not yet terminal, in the order named.
    var unfinishedIDs: [JobID] { ids.filter { unfinished.contains($0) } }

    /// The latest known state of each followed job, in the order named.
    var latestJobs: [Job] { ids.compactMap { jobs[$0] } }
}

/// Waits for jobs to end with one subscription that also answers their current state, however
/// many jobs: no polling.
enum JobWaiter {
    /// What to follow: jobs by ID, or every job of a batch.
    enum Selection {
        case ids([JobID])
        case batch(JobID)

        /// The subscription that follows these jobs, answered with their current state.
        func subscription(kinds: [ControlEvent]?, states: [JobState]?, jobFields: [String]?) -> SubscribeParams {
            switch self {
            case .ids(let ids):
                SubscribeParams(ids: ids, kinds: kinds, states: states, snapshot: true, jobFields: jobFields)
            case .batch(let batch):
                SubscribeParams(batch: batch, kinds: kinds, states: states, snapshot: true, jobFields: jobFields)
            }
        }

        /// The jobs to wait for, once `current` (the subscription's snapshot) is known: every
        /// named job must exist, and a batch must have jobs.
        func ids(in current: [JobID]) throws -> [JobID] {
            switch self {
            case .ids(let named):
                let known = Set(current)
                if let missing = named.first(where: { !known.contains($0) }) { throw RPCError.jobNotFound(missing) }
                return named
            case .batch(let batch):
                guard !current.isEmpty else {
                    throw UsageError("batch \(batch) has no jobs (a batch is named by its first job's ID)")
                }
                return current
            }
        }
    }

    /// Subscribes to the jobs with a snapshot of their current state, then follows `job.state`
    /// notifications until every job is terminal or `deadline` passes (then the tracker is not
    /// finished). `onStart` sees the states read at first; `onNotification` sees every
    /// notification for these jobs, after the tracker took it in. Progress events come only with
    /// `progress` (for bars). Cut off for reading too slowly (`events.overflow`), it connects
    /// again and subscribes to the jobs not yet ended, with a snapshot: the states it missed come
    /// to `onNotification` as `job.state`, and a job the snapshot lacks was removed meanwhile.
    static func follow<Job: TrackedJob>(
        _ selection: Selection, as _: Job.Type, on connection: DaemonConnection,
        until deadline: ContinuousClock.Instant?, progress: Bool = false, onStart: (JobTracker<Job>) -> Void = { _ in },
        onNotification: (RPCNotification, JobTracker<Job>) -> Void = { _, _ in }
    ) throws -> JobTracker<Job> {
        var subscription = Subscription<Job>(progress: progress)
        var connection = connection
        let current = try subscription.subscribe(selection, on: connection)
        let ids = try selection.ids(in: current.map(\.id))
        var tracker = JobTracker<Job>(ids: ids)
        // Subscribed first, so nothing is missed. What arrived before the answer may be older or newer.
        current.forEach { tracker.update($0) }
        onStart(tracker)
        takeEarly(connection.takeQueuedNotifications(), into: &tracker, onNotification: onNotification)
        while !tracker.isFinished {
            guard let notification = try connection.nextNotification(until: deadline) else { break }
            if notification.method == ControlEvent.state.rawValue, let job = Job.read(notification.params) {
                tracker.update(job)
            } else if notification.method == ControlEvent.removed.rawValue,
                let id = try? notification.params.decode(JobSelection.self).id
            {
                tracker.markRemoved(id)
            } else if notification.method == ControlEvent.overflow.rawValue {
                // The daemon closes this connection after it: go on with a new one.
                connection = try DaemonConnection(socketPath: connection.socketPath)
                let unfinished = tracker.unfinishedIDs
                let snapshot = try subscription.subscribeAgain(to: unfinished, on: connection)
                let listed = Set(snapshot.compactMap { Job.read($0)?.id })
                unfinished.filter { !listed.contains($0) }.forEach { tracker.markRemoved($0) }
                let missed = snapshot.map { RPCNotification(method: ControlEvent.state.rawValue, params: $0) }
                takeEarly(missed + connection.takeQueuedNotifications(), into: &tracker, onNotification: onNotification)
                continue
            }
            onNotification(notification, tracker)
        }
        if !tracker.isFinished && subscription.states != nil {
            // Timed out: what the others are doing now (paused? waiting for the network?), which
            // the narrowed subscription did not say.
            let now = try connection.call(
                .list, params: ListParams(ids: tracker.unfinishedIDs), as: TrackedJobs<Job>.self)
            now.jobs.forEach { tracker.update($0) }
        }
        return tracker
    }

    /// Takes in states that may be older than what the tracker knows (they came with or before a
    /// snapshot): only those newer by revision reach `onNotification`.
    private static func takeEarly<Job: TrackedJob>(
        _ notifications: [RPCNotification], into tracker: inout JobTracker<Job>,
        onNotification: (RPCNotification, JobTracker<Job>) -> Void
    ) {
        for notification in notifications where notification.method == ControlEvent.state.rawValue {
            if let job = Job.read(notification.params), tracker.updateIfNewer(job) {
                onNotification(notification, tracker)
            }
        }
    }

    /// What a waiter subscribes to, narrowed as far as the daemon allows: older daemons refuse
    /// `job_fields`, and older still `states`; each refusal is remembered for the next subscription.
    private struct Subscription<Job: TrackedJob> {
        let kinds: [ControlEvent]?
        var states: [JobState]?
        var jobFields = Job.subscribedFields

        init(progress: Bool) {
            kinds = progress ? nil : [.state, .removed]
            states = progress ? nil : waitedStates
        }

        /// Subscribes with a snapshot: the selected jobs' current states.
        mutating func subscribe(_ selection: Selection, on connection: DaemonConnection) throws -> [Job] {
            try subscribeAnswering(selection, on: connection).map { json in
                guard let job = Job.read(json) else {
                    throw ControlClientError.unexpectedAnswer("events.subscribe returned something else than jobs")
                }
                return job
            }
        }

        /// Subscribes with a snapshot to the jobs still followed: their states, as sent.
        mutating func subscribeAgain(to ids: [JobID], on connection: DaemonConnection) throws -> [JSONValue] {
            try subscribeAnswering(.ids(ids), on: connection)
        }

        /// The snapshot's jobs as sent: `{"jobs": [...]}`.
        private mutating func subscribeAnswering(_ selection: Selection, on connection: DaemonConnection) throws
            -> [JSONValue]
        {
            while true {
                do {
                    let params = selection.subscription(kinds: kinds, states: states, jobFields: jobFields)
                    let answer = try connection.call(.subscribe, JSONValue(encoding: params))
                    guard case .array(let jobs)? = (try? answer.value())?.objectValue?["jobs"] else {
                        throw ControlClientError.unexpectedAnswer("events.subscribe returned no \"jobs\"")
                    }
                    return jobs
                } catch let refusal as RPCError
                    where jobFields != nil && refusal.refusesUnknownKey("job_fields")
                {
                    jobFields = nil  // an older daemon: whole jobs, which decode as well
                } catch let refusal as RPCError
                    where states != nil && refusal.refusesUnknownKey("states")
                {
                    states = nil  // an older daemon still: every state, as before
                }
            }
        }
    }

    /// Follows the jobs without bars, then reports: whole jobs for `--json`, else only what the
    /// report needs of each (`JobStatus`: a small file's job is a sixth of its bytes).
    static func waitAndReport(
        _ selection: Selection, on connection: DaemonConnection, until deadline: ContinuousClock.Instant?,
        timeout: Double?, context: CommandContext, addErrors: [JobFailure]? = nil
    ) throws -> ExitCode {
        if context.json {
            let tracker = try follow(selection, as: JobInfo.self, on: connection, until: deadline)
            return try report(tracker, timeout: timeout, context: context, addErrors: addErrors)
        }
        let tracker = try follow(selection, as: JobStatus.self, on: connection, until: deadline)
        return try report(tracker, timeout: timeout, context: context, addErrors: addErrors)
    }

    /// Without bars, a waiter hears only of ends, and of `queued` (a job retried after it ended
    /// goes on): a small file's "running" costs the daemon and this client an event each.
    static let waitedStates: [JobState] = JobState.allCases.filter(\.isTerminal) + [.queued]

    /// Prints what went wrong and picks the exit status: 0 when every job completed, else 1.
    /// With `--json`, prints `{"jobs": [...]}` with each job's latest state (and, for `add --wait`,
    /// `"errors"`: the files that were not added).
    /// `--json` needs the jobs whole: follow them `as: JobInfo.self` then.
    static func report<Job: TrackedJob>(
        _ tracker: JobTracker<Job>, timeout: Double?, context: CommandContext, addErrors: [JobFailure]? = nil
    ) throws -> ExitCode {
        var succeeded = tracker.isFinished && tracker.removed.isEmpty
        for id in tracker.ids where tracker.removed.contains(id) {
            context.printError("job \(id) was removed before it ended")
        }
        for job in tracker.latestJobs where job.state.isTerminal && job.state != .completed {
            succeeded = false
            if job.state == .failed {
                context.printError("job \(job.id) failed: \(job.error?.message ?? "no reason given")")
            } else {
                context.printError("job \(job.id) \(job.state.rawValue)")
            }
        }
        if !tracker.isFinished {
            let waiting = tracker.unfinishedIDs
            var list = waiting.prefix(10).map(\.description).joined(separator: ", ")
            if waiting.count > 10 { list += " and \(waiting.count - 10) more" }
            let after = timeout.map { " after \(JobFormatting.duration($0))" } ?? ""
            context.printError("timed out\(after); still waiting for job\(waiting.count == 1 ? "" : "s") \(list)")
            // A paused job never ends by itself: say so, and how to go on.
            let paused = tracker.latestJobs.filter { $0.state == .paused }.map(\.id)
            if !paused.isEmpty {
                let ids = paused.prefix(10).map(\.description).joined(separator: " ")
                context.printError(
                    "job\(paused.count == 1 ? " \(ids) is" : "s \(ids) are") paused and will not end by itself: uploadctl resume \(ids)"
                )
            }
            for job in tracker.latestJobs where !job.state.isTerminal {
                if let waitingText = JobFormatting.waitingText(job.waiting) {
                    context.printError("job \(job.id) is \(waitingText)")
                }
            }
        }
        if context.json {
            let jobs = tracker.latestJobs.compactMap(\.whole)
            if let addErrors {
                try context.printJSON(JobList(jobs: jobs, errors: addErrors))
            } else {
                try context.printJSON(JobList(jobs: jobs))
            }
        }
        return succeeded ? .success : .failure
    }

    /// The instant `seconds` from now, or nil for no limit.
    static func deadline(after seconds: Double?) -> ContinuousClock.Instant? {
        guard let seconds else { return nil }
        return .now + .milliseconds(Int64(min(seconds, 1e12) * 1000))
    }
}
