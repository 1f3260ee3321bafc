import Foundation
import Synchronization
import UploadCore
import UploadWire

/// Fans job notifications out to the connections that subscribed to them.
///
/// Each notification is encoded once. Delivery is the connection's business: it queues the line
/// and drops a subscriber that stops reading (see `ControlConnection`).
final class EventHub: Sendable {
    struct Subscriber: Sendable {
        /// Nil: every job.
        var ids: Set<JobID>?
        /// Only the jobs of this batch; nil: any.
        var batch: JobID?
        /// Nil: every kind of event.
        var kinds: Set<ControlEvent>?
        /// `job.state` only for jobs that are now in one of these states; nil: any.
        var states: Set<JobState>? = nil
        /// Only these keys of a job in `job.state`; nil: all.
        var jobFields: JobFields? = nil
        var deliver: @Sendable ([UInt8]) -> Void

        func wants(_ event: ControlEvent, id: JobID, batch jobBatch: JobID?, state: JobState? = nil) -> Bool {
            (ids?.contains(id) ?? true) && (batch == nil || batch == jobBatch) && (kinds?.contains(event) ?? true)
                && (state.map { states?.contains($0) ?? true } ?? true)
        }
    }

    private struct Clients {
        /// The clients connected now: only they may subscribe.
        var connected: Set<ControlClientID> = []
        var subscribers: [ControlClientID: Subscriber] = [:]
    }

    private let clients = Mutex(Clients())

    var hasSubscribers: Bool { clients.withLock { !$0.subscribers.isEmpty } }

    /// How many clients are subscribed.
    var subscriberCount: Int { clients.withLock { $0.subscribers.count } }

    /// `client` connected: it may subscribe until `disconnect`.
    func connect(_ client: ControlClientID) {
        _ = clients.withLock { $0.connected.insert(client) }
    }

    /// `client` closed: its subscription ends, and a subscribe of its that is still running (the
    /// request was read before the close) registers nothing.
    func disconnect(_ client: ControlClientID) {
        clients.withLock {
            $0.connected.remove(client)
            $0.subscribers[client] = nil
        }
    }

    /// Subscribes `client`, replacing its subscription. False, and nothing registered, when the
    /// client is not connected (any more).
    @discardableResult
    func subscribe(_ client: ControlClientID, _ subscriber: Subscriber) -> Bool {
        clients.withLock {
            guard $0.connected.contains(client) else { return false }
            $0.subscribers[client] = subscriber
            return true
        }
    }

    /// Job `id`'s new state; `info` is only made when some subscriber wants it (none, most of
    /// the time, and an `add` of thousands of files announces each job as it is added, starts and ends).
    func publishState(id: JobID, batch: JobID?, state: JobState, _ info: () -> JobInfo) {
        publishStates(CollectionOfOne(StateChange(id: id, batch: batch, state: state))) { _ in info() }
    }

    /// A job's new state, for `publishStates`.
    struct StateChange {
        var id: JobID
        var batch: JobID?
        var state: JobState
    }

    /// Several jobs' new states, in order (`info(i)` makes the i-th job's, only if wanted): each
    /// subscriber gets the lines it wants of all of them in one delivery, so the ends of many small
    /// uploads that shared a sync cross to a connection's queue in one hop and reach the client in
    /// one write, not one each.
    func publishStates(_ changes: some Collection<StateChange>, info: (Int) -> JobInfo) {
        let targets = clients.withLock { Array($0.subscribers.values) }
        guard !targets.isEmpty else { return }
        var gathered: [[UInt8]] = []  // made once some line is wanted: most changes interest nobody
        for (position, change) in changes.enumerated() {
            var job: JobInfo?
            var lines: [JobFields?: [UInt8]] = [:]
            for (index, target) in targets.enumerated()
            where target.wants(.state, id: change.id, batch: change.batch, state: change.state) {
                let fields = target.jobFields
                if lines[fields] == nil {
                    if job == nil { job = info(position) }
                    lines[fields] = Self.line(.state, job?.jsonBytes(only: fields))
                }
                guard let line = lines[fields] else { continue }
                if gathered.isEmpty { gathered = Array(repeating: [], count: targets.count) }
                if gathered[index].isEmpty { gathered[index] = line } else { gathered[index] += line }
            }
        }
        for (index, bytes) in gathered.enumerated() where !bytes.isEmpty { targets[index].deliver(bytes) }
    }

    /// The job was removed (remove, clear, delete): it is gone from the daemon.
    func publishRemoved(_ id: JobID, batch: JobID?) {
        publish(ControlEvent.removed, id: id, batch: batch) { Self.encode(JobSelection(id: id)) }
    }

    func publishProgress(_ progress: JobProgressEvent, batch: JobID?) {
        publish(ControlEvent.progress, id: progress.id, batch: batch) { Self.encode(progress) }
    }

    private static func encode<T: Encodable>(_ params: T) -> [UInt8]? {
        (try? JSONCoding.encoder.encode(params)).map { [UInt8]($0) }
    }

    /// An event other than `job.state` (whose params `jobFields` narrow: `publishStates`): its params
    /// are encoded only when some subscriber wants it (none, most of the time), once for all of them.
    private func publish(_ event: ControlEvent, id: JobID, batch: JobID?, params: () -> [UInt8]?) {
        let targets = clients.withLock { $0.subscribers.values.filter { $0.wants(event, id: id, batch: batch) } }
        guard !targets.isEmpty else { return }
        let line = Self.line(event, params())
        guard !line.isEmpty else { return }
        for target in targets { target.deliver(line) }
    }

    /// The notification's line, newline included; empty when the params did not encode.
    private static func line(_ event: ControlEvent, _ params: [UInt8]?) -> [UInt8] {
        guard let params, var line = try? RPCLine.notification(method: event.rawValue, encodedParams: params)
        else { return [] }
        line.append(UInt8(ascii: "\n"))
        return line
    }
}
