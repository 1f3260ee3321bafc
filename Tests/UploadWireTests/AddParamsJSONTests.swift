import Foundation
import TestSupport
import Testing

@testable import UploadWire

/// `AddParams(json:)`, the daemon's fast reading of `job.add` params, against `AddParams.decode`:
/// what the fast one reads it reads alike, and it never takes what the decoder refuses.
@Suite struct AddParamsJSONTests {
    /// The params as JSON text with sorted keys: `AddParams` is not `Equatable`.
    static func text(_ params: AddParams?) throws -> String? {
        try params.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
    }

    static func checkAgrees(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let value = try JSONValue(parsing: Array(json.utf8))
        let decoded = try? AddParams.decode(from: value)
        let fast = AddParams(json: value)
        if let fast {
            #expect(try text(fast) == text(decoded), "\(json)", sourceLocation: sourceLocation)
        }
    }

    @Test func randomParamsReadAlike() throws {
        var random = SeededRandom()
        let texts = ["", "a", "ü 日本", "quote \" back \\", "k=v", "X-A: 1"]
        func text() -> String { texts.randomElement(using: &random)! }
        func maybe() -> Bool { random.next() % 2 == 0 }
        for _ in 0..<500 {
            var params = AddParams(source: "/tmp/\(text())", destination: "https://h/\(text())")
            if maybe() { params.protocol = UploadProtocol.allCases.randomElement(using: &random) }
            if maybe() { params.headers = (0..<random.next() % 3).map { _ in text() } }
            if maybe() { params.fields = (0..<random.next() % 3).map { _ in text() } }
            if maybe() { params.user = text() }
            if maybe() { params.chunkSize = ["8M", "1048576", "", "x"].randomElement(using: &random) }
            if maybe() { params.priority = Int(random.next() % 200) - 100 }
            if maybe() { params.snapshot = SnapshotMode.allCases.randomElement(using: &random) }
            if maybe() { params.image = text() }
            if maybe() { params.clientToken = text() }
            if maybe() { params.metadata = [text(): text(), "name": text()] }
            if maybe() { params.umask = Int(random.next() % 512) }
            if maybe() { params.batch = JobID(random.next() % 1_000_000 + 1) }
            if maybe() { params.newBatch = maybe() }
            if maybe() { params.jobFields = ["id", "batch"] }
            if maybe() { params.fileField = text() }
            let json = try #require(try Self.text(params))
            let fast = try #require(AddParams(json: try JSONValue(parsing: Array(json.utf8))), "seed \(random.seed)")
            #expect(try Self.text(fast) == json, "seed \(random.seed)")
        }
    }

    /// The other forms the decoder takes, and what it refuses: the fast reading either agrees or
    /// leaves it to the decoder (nil).
    @Test(arguments: [
        #"{"source":"/a","destination":"file:///b/"}"#,
        #"{"source":"/a","destination":"file:///b/","fields":{"z":"1","a":"2"},"chunk_size":8388608}"#,
        #"{"source":"/a","destination":"file:///b/","headers":null,"batch":null,"new_batch":null,"umask":null}"#,
        #"{"source":"/a","destination":"file:///b/","chunk_size":1.5}"#,
        #"{"source":"/a","destination":"file:///b/","chunk_size":"8M","priority":2.5}"#,
        #"{"source":"/a","destination":"file:///b/","fields":{"a":1}}"#,
        #"{"source":"/a","destination":"file:///b/","fields":"a=b"}"#,
        #"{"source":"/a","destination":"file:///b/","headers":["a",1]}"#,
        #"{"source":"/a","destination":"file:///b/","metadata":{"a":null}}"#,
        #"{"source":"/a","destination":"file:///b/","protocol":"ftp"}"#,
        #"{"source":"/a","destination":"file:///b/","snapshot":"maybe"}"#,
        #"{"source":"/a","destination":"file:///b/","batch":-1}"#,
        #"{"source":"/a","destination":"file:///b/","new_batch":1}"#,
        #"{"source":"/a","destination":"file:///b/","umask":"022"}"#,
        #"{"source":"/a","destination":"file:///b/","file_field":"userfile"}"#,
        #"{"source":"/a","destination":"file:///b/","file_field":7}"#,
        #"{"source":"/a","destination":"file:///b/","colour":"red"}"#,
        #"{"source":null,"destination":"file:///b/"}"#,
        #"{"destination":"file:///b/"}"#,
        #"{"source":"/a","destination":7}"#,
        #"["/a"]"#,
    ])
    func otherFormsAgreeOrAreLeftToTheDecoder(json: String) throws {
        try Self.checkAgrees(json)
        let value = try JSONValue(parsing: Array(json.utf8))
        if (try? AddParams.decode(from: value)) == nil { #expect(AddParams(json: value) == nil) }
    }

    @Test func theCommonFormsAreReadFast() throws {
        let json = #"{"source":"/a","destination":"file:///b/","fields":{"z":"1"},"chunk_size":8,"batch":4}"#
        let fast = try #require(AddParams(json: try JSONValue(parsing: Array(json.utf8))))
        #expect(fast.fields == ["z=1"] && fast.chunkSize == "8" && fast.batch == JobID(4))
    }
}
