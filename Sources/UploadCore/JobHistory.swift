import Foundation
import UploadWire

/// A job's last events (`Job.history`). Most jobs in a queue have one, the add: it is kept inline
/// rather than in an array of its own, which took 64 bytes of every queued job.
@usableFromInline enum JobHistory: Sendable, Equatable {
    case none
    case one(JobEvent)
    /// Two or more, never fewer: `init(_:)` keeps one form for each history.
    case many([JobEvent])

    init(_ events: [JobEvent]) {
        switch events.count {
        case 0: self = .none
        case 1: self = .one(events[0])
        default: self = .many(events)
        }
    }

    @usableFromInline var events: [JobEvent] {
        switch self {
        case .none: return []
        case .one(let event): return [event]
        case .many(let events): return events
        }
    }

    @usableFromInline var first: JobEvent? {
        switch self {
        case .none: return nil
        case .one(let event): return event
        case .many(let events): return events.first
        }
    }

    @usableFromInline var last: JobEvent? {
        switch self {
        case .none: return nil
        case .one(let event): return event
        case .many(let events): return events.last
        }
    }

    /// Adds an event, keeping the last `limit`.
    mutating func append(_ event: JobEvent, keepingLast limit: Int) {
        switch self {
        case .none:
            self = .one(event)
        case .one(let first):
            self = .many([first, event])
        case .many(var events):
            self = .none  // `events` is then the array's only reference: appended in place
            events.append(event)
            if events.count > limit { events.removeFirst(events.count - limit) }
            self = Self(events)
        }
    }

    /// The first event's message, for the decoder to share with the job before (`StringSharer`).
    mutating func replaceFirstMessage(with message: String) {
        switch self {
        case .none: break
        case .one(var event):
            event.message = message
            self = .one(event)
        case .many(var events):
            self = .none
            events[0].message = message
            self = .many(events)
        }
    }
}
