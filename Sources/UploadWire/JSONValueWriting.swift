import Foundation

/// JSON text for a `JSONValue` and a request, written by `JSONWriter` rather than by JSONEncoder:
/// the text `JSONCoding.encoder` writes (sorted keys, whole numbers without a fraction, slashes
/// as they are), at a fraction of the cost. `uploadctl add` of 2,000 files spent a fifth of its
/// time in JSONEncoder writing its requests.
extension JSONValue {
    /// This value as JSON text. Throws for a number JSON cannot hold (NaN, an infinity).
    public func jsonBytes() throws -> [UInt8] {
        var writer = JSONWriter()
        try write(to: &writer)
        return writer.bytes
    }

    func write(to writer: inout JSONWriter) throws {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .number(let value):
            guard value.isFinite else {
                throw EncodingError.invalidValue(
                    value, EncodingError.Context(codingPath: [], debugDescription: "\(value) is not a JSON number"))
            }
            if value == value.rounded(), abs(value) < 1e15 {
                writer.integer(Int64(value))
            } else {
                writer.double(value)
            }
        case .string(let value): writer.string(value)
        case .array(let elements):
            writer.beginArray()
            for element in elements {
                writer.element()
                try element.write(to: &writer)
            }
            writer.endArray()
        case .object(let members):
            writer.beginObject()
            for name in members.keys.sorted() {
                writer.key(name)
                try members[name]!.write(to: &writer)
            }
            writer.endObject()
        }
    }
}

extension RPCRequest {
    /// This request as JSON text, as `JSONCoding.encoder` writes it.
    public func jsonBytes() throws -> [UInt8] {
        var writer = JSONWriter()
        try write(to: &writer)
        return writer.bytes
    }

    /// Requests as one JSON-RPC batch (an array).
    public static func jsonBytes(batch requests: some Collection<RPCRequest>) throws -> [UInt8] {
        var writer = JSONWriter()
        writer.beginArray()
        for request in requests {
            writer.element()
            try request.write(to: &writer)
        }
        writer.endArray()
        return writer.bytes
    }

    func write(to writer: inout JSONWriter) throws {
        writer.beginObject()
        if let id {
            writer.key("id")
            try id.write(to: &writer)
        }
        writer.key("jsonrpc")
        writer.string(jsonrpc)
        writer.key("method")
        writer.string(method)
        if let params {
            writer.key("params")
            try params.write(to: &writer)
        }
        writer.endObject()
    }
}
