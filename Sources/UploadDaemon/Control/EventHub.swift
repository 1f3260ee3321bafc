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
        var deliver: @Sendable ([UInt8]) -> Void

        func wants(_ event: ControlEvent, id: JobID, batch jobBatch: JobID?) -> Bool {
            (ids?.contains(id) ?? true) && (batch == nil || batch == jobBatch) && (kinds?.contains(event) ?? true)
        }
    }

    private let subscribers = Mutex<[ObjectIdentifier: Subscriber]>([:])

    var hasSubscribers: Bool { subscribers.withLock { !$0.isEmpty } }

    func subscribe(_ key: ObjectIdentifier, _ subscriber: Subscriber) {
        subscribers.withLock { $0[key] = subscriber }
    }

    func unsubscribe(_ key: ObjectIdentifier) {
        _ = subscribers.withLock { $0.removeValue(forKey: key) }
    }

    func publishState(_ job: JobInfo) {
        guard wanted(.state, id: job.id, batch: job.batch) else { return }  // no encoding for nobody
        publish(ControlEvent.state, encoded: job.jsonBytes, id: job.id, batch: job.batch)
    }

    private func wanted(_ event: ControlEvent, id: JobID, batch: JobID?) -> Bool {
        subscribers.withLock { $0.values.contains { $0.wants(event, id: id, batch: batch) } }
    }

    /// The job was removed (remove, clear, delete): it is gone from the daemon.
    func publishRemoved(_ id: JobID, batch: JobID?) {
        publish(ControlEvent.removed, JobSelection(id: id), id: id, batch: batch)
    }

    func publishProgress(_ progress: JobProgressEvent, batch: JobID?) {
        publish(ControlEvent.progress, progress, id: progress.id, batch: batch)
    }

    private func publish<T: Encodable>(_ event: ControlEvent, _ params: T, id: JobID, batch: JobID?) {
        guard wanted(event, id: id, batch: batch), let encoded = try? JSONCoding.encoder.encode(params) else { return }
        publish(event, encoded: [UInt8](encoded), id: id, batch: batch)
    }

    private func publish(_ event: ControlEvent, encoded: [UInt8], id: JobID, batch: JobID?) {
        let targets = subscribers.withLock { $0.values.filter { $0.wants(event, id: id, batch: batch) } }
        guard !targets.isEmpty, var line = try? RPCLine.notification(method: event.rawValue, encodedParams: encoded)
        else { return }
        line.append(UInt8(ascii: "\n"))
        for target in targets { target.deliver(line) }
    }
}
