import Foundation
import TestSupport
import Testing

@testable import UploadWire

/// `JSONValue.decode` walks the tree (JSONValueDecoder); it must decode, and fail, exactly as
/// JSONDecoder does on the same value as text, which is what it replaced.
@Suite("JSONValueDecoder")
struct JSONValueDecoderTests {
    func value(_ text: String) throws -> JSONValue {
        try JSONCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
    }

    /// The way JSONDecoder decodes the same value: through text.
    func throughText<T: Decodable>(_ type: T.Type, _ value: JSONValue) throws -> T {
        try JSONCoding.decoder.decode(type, from: JSONCoding.encoder.encode(value))
    }

    /// What a DecodingError says, without its wording: its kind, the path and the type it names.
    func summary(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error as? DecodingError {
        case .typeMismatch(let type, let context)?: return "typeMismatch \(type) at \(path(context))"
        case .valueNotFound(let type, let context)?: return "valueNotFound \(type) at \(path(context))"
        case .keyNotFound(let key, let context)?: return "keyNotFound \(key.stringValue) at \(path(context))"
        case .dataCorrupted(let context)?: return "dataCorrupted at \(path(context))"
        default: return "\(error)"
        }
    }

    /// Decodes `text` both ways; the results, or the errors, must agree.
    func agree<T: Codable>(_ type: T.Type, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let json = try value(text)
        let direct = Result { try json.decode(type) }
        let viaText = Result { try throughText(type, json) }
        switch (direct, viaText) {
        case (.success(let a), .success(let b)):
            #expect(
                try JSONValue(encoding: a) == JSONValue(encoding: b), "\(T.self) from \(text)",
                sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            // A number out of an integer's range: JSONDecoder's error has an empty coding path
            // (a Foundation quirk); ours names the key, so the message says which one.
            if case .dataCorrupted(let context)? = b as? DecodingError, context.codingPath.isEmpty,
                summary(a).hasPrefix("dataCorrupted at ")
            {
                break
            }
            #expect(summary(a) == summary(b), "\(T.self) from \(text)", sourceLocation: sourceLocation)
        default:
            Issue.record(
                "\(T.self) from \(text): \(direct) but JSONDecoder: \(viaText)", sourceLocation: sourceLocation)
        }
    }

    @Test func paramsDecodeAndFailAsJSONDecoderDoes() throws {
        for text in [
            #"{"source":"/a","destination":"file:///d/"}"#,
            #"{"source":"/a","destination":"x:y","protocol":"tus","chunk_size":"8M","priority":-3,"batch":7}"#,
            #"{"source":"/a","destination":"x:y","fields":{"b":"2","a":"1"},"metadata":{"k":"v"},"umask":18}"#,
            #"{"source":"/a","destination":"x:y","fields":["a=1"],"headers":["X: y"],"new_batch":true}"#,
            #"{"source":"/a","destination":"x:y","snapshot":null,"image":null}"#,
            #"{"source":5,"destination":"x:y"}"#,
            #"{"destination":"x:y"}"#,
            #"{"source":null,"destination":"x:y"}"#,
            #"{"source":"/a","destination":"x:y","protocol":"carrier-pigeon"}"#,
            #"{"source":"/a","destination":"x:y","priority":1.5}"#,
            #"{"source":"/a","destination":"x:y","priority":1e30}"#,
            #"{"source":"/a","destination":"x:y","batch":-1}"#,
            #"{"source":"/a","destination":"x:y","headers":["X: y",3]}"#,
            #"{"source":"/a","destination":"x:y","headers":"X: y"}"#,
            #"{"source":"/a","destination":"x:y","new_batch":"yes"}"#,
            #"[1,2]"#,
            #""text""#,
        ] {
            try agree(AddParams.self, text)
        }
        for text in [#"{"ids":[1,2,3]}"#, #"{"ids":[1,"2"]}"#, #"{"id":"seven"}"#, #"{}"#, #"{"states":["failed"]}"#] {
            try agree(ListParams.self, text)
        }
        for text in [#"{"id":1,"priority":5}"#, #"{"id":1}"#, #"{"id":1,"priority":null}"#] {
            try agree(PriorityParams.self, text)
        }
    }

    @Test func jobsWithDatesAndNestedValuesDecodeAsJSONDecoderDoes() throws {
        var random = SeededRandom(seed: 11)
        for _ in 0..<300 {
            let job = JobInfoJSONTests.randomJob(&random)
            let text = String(decoding: job.jsonBytes, as: UTF8.self)
            try agree(JobInfo.self, text)
            let decoded = try value(text).decode(JobInfo.self).createdAt
            #expect(abs(decoded.timeIntervalSince(job.createdAt)) < 0.002)  // milliseconds on the wire
        }
        let job = JobInfoJSONTests.randomJob(&random)
        let text = String(decoding: job.jsonBytes, as: UTF8.self)
        try agree(JobList.self, #"{"jobs":[\#(text),\#(text)]}"#)
        // A date that is not one fails as JSONDecoder fails.
        try agree(JobInfo.self, text.replacingOccurrences(of: "\"created_at\":\"", with: "\"created_at\":\"x"))
    }

    /// The dates daemons write are read by hand (`JSONCoding.utcDate`); they must read as the
    /// ISO 8601 format style reads them, and what is not such a date must go to the format style.
    @Test func datesInTheFormDaemonsWriteReadAsTheFormatStyleReadsThem() throws {
        let withMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let wholeSeconds = Date.ISO8601FormatStyle()
        var random = SeededRandom(seed: 5)
        for _ in 0..<2_000 {
            // 1970 to 2200, in milliseconds, as the wire carries them.
            let date = Date(timeIntervalSince1970: Double(random.next() % 7_258_118_400_000) / 1000)
            var writer = JSONWriter()
            writer.date(date)
            let written = String(decoding: writer.bytes.dropFirst().dropLast(), as: UTF8.self)
            let byHand = try #require(JSONCoding.utcDate(from: written), "\(written)")
            #expect(abs(byHand.timeIntervalSince(try withMilliseconds.parse(written))) < 1e-6, "\(written)")
            let whole = wholeSeconds.format(date)
            #expect(JSONCoding.utcDate(from: whole) == (try wholeSeconds.parse(whole)), "\(whole)")
        }
        for notByHand in [
            "2026-12-01T11:37:42+01:00", "2026-12-01T11:37:42.81Z", "2026-12-01 11:37:42Z", "2026-02-30T11:37:42Z",
            "2026-13-01T11:37:42Z", "2026-12-01T24:00:00Z", "2026-12-01T11:37:4xZ", "",
        ] {
            #expect(JSONCoding.utcDate(from: notByHand) == nil, "\(notByHand)")
        }
        // An offset is still a date: the format style reads it.
        #expect(JSONCoding.date(from: "2026-12-01T12:37:42+01:00") == JSONCoding.utcDate(from: "2026-12-01T11:37:42Z"))
    }

    @Test func aJSONValueInsideDecodesAsItself() throws {
        let request = try value(#"{"jsonrpc":"2.0","id":3,"method":"job.add","params":{"a":[1,null,{"b":false}]}}"#)
        let decoded = try request.decode([String: JSONValue].self)
        #expect(decoded["params"] == (try value(#"{"a":[1,null,{"b":false}]}"#)))
        #expect(try JSONValue.null.decode(JSONValue?.self) == nil)
        #expect(try JSONValue.null.decode(JSONValue.self) == .null)
    }
}
