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
        var deliver: @Sendable ([UInt8]) -> Void
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
        publish(ControlEvent.state, job, id: job.id)
    }

    /// The job was removed (remove, clear, delete): it is gone from the daemon.
    func publishRemoved(_ id: JobID) {
        publish(ControlEvent.removed, JobSelection(id: id), id: id)
    }

    func publishProgress(_ progress: JobProgressEvent) {
        publish(ControlEvent.progress, progress, id: progress.id)
    }

    private func publish<T: Encodable>(_ event: ControlEvent, _ params: T, id: JobID) {
        let targets = subscribers.withLock { $0.values.filter { $0.ids?.contains(id) ?? true } }
        guard !targets.isEmpty else { return }
        guard let encoded = try? JSONCoding.encoder.encode(params),
            var line = try? RPCLine.notification(method: event.rawValue, encodedParams: [UInt8](encoded))
        else { return }
        line.append(UInt8(ascii: "\n"))
        for target in targets { target.deliver(line) }
    }
}
