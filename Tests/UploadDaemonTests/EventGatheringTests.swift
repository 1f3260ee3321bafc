import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// Job changes announced together reach each subscriber in one delivery, in order, with only the
/// lines and keys it asked for.
@Suite struct EventGatheringTests {
    /// What one subscriber was handed: each delivery, split into its lines' (id, state, keys).
    final class Deliveries: Sendable {
        private let seen = Mutex<[[(id: UInt64, state: String, keys: [String])]]>([])

        func subscriber(
            ids: Set<JobID>? = nil, states: Set<JobState>? = nil, fields: JobFields? = nil
        ) -> EventHub.Subscriber {
            EventHub.Subscriber(ids: ids, batch: nil, kinds: [.state], states: states, jobFields: fields) { bytes in
                let lines = bytes.split(separator: UInt8(ascii: "\n")).map { line in
                    let note = try? JSONDecoder().decode(RPCNotification.self, from: Data(line))
                    let job = note?.params.objectValue ?? [:]
                    guard note?.method == "job.state", case .number(let id)? = job["id"],
                        case .string(let state)? = job["state"]
                    else { return (id: UInt64.max, state: "unreadable", keys: [String]()) }
                    return (id: UInt64(id), state: state, keys: job.keys.sorted())
                }
                self.seen.withLock { $0.append(lines) }
            }
        }

        var all: [[(id: UInt64, state: String, keys: [String])]] { seen.withLock { $0 } }
        var lines: [(id: UInt64, state: String, keys: [String])] { all.flatMap { $0 } }
    }

    static func info(_ id: UInt64, _ state: JobState) -> JobInfo {
        JobInfo(
            id: JobID(id), state: state, source: "/src/\(id)", destination: "file:///dst/", protocol: .file,
            bytesTotal: 10, bytesSent: 10, bytesAcked: 10, speed: 0, eta: nil, attempts: 1, priority: 0, error: nil,
            result: nil, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 1),
            nextAttemptAt: nil, snapshot: nil, user: nil, history: nil, waiting: nil, revision: id)
    }

    @Test func eachSubscriberGetsAllItsLinesInOneDeliveryInOrder() throws {
        let hub = EventHub()
        let ends = Deliveries()
        let one = Deliveries()
        let fields = try #require(JobFields(names: ["id", "state"]))
        hub.subscribeNewClient(ends.subscriber(states: [.completed, .failed]))
        hub.subscribeNewClient(one.subscriber(ids: [JobID(2)], fields: fields))
        let changes: [(UInt64, JobState)] = [(1, .completed), (2, .failed), (3, .running), (4, .completed)]
        let made = Mutex<[UInt64]>([])
        hub.publishStates(changes.map { EventHub.StateChange(id: JobID($0.0), batch: nil, state: $0.1) }) { index in
            made.withLock { $0.append(changes[index].0) }
            return Self.info(changes[index].0, changes[index].1)
        }
        #expect(ends.all.count == 1, "one delivery, not one per change")
        #expect(ends.lines.map(\.id) == [1, 2, 4])
        #expect(ends.lines.map(\.state) == ["completed", "failed", "completed"])
        #expect(ends.lines.allSatisfy { $0.keys.contains("source") }, "no job_fields: whole jobs")
        #expect(one.all.count == 1)
        #expect(one.lines.map(\.id) == [2])
        #expect(one.lines.first?.keys == ["id", "state"])
        #expect(made.withLock { $0 } == [1, 2, 4], "a job nobody wants is not even made")
    }

    @Test func aSubscriberThatWantsNoneOfTheChangesGetsNothing() {
        let hub = EventHub()
        let nothing = Deliveries()
        hub.subscribeNewClient(nothing.subscriber(states: [.canceled]))
        hub.publishStates([EventHub.StateChange(id: JobID(1), batch: nil, state: .completed)]) { _ in
            Self.info(1, .completed)
        }
        hub.publishStates([]) { _ in Self.info(1, .completed) }
        #expect(nothing.all.isEmpty, "no empty deliveries")
    }

    /// Inside `announcingTogether`, announcements wait for its end and then go out together, in order,
    /// each with the job as it was when announced; outside it, each goes out at once.
    @Test func theSchedulerHoldsAnnouncementsUntilTheStretchEnds() async throws {
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 1), fake: FakeTransfer(defaultStep: .hold))
        let first = try await harness.add("first.bin")
        let second = try await harness.add("second.bin")
        let seen = Deliveries()
        harness.events.subscribeNewClient(seen.subscriber())
        func announceBoth(on scheduler: isolated Scheduler) -> Int {
            scheduler.announcingTogether {
                for id in [second, first, second] { scheduler.announce(scheduler.store.jobs[id]!) }
                return seen.all.count
            }
        }
        #expect(await announceBoth(on: harness.scheduler) == 0, "nothing is delivered inside the stretch")
        #expect(seen.all.count == 1)
        #expect(seen.lines.map(\.id) == [second.rawValue, first.rawValue, second.rawValue])
        func announceAlone(on scheduler: isolated Scheduler) {
            scheduler.announce(scheduler.store.jobs[first]!)
            scheduler.announce(scheduler.store.jobs[second]!)
        }
        await announceAlone(on: harness.scheduler)
        #expect(seen.all.count == 3, "outside a stretch, one delivery each")
        harness.fake.release("first.bin")
        harness.fake.release("second.bin")
        await harness.stop()
    }

    /// Uploads that end together share a sync, and their ends reach a subscriber in fewer
    /// deliveries than ends: every end once, none before its record is on disk.
    @Test func endsThatShareASyncAreAnnouncedTogether() async throws {
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 8), fake: FakeTransfer(defaultStep: .hold))
        let seen = Deliveries()
        harness.events.subscribeNewClient(seen.subscriber(states: [.completed]))
        let names = (0..<8).map { "end-\($0).bin" }
        var ids: [JobID] = []
        for name in names { ids.append(try await harness.add(name)) }
        #expect(await harness.waitForStarts(names.count))
        for name in names { harness.fake.release(name) }
        for id in ids { #expect(await harness.wait(id, .completed)) }
        #expect(await eventually { seen.lines.count == names.count })
        #expect(Set(seen.lines.map(\.id)) == Set(ids.map(\.rawValue)), "each end once")
        #expect(seen.all.count < names.count, "ends that shared a sync came together: \(seen.all.map(\.count))")
        await harness.stop()
        let (journal, replay) = try Journal.open(directory: harness.directory.path + "/state")
        journal.close()
        for id in ids { #expect(replay.state.jobs[id]?.state == .completed, "announced only once journaled") }
    }
}
