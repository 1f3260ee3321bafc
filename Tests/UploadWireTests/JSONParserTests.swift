import Foundation
import Testing

@testable import UploadWire

/// `JSONValue(parsing:)` replaced JSONDecoder for every line the daemon and its clients read: it
/// must read what JSONDecoder reads, as the same value, and refuse what is not JSON, saying where.
@Suite("JSONParser")
struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

    func viaJSONDecoder(_ text: String) throws -> JSONValue {
        try JSONCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":7,"method":"job.add","params":{"source":"/a b/ç.jpg","priority":-3}}"#,
        #"[1, -0, 0.5, -12.25e-3, 1E+2, 123456789012345678, 9007199254740993, 1.7976931348623157e308, 5e-324]"#,
        #"  {"a" : [ true , false , null , { } , [ ] , "" ] }  "#,
        "\t\r\n[\"tab\\tnew\\nline\\r\\\"quote\\\" back\\\\slash \\/ \\b\\f\"]\n",
        #"["\u00e9\u4e2d\ud83d\ude00\u0000", "plain é 中 😀"]"#,
        #"{"dup":1,"dup":2}"#,
        "0", "-1", "\"s\"", "true", "null",
    ])
    func readsWhatJSONDecoderReads(text: String) throws {
        #expect(try parse(text) == viaJSONDecoder(text))
    }

    @Test func escapesAndNumbersReadAsTheyMean() throws {
        #expect(try parse(#""\u00e9\ud83d\ude00\n""#) == .string("é😀\n"))
        #expect(try parse("[0, -0, 10, 1e2, 2.5]") == .array([0, 0, 10, 100, 2.5].map { .number($0) }))
        #expect(try parse("12345678901234567") == .number(12_345_678_901_234_568))
        #expect(try parse(#"{"a":1,"a":2}"#) == .object(["a": .number(1)]), "a repeated key: the first counts")
    }

    /// Random trees written by JSONEncoder read back as themselves.
    @Test func randomValuesSurviveEncoding() throws {
        var random = SystemRandomNumberGenerator()
        func tree(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2:
                return .number(
                    Bool.random(using: &random)
                        ? Double(Int64.random(in: -1_000_000_000...1_000_000_000, using: &random))
                        : Double.random(in: -1e12...1e12, using: &random))
            case 3:
                let scalars = (0..<Int.random(in: 0..<12, using: &random)).map { _ in
                    Character(Unicode.Scalar([0x22, 0x5C, 0x0A, 0x01, 0xE9, 0x4E2D, 0x1F600, 0x41].randomElement()!)!)
                }
                return .string(String(scalars))
            case 4: return .array((0..<Int.random(in: 0..<4, using: &random)).map { _ in tree(depth + 1) })
            default:
                return .object(
                    Dictionary(
                        (0..<Int.random(in: 0..<4, using: &random)).map { ("k\($0)é", tree(depth + 1)) },
                        uniquingKeysWith: { a, _ in a }))
            }
        }
        for _ in 0..<300 {
            let value = tree(0)
            let bytes = Array(try JSONCoding.encoder.encode(value))
            #expect(try JSONValue(parsing: bytes) == value)
        }
    }

    @Test(arguments: [
        ("", "the text ends where a value should be", 0),
        ("   ", "the text ends where a value should be", 3),
        ("{\"a\":1,}", "an object's key must be a string", 7),
        ("[1,]", "not the start of a JSON value", 3),
        ("[1 2]", "',' or ']' expected", 3),
        ("{\"a\" 1}", "':' expected", 5),
        ("{'a':1}", "an object's key must be a string", 1),
        ("01", "a number cannot start with 0", 1),
        ("1.", "a number needs a digit here", 2),
        (".5", "not the start of a JSON value", 0),
        ("-", "a number needs a digit here", 1),
        ("1e", "a number needs a digit here", 2),
        ("1e400", "a number out of range", 0),
        ("-1e400", "a number out of range", 0),
        ("\"open", "the text ends inside a string", 5),
        ("\"a\tb\"", "a control character inside a string (escape it)", 2),
        ("\"\\x\"", "an unknown escape in a string", 2),
        ("\"\\u12\"", "a \\u escape needs four hex digits", 3),
        ("\"\\ud800\"", "a lone surrogate escape in a string", 7),
        ("\"\\ud800\\u0041\"", "a lone surrogate escape in a string", 13),
        ("\"\\udc00\"", "a lone surrogate escape in a string", 7),
        ("tru", "not the start of a JSON value", 0),
        ("nul", "not the start of a JSON value", 0),
        ("{} x", "text after the JSON value", 3),
        ("[1]]", "text after the JSON value", 3),
        ("NaN", "not the start of a JSON value", 0),
    ])
    func refusesWhatIsNotJSONSayingWhere(text: String, reason: String, offset: Int) {
        let error = #expect(throws: JSONSyntaxError.self) { try parse(text) }
        #expect(error == JSONSyntaxError(offset: offset, reason: reason), "\(text)")
    }

    @Test func refusesBytesThatAreNotUTF8() {
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
            let line = Array("[\"a".utf8) + bad + Array("b\"]".utf8)
            let error = #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: line) }
            #expect(error?.reason == "a string that is not valid UTF-8")
            #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: bad) }
        }
    }

    @Test func nestingStopsAtTheLimitWithoutTakingTheStack() throws {
        let deepest = JSONValue.maximumDepth
        let fits = String(repeating: "[", count: deepest) + String(repeating: "]", count: deepest)
        #expect(try parse(fits) != .null)
        let tooDeep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = #expect(throws: JSONSyntaxError.self) { try parse(tooDeep) }
        #expect(error?.offset == deepest)
        let objects =
            String(repeating: "{\"a\":", count: deepest + 1) + "1" + String(repeating: "}", count: deepest + 1)
        #expect(throws: JSONSyntaxError.self) { try parse(objects) }
    }
}
