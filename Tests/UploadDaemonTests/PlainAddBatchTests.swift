import Foundation
import TestSupport
import Testing

@testable import UploadDaemon
@testable import UploadWire

/// `PlainAddBatch`, the daemon's direct reading of a batch of `job.add` requests, against the
/// general reading (`JSONValue(parsing:)`, then the request's members and `AddParams(json:)`):
/// what the direct one reads it reads alike, and it takes no line the general one refuses.
@Suite struct PlainAddBatchTests {
    /// The general reading of a batch of plain adds: nil where it would not read every request
    /// as one (an error, a notification, another method, params it leaves to the decoder).
    /// The params as JSON, to compare the two readings by.
    static func text(_ params: AddParams?) throws -> String? {
        try params.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
    }

    static func general(_ line: [UInt8]) -> [(id: JSONValue, params: String)]? {
        guard case .array(let items)? = try? JSONValue(parsing: line), !items.isEmpty else { return nil }
        var requests: [(id: JSONValue, params: String)] = []
        for item in items {
            guard case .object(let object) = item, object["jsonrpc"] == .string("2.0"),
                object["method"] == .string("job.add"), let id = object["id"],
                let params = AddParams(json: object["params"]), let text = try? Self.text(params)
            else { return nil }
            switch id {
            case .string, .number: break
            default: return nil
            }
            requests.append((id, text))
        }
        return requests
    }

    static func direct(_ line: [UInt8]) throws -> [(id: JSONValue, params: String)]? {
        try PlainAddBatch.read(line).map { batch in try batch.map { ($0.id, try Self.text($0.params)!) } }
    }

    /// The direct reading either leaves the line to the general one or reads it alike.
    static func checkAgrees(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
        guard let direct = try direct(line) else { return false }
        let text = String(decoding: line, as: UTF8.self)
        let general = try #require(
            Self.general(line), "read directly, refused generally: \(text)", sourceLocation: sourceLocation)
        #expect(direct.map(\.id) == general.map(\.id), "\(text)", sourceLocation: sourceLocation)
        #expect(direct.map(\.params) == general.map(\.params), "\(text)", sourceLocation: sourceLocation)
        return true
    }

    static func params(_ random: inout SeededRandom) -> AddParams {
        let texts = ["", "a", "ü 日本", "quote \" back \\", "k=v", "X-A: 1", "tab\there", "/slash/", "😀"]
        func text() -> String { texts.randomElement(using: &random)! }
        func maybe() -> Bool { random.next() % 2 == 0 }
        var params = AddParams(source: "/tmp/\(text())", destination: "https://h/\(text())")
        if maybe() { params.protocol = UploadProtocol.allCases.randomElement(using: &random) }
        if maybe() { params.headers = (0..<random.next() % 3).map { _ in text() } }
        if maybe() { params.user = text() }
        if maybe() { params.chunkSize = ["8M", "1048576"].randomElement(using: &random) }
        if maybe() { params.priority = Int(random.next() % 200) - 100 }
        if maybe() { params.snapshot = SnapshotMode.allCases.randomElement(using: &random) }
        if maybe() { params.clientToken = text() }
        if maybe() { params.metadata = [text(): text()] }
        if maybe() { params.batch = JobID(random.next() % 1_000_000 + 1) }
        if maybe() { params.newBatch = maybe() }
        if maybe() { params.jobFields = ["id", "batch"] }
        return params
    }

    /// Batches as `uploadctl add` writes them are read directly, alike.
    @Test func batchesAsUploadctlWritesThemAreReadDirectly() throws {
        var random = SeededRandom()
        for _ in 0..<200 {
            var requests: [RPCRequest] = []
            for index in 0..<Int(1 + random.next() % 5) {
                let id: JSONValue = index % 2 == 0 ? .number(Double(index + 1)) : .string("r\(index)")
                let params = try JSONValue(encoding: Self.params(&random))
                requests.append(RPCRequest(id: id, method: "job.add", params: params))
            }
            let line = try RPCRequest.jsonBytes(batch: requests)
            #expect(try Self.checkAgrees(line), "seed \(random.seed)")
        }
    }

    /// Lines cut, changed and stretched at random: whatever the direct reading takes, the general
    /// reading takes alike.
    @Test func changedLinesAreReadAlikeOrLeftToTheGeneralReading() throws {
        var random = SeededRandom()
        let insertions = [
            " ", "\n", ",", "}", "]", "\"", "\"id\":1,", "\"x\":1,", "\"source\":\"/b\",", "\"priority\":null,",
            "\"method\":\"job.add\",", "\\u00e9", "\\/", "\\ud800", "[[[[1]]]]", "1e999", "\u{1}", "null",
            "\"jsonrpc\":\"2.0\",",
        ]
        var direct = 0
        for _ in 0..<3_000 {
            let request = RPCRequest(
                id: .number(Double(random.next() % 100)), method: "job.add",
                params: try JSONValue(encoding: Self.params(&random)))
            var line = try RPCRequest.jsonBytes(batch: [request, request])
            for _ in 0..<(random.next() % 3) {
                let at = Int(random.next() % UInt64(line.count + 1))
                switch random.next() % 3 {
                case 0: line.insert(contentsOf: Array(insertions.randomElement(using: &random)!.utf8), at: at)
                case 1: if at < line.count { line.remove(at: at) }
                default: line = Array(line[..<at])
                }
            }
            if try Self.checkAgrees(line) { direct += 1 }
        }
        #expect(direct > 300, "the direct reading took \(direct) of 3,000 lines")
    }

    @Test(arguments: [
        #"[]"#,
        #"[{"jsonrpc":"2.0","method":"job.add","params":{"source":"/a","destination":"file:///o/"}}]"#,
        #"[{"jsonrpc":"2.0","id":null,"method":"job.add","params":{"source":"/a","destination":"file:///o/"}}]"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.list","params":{"source":"/a","destination":"file:///o/"}}]"#,
        #"[{"jsonrpc":"2.0","id":1,"id":2,"method":"job.add","params":{"source":"/a","destination":"file:///o/"}}]"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","source":"/b","destination":"file:///o/"}}]"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"file:///o/","x":1}}]"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"file:///o/"},"x":1}]"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"file:///o/"}}] x"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"file:///o/","protocol":"gopher"}}]"#,
        #"{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"file:///o/"}}"#,
    ])
    func otherLinesAreLeftToTheGeneralReading(line: String) {
        #expect(PlainAddBatch.read(Array(line.utf8)) == nil)
    }

    /// A hostile line nested 100,000 deep inside a request's params is refused at the general
    /// reading's depth, not read into the thread's stack.
    @Test func deepNestingInParamsIsRefusedAtTheLimit() throws {
        let nested = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let line =
            Array(
                #"[{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"/a","destination":"/o","headers":"#
                    .utf8)
            + Array(nested.utf8) + Array("}}]".utf8)
        #expect(PlainAddBatch.read(line) == nil)
        #expect((try? JSONValue(parsing: line)) == nil)
    }
}
