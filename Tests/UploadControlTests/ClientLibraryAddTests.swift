import Synchronization
import Testing
import UploadClient
import UploadWire

/// `UploaddClient.add(_:chunk:)` against a fake daemon: the files of a request go as one
/// `job.add` of `sources`, and as one `job.add` each to a daemon older than `sources`.
@Suite struct ClientLibraryAddTests {
    static let files = ["/x/a", "/x/bad", "/x/c"].map { path in
        var params = AddParams(source: path, destination: "https://h/")
        params.headers = ["A: 1"]
        return params
    }

    /// A fake daemon's jobs: IDs from 10, all in batch 10; `/x/bad` is refused.
    static func answer(_ request: RPCRequest, nextID: borrowing Mutex<UInt64>) -> String {
        let refusal = RPCError(code: RPCError.sourceErrorCode, message: "cannot open /x/bad")
        guard case .array(let sources)? = request.params?.objectValue?["sources"] else {
            if request.params?.objectValue?["source"] == .string("/x/bad") {
                return Wire.error(id: request.id, refusal)
            }
            return Wire.result(id: request.id, nextQueuedJob(nextID, batch: 10))
        }
        var jobs: [JobInfo] = []
        var errors: [JobFailure] = []
        for (index, source) in sources.enumerated() {
            if source == .string("/x/bad") {
                errors.append(JobFailure(source: "/x/bad", index: index, error: refusal))
            } else {
                jobs.append(nextQueuedJob(nextID, batch: 10))
            }
        }
        return Wire.result(id: request.id, JobList(jobs: jobs, errors: errors))
    }

    @Test func aRequestsFilesGoAsOneAddOfSources() async throws {
        let nextID = Mutex<UInt64>(10)
        let daemon = try FakeDaemon(speaksSources: true) { line in
            let answers = Wire.requests(line).map { Self.answer($0, nextID: nextID) }
            return [line.hasPrefix("[") ? "[" + answers.joined(separator: ",") + "]" : answers[0]]
        }
        defer { daemon.stop() }
        let (jobs, errors) = try await UploaddClient(socketPath: daemon.socketPath).add(Self.files)
        #expect(jobs.map(\.id) == [JobID(10), JobID(11)])
        let refusal = RPCError(code: RPCError.sourceErrorCode, message: "cannot open /x/bad")
        #expect(errors == [JobFailure(source: "/x/bad", index: 1, error: refusal)])
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.count == 2, "the first file alone, to start the batch; then the others in one")
        let second = try #require(requests.last?.params?.objectValue)
        #expect(second["sources"] == .array([.string("/x/bad"), .string("/x/c")]))
        #expect(second["batch"] == .number(10))
        #expect(second["headers"] == .array([.string("A: 1")]))
        #expect(second["source"] == nil)
    }

    @Test func anOlderDaemonGetsOneAddPerFile() async throws {
        let nextID = Mutex<UInt64>(10)
        let daemon = try FakeDaemon { line in
            let answers = Wire.requests(line).map { Self.answer($0, nextID: nextID) }
            return [line.hasPrefix("[") ? "[" + answers.joined(separator: ",") + "]" : answers[0]]
        }
        defer { daemon.stop() }
        let (jobs, errors) = try await UploaddClient(socketPath: daemon.socketPath).add(Self.files)
        #expect(jobs.map(\.id) == [JobID(10), JobID(11)])
        #expect(errors.map(\.source) == ["/x/bad"])
        #expect(daemon.refusedSourcesLines == 1)
        let requests = daemon.requestLines.flatMap(Wire.requests)
        #expect(requests.map { $0.params?.objectValue?["source"] } == ["/x/a", "/x/bad", "/x/c"].map { .string($0) })
    }
}
