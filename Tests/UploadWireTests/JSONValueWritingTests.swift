import Foundation
import Testing

@testable import UploadWire

/// Requests are written by `JSONWriter`, not JSONEncoder: the text must be what JSONEncoder
/// (`JSONCoding.encoder`) writes, byte for byte, for every kind of value.
@Suite("JSON text of values and requests")
struct JSONValueWritingTests {
    static let values: [JSONValue] = [
        .null, .bool(true), .bool(false), .number(0), .number(-0.0), .number(42), .number(-7),
        .number(1.5), .number(-2.25), .number(1e15), .number(123_456_789_012_345), .number(1e300),
        .number(0.1), .number(3.0e-7),
        .string(""), .string("plain"), .string("quote \" backslash \\ slash / tab \t nl \n cr \r"),
        .string("\u{1} \u{8} \u{c} \u{1f} control"), .string("é ü 中文 🎉"),
        .array([]), .array([.number(1), .string("a"), .null, .array([.bool(true)])]),
        .object([:]),
        .object(["b": .number(2), "a": .string("x"), "Z": .null, "nested": .object(["k": .array([.number(1.25)])])]),
        .object(["source": .string("/home/u/pictures/p 1.jpg"), "destination": .string("https://h/dav/x/")]),
    ]

    @Test(arguments: values)
    func aValueIsWrittenAsJSONEncoderWritesIt(value: JSONValue) throws {
        let expected = [UInt8](try JSONCoding.encoder.encode(value))
        #expect(try value.jsonBytes() == expected, "\(String(decoding: expected, as: UTF8.self))")
        #expect(try JSONValue(parsing: value.jsonBytes()) == value)
    }

    @Test func requestsAndBatchesAreWrittenAsJSONEncoderWritesThem() throws {
        let requests = [
            RPCRequest(id: .number(1), method: "job.add", params: Self.values.last),
            RPCRequest(id: .string("a-b"), method: "job.list"),
            RPCRequest(id: nil, method: "events.subscribe", params: .object(["jobs": .array([.number(3)])])),
        ]
        for request in requests {
            #expect(try request.jsonBytes() == [UInt8](try JSONCoding.encoder.encode(request)))
        }
        #expect(try RPCRequest.jsonBytes(batch: requests) == [UInt8](try JSONCoding.encoder.encode(requests)))
    }

    @Test func aNumberJSONCannotHoldIsRefused() {
        #expect(throws: EncodingError.self) { try JSONValue.number(.nan).jsonBytes() }
        #expect(throws: EncodingError.self) { try JSONValue.array([.number(.infinity)]).jsonBytes() }
    }

    @Test func integersAndStringsAreWrittenAsSwiftPrintsAndJSONEncoderEscapesThem() throws {
        for value: Int64 in [0, 7, -1, 9, 10, 99, 100, -1000, 1_234_567_890, .max, .min] {
            var writer = JSONWriter()
            writer.integer(value)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(value))
        }
        for text in ["", "plain/path.bin", "a\"b", "back\\slash", "tab\tnew\nline\u{1}", "ünïcødé ✓"] {
            var writer = JSONWriter()
            writer.string(text)
            #expect(writer.bytes == Array(try JSONCoding.encoder.encode(text)), "\(text)")
        }
    }
}
