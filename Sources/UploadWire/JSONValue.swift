import Foundation

/// Any JSON value, for the parts of JSON-RPC whose shape depends on the method.
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        // Each miss throws a DecodingError with its coding path, which is what decoding costs:
        // the common kinds go first (a list of 10,000 jobs is mostly strings and numbers).
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            self = .array(try container.decode([JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Encodes any Encodable as a JSONValue.
    public init<T: Encodable>(encoding value: T) throws {
        self = try JSONValue(parsing: Array(JSONCoding.encoder.encode(value)))
    }

    /// Decodes this value as `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder(self).decode(type)
    }
}

/// The encoder and decoder settings of the control protocol. Dates are ISO 8601 in UTC with
/// milliseconds, so clients can order events that happen within one second.
public enum JSONCoding {
    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let wholeSecondStyle = Date.ISO8601FormatStyle()

    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(dateStyle.format(date))
        }
        return encoder
    }

    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = date(from: text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
        }
        return decoder
    }

    /// An ISO 8601 date with or without milliseconds, as the protocol writes them.
    static func date(from text: String) -> Date? {
        (try? dateStyle.parse(text)) ?? (try? wholeSecondStyle.parse(text))
    }
}
