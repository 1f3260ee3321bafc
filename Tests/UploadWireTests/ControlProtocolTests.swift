import Foundation
import Testing

@testable import UploadWire

@Suite("StrictParams and JSONValue")
struct ControlProtocolTests {
    func json(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    func strictError<T: StrictParams>(_ type: T.Type, _ text: String) throws -> String {
        let value = try json(text)
        let error = #expect(throws: RPCError.self) { try T.decode(from: value) }
        #expect(error?.code == RPCError.invalidParamsCode)
        return error?.message ?? ""
    }

    @Test func addParamsDecodeWithSnakeCaseNames() throws {
        let params = try AddParams.decode(
            from: json(
                """
                {"source":"/a","destination":"file:///d/","protocol":"file","chunk_size":1048576,
                 "client_token":"t","fields":{"b":"2","a":"1"},"priority":3,"snapshot":"none","headers":["X: y"]}
                """))
        #expect(params.source == "/a")
        #expect(params.protocol == .file)
        #expect(params.chunkSize == "1048576")
        #expect(params.clientToken == "t")
        #expect(params.fields == ["a=1", "b=2"])
        #expect(params.priority == 3)
        #expect(params.snapshot == SnapshotMode.none)
        #expect(params.headers == ["X: y"])
    }

    @Test func chunkSizeAsText() throws {
        let params = try AddParams.decode(from: json(#"{"source":"/a","destination":"x:y","chunk_size":"8M"}"#))
        #expect(params.chunkSize == "8M")
    }

    @Test func unknownKeyIsRejectedByName() throws {
        let message = try strictError(AddParams.self, #"{"source":"/a","destinaton":"x:y"}"#)
        #expect(message.contains("unknown key 'destinaton'"))
    }

    @Test func wrongTypeNamesTheKey() throws {
        #expect(
            try strictError(AddParams.self, #"{"source":5,"destination":"x:y"}"#).contains("'source' must be String"))
        #expect(
            try strictError(AddParams.self, #"{"source":"/a","destination":"x:y","priority":"high"}"#).contains(
                "'priority'"))
        #expect(try strictError(JobSelection.self, #"{"id":"seven"}"#).contains("'id'"))
        #expect(try strictError(ListParams.self, #"{"states":["queued","sleeping"]}"#).contains("'states."))
    }

    @Test func missingKeyIsNamed() throws {
        #expect(try strictError(AddParams.self, #"{"source":"/a"}"#).contains("'destination' is required"))
    }

    @Test func badEnumValueNamesTheKey() throws {
        #expect(
            try strictError(AddParams.self, #"{"source":"/a","destination":"x:y","protocol":"ftp"}"#).contains(
                "'protocol'"))
    }

    @Test func paramsMustBeAnObject() throws {
        #expect(try strictError(JobSelection.self, "[1,2]").contains("params must be an object"))
    }

    @Test func missingParamsAreAnEmptyObject() throws {
        _ = try NoParams.decode(from: nil)
        let selection = try JobSelection.decode(from: nil)
        #expect(selection.namedIDs.isEmpty)
        #expect(try strictError(NoParams.self, #"{"x":1}"#).contains("unknown key 'x'"))
    }

    @Test func selectionNamesIDsOnceInOrder() throws {
        let selection = try JobSelection.decode(from: json(#"{"id":3,"ids":[5,3,1,5]}"#))
        #expect(selection.namedIDs == [JobID(3), JobID(5), JobID(1)])
    }

    @Test(arguments: [
        "null", "true", "false", "0", "-2.5", "12345678901", "1e300", "\"text with \\\"quotes\\\" and é\"", "[]", "{}",
        "[1,\"a\",null,true,{\"k\":[2.25]}]", "{\"a\":{\"b\":[{\"c\":null}]},\"n\":-1}",
    ])
    func jsonValueRoundTrip(text: String) throws {
        let value = try json(text)
        let encoded = try JSONCoding.encoder.encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: encoded) == value)
        // The same document as Foundation reads it, so no value changed kind on the way.
        let original = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
        let again = try JSONSerialization.jsonObject(with: encoded, options: .fragmentsAllowed)
        #expect((original as? NSObject) == (again as? NSObject))
    }

    @Test func jsonValueKeepsKinds() throws {
        #expect(try json("true") == .bool(true))
        #expect(try json("1") == .number(1))
        #expect(try json("\"1\"") == .string("1"))
        #expect(try json("null") == .null)
        #expect(String(decoding: try JSONCoding.encoder.encode(JSONValue.number(3)), as: UTF8.self) == "3")
        #expect(String(decoding: try JSONCoding.encoder.encode(JSONValue.number(2.5)), as: UTF8.self) == "2.5")
    }

    @Test func jsonValueEncodesAndDecodesTypes() throws {
        let selection = JobSelection(id: JobID(4), ids: nil, all: true)
        let value = try JSONValue(encoding: selection)
        #expect(value.objectValue?["id"] == .number(4))
        #expect(value.objectValue?["all"] == .bool(true))
        #expect(try value.decode(JobSelection.self).namedIDs == [JobID(4)])
    }

    @Test func responseHasExactlyOneOfResultAndError() throws {
        let ok = try JSONSerialization.jsonObject(
            with: JSONCoding.encoder.encode(RPCResponse(id: .number(1), result: .null)))
        let okObject = try #require(ok as? [String: Any])
        #expect(okObject["result"] is NSNull)
        #expect(okObject["error"] == nil)
        let failed = try JSONSerialization.jsonObject(
            with: JSONCoding.encoder.encode(RPCResponse(id: .string("a"), error: .methodNotFound("x.y"))))
        let failedObject = try #require(failed as? [String: Any])
        #expect(failedObject["result"] == nil)
        #expect((failedObject["error"] as? [String: Any])?["code"] as? Int == -32601)
        #expect(failedObject["jsonrpc"] as? String == "2.0")
    }

    @Test func linesAroundEncodedResultsAreValidJSONRPC() throws {
        let answer = try RPCLine.result(id: .string("a\"b"), encodedResult: Array(#"{"jobs":[1,2]}"#.utf8))
        let decoded = try JSONCoding.decoder.decode(JSONValue.self, from: Data(answer))
        #expect(
            decoded
                == .object([
                    "id": .string("a\"b"), "jsonrpc": .string("2.0"),
                    "result": .object(["jobs": .array([.number(1), .number(2)])]),
                ]))
        // A result with room to spare becomes the line in its own buffer, with room for the
        // newline; the bytes are the same either way.
        var roomy = JSONWriter()
        roomy.bytes += #"{"jobs":[1,2]}"#.utf8
        roomy.reserveLineRoom(forMore: 0)
        let result = roomy.bytes
        roomy = JSONWriter()  // `result` is now the only reference, as a daemon's answer is
        let buffer = result.withUnsafeBufferPointer { $0.baseAddress }
        var inPlace = try RPCLine.result(id: .string("a\"b"), encodedResult: consume result)
        #expect(inPlace == answer)
        inPlace.append(UInt8(ascii: "\n"))
        #expect(inPlace.withUnsafeBufferPointer { $0.baseAddress } == buffer, "no new buffer")
        let event = try RPCLine.notification(method: "job.state", encodedParams: Array(#"{"id":3}"#.utf8))
        let decodedEvent = try JSONCoding.decoder.decode(RPCNotification.self, from: Data(event))
        #expect(decodedEvent.method == "job.state")
        #expect(decodedEvent.params == .object(["id": .number(3)]))
    }
}

@Suite("daemon.limit params")
struct LimitParamsTests {
    @Test func ratesAsNumbersSizesOrOff() throws {
        #expect(try LimitParams(rate: .number(2000)).bytesPerSecond() == 2000)
        #expect(try LimitParams(rate: .string("5M")).bytesPerSecond() == 5 << 20)
        #expect(try LimitParams(rate: .string("off")).bytesPerSecond() == nil)
        #expect(try LimitParams(rate: .null).bytesPerSecond() == nil)
        #expect(try LimitParams(rate: nil).bytesPerSecond() == nil)
        #expect(throws: RPCError.self) { try LimitParams(rate: .number(-1)).bytesPerSecond() }
        #expect(throws: RPCError.self) { try LimitParams(rate: .number(1.5)).bytesPerSecond() }
        #expect(throws: RPCError.self) { try LimitParams(rate: .string("fast")).bytesPerSecond() }
        #expect(throws: RPCError.self) { try LimitParams(rate: .bool(true)).bytesPerSecond() }
    }

    /// `limit 1` was taken as 1 byte a second: below 1 KiB/s a limit is refused, saying so.
    @Test func ratesBelowTheFloorAreRefused() throws {
        #expect(try LimitParams(rate: .number(1024)).bytesPerSecond() == 1024)
        for rate: JSONValue in [.number(1), .string("1"), .string("1023")] {
            let error = #expect(throws: RPCError.self) { try LimitParams(rate: rate).bytesPerSecond() }
            #expect(error?.message.contains("below the lowest, 1 KiB/s") == true, "\(String(describing: error))")
        }
    }
}
