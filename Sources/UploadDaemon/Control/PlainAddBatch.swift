import UploadWire

/// A line that is a batch of plain `job.add` requests, the line `uploadctl add` sends for every
/// few hundred files, read straight into their params: an add of 20,000 small files built a
/// dictionary for every request and every params object, and parsing them and reading the params
/// out again was ~5% of the daemon's CPU.
///
/// Plain means: a JSON array of objects with the members `jsonrpc` ("2.0"), `id` (a string or a
/// number), `method` ("job.add") and `params`, each once, whose params `AddParams(json:)` reads
/// too, each key once. For any other line, nil: the caller reads it the general way, which
/// answers what is wrong with it. What both read, they read alike (`PlainAddBatchTests`).
enum PlainAddBatch {
    static func read(_ line: [UInt8]) -> [(id: JSONValue, params: AddParams)]? {
        line.withUnsafeBufferPointer { (bytes) in
            var reader = JSONReader(bytes: bytes)
            return try? readBatch(&reader)
        }
    }

    /// Not a plain batch (the reader's own errors say the line is not JSON: the general reading
    /// tells the client so).
    private struct NotPlain: Error {}

    private static func readBatch(_ reader: inout JSONReader) throws -> [(id: JSONValue, params: AddParams)] {
        reader.skipWhitespace()
        try expect(UInt8(ascii: "["), &reader)
        var requests: [(id: JSONValue, params: AddParams)] = []
        var paramKeys: [String] = []
        paramKeys.reserveCapacity(16)
        repeat {
            requests.append(try readRequest(&reader, paramKeys: &paramKeys))
        } while try !closes(UInt8(ascii: "]"), &reader)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else { throw NotPlain() }
        return requests
    }

    /// One request object; `paramKeys` is scratch space, kept from one request to the next.
    private static func readRequest(_ reader: inout JSONReader, paramKeys: inout [String]) throws -> (
        id: JSONValue, params: AddParams
    ) {
        reader.skipWhitespace()
        try expect(UInt8(ascii: "{"), &reader)
        var id: JSONValue?
        var params: AddParams?
        var seen = (jsonrpc: false, method: false)
        try readMembers(&reader) { (key, reader) in
            switch key {
            case "jsonrpc" where !seen.jsonrpc:
                seen.jsonrpc = true
                guard try value(at: 2, &reader) == .string("2.0") else { throw NotPlain() }
            case "method" where !seen.method:
                seen.method = true
                guard try value(at: 2, &reader) == .string("job.add") else { throw NotPlain() }
            case "id" where id == nil:
                let value = try value(at: 2, &reader)
                switch value {
                case .string, .number: id = value
                default: throw NotPlain()
                }
            case "params" where params == nil:
                params = try readParams(&reader, keys: &paramKeys)
            default:
                throw NotPlain()  // unknown, or said twice
            }
        }
        guard seen.jsonrpc, seen.method, let id, let params else { throw NotPlain() }
        return (id, params)
    }

    /// The params object, as `AddParams(json:)` reads it.
    private static func readParams(_ reader: inout JSONReader, keys: inout [String]) throws -> AddParams {
        reader.skipWhitespace()
        try expect(UInt8(ascii: "{"), &reader)
        keys.removeAll(keepingCapacity: true)
        var params = AddParams(source: "", destination: "")
        try readMembers(&reader) { (key, reader) in
            guard !keys.contains(key) else { throw NotPlain() }
            keys.append(key)
            guard AddParams.take(key, try value(at: 3, &reader), into: &params) else { throw NotPlain() }
        }
        guard keys.contains("source"), keys.contains("destination") else { throw NotPlain() }
        return params
    }

    /// After an object's `{`: each member's key to `member`, which reads its value; past the `}`.
    private static func readMembers(
        _ reader: inout JSONReader, _ member: (String, inout JSONReader) throws -> Void
    ) throws {
        reader.skipWhitespace()
        if reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "}") {
            reader.index += 1
            return
        }
        repeat {
            reader.skipWhitespace()
            guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "\"") else {
                throw NotPlain()
            }
            let key = try reader.string()
            reader.skipWhitespace()
            try expect(UInt8(ascii: ":"), &reader)
            try member(key, &reader)
        } while try !closes(UInt8(ascii: "}"), &reader)
    }

    /// After an element or member: true past the closing `close`, false past a `,`.
    private static func closes(_ close: UInt8, _ reader: inout JSONReader) throws -> Bool {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count else { throw NotPlain() }
        let byte = reader.bytes[reader.index]
        reader.index += 1
        if byte == close { return true }
        guard byte == UInt8(ascii: ",") else { throw NotPlain() }
        return false
    }

    /// A member's value, nested `depth` deep (the batch's array is 1), so that the nesting limit
    /// falls where it falls for `JSONValue(parsing:)`.
    private static func value(at depth: Int, _ reader: inout JSONReader) throws -> JSONValue {
        reader.depth = depth
        return try reader.value()
    }

    private static func expect(_ byte: UInt8, _ reader: inout JSONReader) throws {
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == byte else { throw NotPlain() }
        reader.index += 1
    }
}
