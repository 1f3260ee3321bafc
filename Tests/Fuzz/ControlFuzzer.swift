import Foundation
// libFuzzer entry point: request lines from a hostile client must give errors, never crashes, and
// what UploadCore promises the daemon's control connection must hold:
// - JSON: the daemon's parser reads what JSONDecoder reads as the same value;
// - framing: one line out per newline in, however the bytes arrive (split anywhere, the same lines);
// - answers: whatever id a request carries, its answer (a result or an error) is one line, with no
//   newline inside, whose id reads back as the request's;
// - params the daemon accepts read back the same once written out (what it states is what it took).
// (The daemon's ControlHandler needs the scheduler, and so all of the daemon and its C libraries:
// it is tested by Tests/UploadDaemonTests/ControlHandlerTests.swift, not built here.)
// Built by contrib/scripts/fuzz together with UploadCore's sources.
import UploadWire

@_cdecl("LLVMFuzzerTestOneInput")
public func controlFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var framer = LineFramer(maxLineLength: 4096)
    let outputs = framer.feed(bytes)
    checkFraming(bytes, outputs)

    for output in outputs {
        guard case .line(let line) = output else { continue }
        let decoded = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(line))
        guard let value = try? JSONValue(parsing: line) else { continue }
        // Where Foundation's JSONDecoder reads the line too, it reads the same value. (Each refuses
        // some lines the other takes: nesting past 512, numbers past a Double, lone surrogates.)
        precondition(decoded == nil || decoded == value, "JSONDecoder reads \(decoded!), the parser \(value)")
        // A value that was read writes out and reads back as itself.
        let encoded = try? JSONCoding.encoder.encode(value)
        precondition(
            encoded.flatMap { try? JSONValue(parsing: Array($0)) } == value,
            "JSON value does not survive a round trip: \(value)")
        let requests: [JSONValue]
        if case .array(let items) = value { requests = items } else { requests = [value] }
        for request in requests {
            checkAnswers(to: request)
            let params = request.objectValue?["params"] ?? request
            if let add = try? AddParams.decode(from: params) { _ = try? JobSpecBuilder.build(add) }
            checkReadsBack(JobSelection.self, params)
            checkReadsBack(ListParams.self, params)
            checkReadsBack(SubscribeParams.self, params)
            if let text = request.objectValue?["destination"], case .string(let destination) = text {
                _ = try? Destination.parse(destination)
            }
        }
    }
    return 0
}

/// The same lines, in the same order, when the bytes come in two pieces split anywhere; one line
/// per newline up to the first overlong line; no newline inside a line.
private func checkFraming(_ bytes: [UInt8], _ outputs: [LineFramer.Output]) {
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
    var split = LineFramer(maxLineLength: 4096)
    let pieces = split.feed(bytes[..<cut]) + split.feed(bytes[cut...])
    precondition(pieces == outputs, "the lines depend on how the bytes arrived (split at \(cut))")
    let lines = outputs.compactMap { output -> [UInt8]? in
        if case .line(let line) = output { return line }
        return nil
    }
    if !outputs.contains(.tooLong) {
        precondition(lines.count == bytes.count(where: { $0 == UInt8(ascii: "\n") }), "not one line per newline")
    }
    for line in lines { precondition(!line.contains(UInt8(ascii: "\n")) && line.count <= 4096) }
}

/// A request's answer, success or error, is one line that names the request's id.
private func checkAnswers(to request: JSONValue) {
    let id: JSONValue
    switch request.objectValue?["id"] {
    case .some(.string(let text)): id = .string(text)
    case .some(.number(let number)): id = .number(number)
    default: id = .null  // what the daemon answers a request with no usable id
    }
    let method: String
    if case .string(let name)? = request.objectValue?["method"] { method = name } else { method = "" }
    var answers: [[UInt8]] = []
    if let error = try? JSONCoding.encoder.encode(RPCResponse(id: id, error: .methodNotFound(method))) {
        answers.append([UInt8](error))
    } else {
        preconditionFailure("the error answer to id \(id) cannot be written")
    }
    let result = (try? JSONCoding.encoder.encode(RPCResponse(id: id, result: request))).map { [UInt8]($0) }
    precondition(result != nil, "an answer echoing the request cannot be written: \(request)")
    answers.append(result!)
    if let line = try? RPCLine.result(id: id, encodedResult: result!) {
        answers.append(line)
    } else {
        preconditionFailure("RPCLine cannot answer id \(id)")
    }
    for answer in answers {
        precondition(!answer.contains(UInt8(ascii: "\n")), "an answer holds a newline: two lines on the wire")
        let decoded = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(answer))
        precondition(decoded?.objectValue?["id"] == id, "the answer's id is not the request's \(id)")
        precondition(decoded?.objectValue?["jsonrpc"] == .string("2.0"))
    }
}

/// Params the daemon accepts, written out and decoded again, are accepted again and write out the same.
private func checkReadsBack<T: StrictParams & Encodable>(_ type: T.Type, _ params: JSONValue) {
    guard let decoded = try? T.decode(from: params) else { return }
    guard let value = try? JSONValue(encoding: decoded) else { preconditionFailure("\(T.self) cannot be written") }
    guard let again = try? T.decode(from: value) else {
        preconditionFailure("\(T.self) written out is refused: \(value)")
    }
    precondition((try? JSONValue(encoding: again)) == value, "\(T.self) does not read back the same: \(value)")
}
