import Testing
import UploadClient
import UploadWire

/// `UploaddClient.wait` against a fake daemon: what it subscribes to, and how it goes on when
/// the daemon cuts it off for reading too slowly.
@Suite struct ClientLibraryWaitTests {
    @Test func aWaitCutOffByEventsOverflowSubscribesAgainToTheJobsNotEnded() async throws {
        // Job 2 ended and job 3 was removed meanwhile: no event says so, only the snapshot.
        let daemon = try FakeDaemon.cuttingOffTheFirstSubscriber(
            snapshot: (1...3).map { sampleJob(id: $0, state: .queued) },
            events: [sampleJob(id: 1, state: .completed)], then: [sampleJob(id: 2, state: .completed)])
        defer { daemon.stop() }
        let jobs = try await UploaddClient(socketPath: daemon.socketPath).wait(
            for: [1, 2, 3].map { JobID($0) }, timeout: .seconds(30))
        #expect(jobs.map(\.id) == [1, 2, 3].map { JobID($0) }, "the last view of each, the removed one's too")
        #expect(jobs.map(\.state) == [.completed, .completed, .queued])
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(
            requests.map { $0.params?.objectValue?["ids"] }
                == [[1, 2, 3], [2, 3]].map { .array($0.map { .number($0) }) })
        // Only the ends, and queued (a job retried after its end).
        #expect(
            requests.allSatisfy {
                $0.params?.objectValue?["states"]
                    == .array(["completed", "failed", "canceled", "queued"].map { .string($0) })
                    && $0.params?.objectValue?["snapshot"] == .bool(true)
            })
    }

    @Test func aWaitForAJobTheDaemonDoesNotKnowFailsAtOnce() async throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            return [Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 1, state: .running)]))]
        }
        defer { daemon.stop() }
        await #expect(throws: RPCError.jobNotFound(JobID(9))) {
            try await UploaddClient(socketPath: daemon.socketPath).wait(
                for: [JobID(1), JobID(9)], timeout: .seconds(30))
        }
    }

    @Test func aWaitSubscribesToEveryStateWhenAnOlderDaemonRefusesTheStatesFilter() async throws {
        let daemon = try FakeDaemon { line in
            let request = Wire.requests(line)[0]
            guard request.params?.objectValue?["states"] == nil else {
                return [Wire.error(id: request.id, RPCError.invalidParams("unknown key 'states'"))]
            }
            return [
                Wire.result(id: request.id, JobList(jobs: [sampleJob(id: 4, state: .running)])),
                Wire.notification(.state, sampleJob(id: 4, state: .failed)),
            ]
        }
        defer { daemon.stop() }
        let jobs = try await UploaddClient(socketPath: daemon.socketPath).wait(for: [JobID(4)], timeout: .seconds(30))
        #expect(jobs.map(\.state) == [.failed])
        #expect(
            daemon.requestLines.flatMap(Wire.requests).map { $0.params?.objectValue?["states"] != nil } == [
                true, false,
            ])
    }
}
