import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// `job.add` of `sources`: many files in one request, the options given once, one answer.
@Suite("job.add of sources")
struct AddSourcesTests {
    static func add(_ params: String, _ handler: ControlHandler) async throws -> [String: JSONValue] {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"job.add","params":\#(params)}"#
        return try #require(try await ControlHandlerTests.answer(line, handler)?.objectValue)
    }

    /// The files that can be added are, in order, in one batch; the one that cannot is an error
    /// by its place; a file's own destination stands in for the request's.
    @Test func theFilesAreAddedInOrderAndAFailureNamesItsPlace() async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = ControlHandlerTests.handler(harness)
        let a = try harness.directory.write("src/a.txt", "a")
        let c = try harness.directory.write("src/c.txt", "cc")
        let missing = harness.directory.path + "/src/missing.txt"
        let answer = try await Self.add(
            #"{"sources":["\#(a)",{"source":"\#(missing)"},{"source":"\#(c)","destination":"file:///elsewhere/"}],"destination":"file:///nowhere/","new_batch":true,"priority":5,"job_fields":["batch","source","destination","priority"]}"#,
            handler)
        let result = try #require(answer["result"]?.objectValue, "\(answer)")
        guard case .array(let list)? = result["jobs"] else {
            Issue.record("no jobs: \(result)")
            return
        }
        let jobs = list.compactMap(\.objectValue)
        #expect(jobs.map { $0["source"] } == [.string(a), .string(c)])
        #expect(jobs.map { $0["destination"] } == [.string("file:///nowhere/"), .string("file:///elsewhere/")])
        #expect(jobs.map { $0["priority"] } == [.number(5), .number(5)], "the shared options go to every file")
        #expect(jobs.map { $0["batch"] } == [jobs[0]["id"], jobs[0]["id"]], "one batch, started by the first job")
        let errors = try #require(result["errors"]).decode([JobFailure].self)
        #expect(errors.count == 1)
        #expect(errors.first?.index == 1)
        #expect(errors.first?.source == missing)
        #expect(errors.first?.code == RPCError.sourceErrorCode)
        let listed = await harness.scheduler.list(states: nil, ids: nil)
        #expect(listed.map { JSONValue.number(Double($0.id.rawValue)) } == jobs.map { $0["id"] })
    }

    /// What `sources` cannot be given with, or a `sources` that is not a list of files, refuses
    /// the whole request: nothing is added.
    @Test(arguments: [
        #"{"sources":["A"],"source":"A","destination":"file:///x/"}"#,
        #"{"sources":["A"],"source_identity":"1:2","destination":"file:///x/"}"#,
        #"{"sources":["A"],"client_token":"t","destination":"file:///x/"}"#,
        #"{"sources":[],"destination":"file:///x/"}"#,
        #"{"sources":"A","destination":"file:///x/"}"#,
        #"{"sources":[7],"destination":"file:///x/"}"#,
        #"{"sources":[{"path":"A"}],"destination":"file:///x/"}"#,
        #"{"sources":[{"source":"A","colour":"red"}],"destination":"file:///x/"}"#,
        #"{"sources":[{"source":"A","colour":null}],"destination":"file:///x/"}"#,
        #"{"sources":[{"source":"A","source_identity":"nope"}],"destination":"file:///x/"}"#,
        #"{"sources":["A",{"source":"A","destination":"file:///y/"}]}"#,
        #"{"sources":["A"],"destination":"file:///x/","colour":"red"}"#,
        #"{"sources":["A"],"destination":"file:///x/","protocol":"carrier-pigeon"}"#,
    ])
    func aRequestThatIsNotAListOfFilesIsRefusedWhole(params: String) async throws {
        let harness = try await SchedulerHarness(start: false)
        let handler = ControlHandlerTests.handler(harness)
        let path = try harness.directory.write("src/a.txt", "a")
        let answer = try await Self.add(params.replacingOccurrences(of: "\"A\"", with: "\"\(path)\""), handler)
        let error = try #require(answer["error"]?.objectValue, "\(answer)")
        #expect(error["code"] == .number(Double(RPCError.invalidParamsCode)))
        #expect(await harness.scheduler.list(states: nil, ids: nil).isEmpty)
    }

    /// More files than one request may name are refused with what to do, and so are shared params
    /// that every file's copy would make too big: one line of 1 MiB must not become gigabytes of
    /// jobs or of error messages.
    @Test func moreFilesThanARequestMayNameAreRefused() throws {
        let paths = Array(repeating: JSONValue.string("/a"), count: AddParams.maxSources + 1)
        let params = JSONValue.object(["sources": .array(paths), "destination": .string("file:///x/")])
        #expect(throws: RPCError.self) { try AddParams.readSources(from: params) }
        let fewer = JSONValue.object(["sources": .array(Array(paths.dropLast())), "destination": .string("file:///x/")])
        #expect(try AddParams.readSources(from: fewer)?.files.count == AddParams.maxSources)

        let header = JSONValue.array([.string("X-Big: " + String(repeating: "a", count: 900_000))])
        func bigHeader(files: Int) -> JSONValue {
            .object([
                "sources": .array(Array(repeating: .string("/a"), count: files)),
                "destination": .string("file:///x/"), "headers": header,
            ])
        }
        let refusal = #expect(throws: RPCError.self) { try AddParams.readSources(from: bigHeader(files: 100)) }
        #expect(refusal?.message.contains("send at most 18 files a request") == true, "\(String(describing: refusal))")
        #expect(try AddParams.readSources(from: bigHeader(files: 18))?.files.count == 18)

        // What clients send fits: runs of the files whose shared params times their count stay within.
        let files = Array(repeating: AddSource(source: "/a"), count: 100)
        #expect(AddSource.requests(files, sharedBytes: 900_020).map(\.count) == [18, 18, 18, 18, 18, 10])
    }

    /// Long paths are cut into requests whose lines fit the daemon's limit beside the shared params.
    @Test func longPathsGoInRequestsThatFitALine() throws {
        let long = "/" + String(repeating: "d", count: 4000)
        let files = Array(repeating: AddSource(source: long), count: 500)
        for shared in [200, 600_000] {
            for run in AddSource.requests(files, sharedBytes: shared) {
                let bytes = try JSONValue.array(files[run].map(\.json)).jsonBytes().count
                #expect(bytes + shared < ControlProtocol.maxLineLength, "\(run) beside \(shared) bytes")
                #expect(!run.isEmpty)
            }
        }
        #expect(AddSource.requests(files, sharedBytes: 200).count == 4, "half a line each")
    }

    /// `null` is a key not given, here as for every param.
    @Test func nullIsAKeyNotGiven() throws {
        let one = try JSONValue(parsing: Array(#"{"source":"/a","destination":"file:///x/","sources":null}"#.utf8))
        #expect(try AddParams.readSources(from: one) == nil)
        #expect(try AddParams.read(from: one).source == "/a")
        let many = try JSONValue(
            parsing: Array(
                #"{"sources":[{"source":"/a","destination":null}],"source":null,"client_token":null,"destination":"file:///x/"}"#
                    .utf8))
        #expect(try AddParams.readSources(from: many)?.files.map(\.destination) == ["file:///x/"])
    }

    /// Each file's params are the one-file add's params with its source, identity and
    /// destination: what a `job.add` of that file alone would have been.
    @Test func eachFileIsTheAddOfThatFileAlone() throws {
        let params = try JSONValue(
            parsing: Array(
                #"{"sources":["/a",{"source":"/b","source_identity":"3:4","destination":"http://h/b/"}],"destination":"http://h/","headers":["A: 1"],"snapshot":"none","batch":9}"#
                    .utf8))
        let read = try #require(try AddParams.readSources(from: params))
        var alone = AddParams(source: "/a", destination: "http://h/")
        alone.headers = ["A: 1"]
        alone.snapshot = SnapshotMode.none
        alone.batch = JobID(9)
        #expect(read.files.first == alone)
        alone.source = "/b"
        alone.sourceIdentity = SourceIdentity(device: 3, inode: 4)
        alone.destination = "http://h/b/"
        #expect(read.files.last == alone)
        #expect(
            try AddParams.readSources(from: .object(["source": .string("/a"), "destination": .string("x")])) == nil)
    }
}
