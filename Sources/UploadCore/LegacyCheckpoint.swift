import UploadWire

/// The checkpoints of uploadd 0.1 (format 1, JSON) and 0.2 (format 2, binary), read only. Those
/// formats stored the three kinds they knew as fields of a closed enum rather than as opaque
/// payloads, so reading them needs each kind's fields, frozen here. A field's binary form in format
/// 2 is exactly its form in today's payload, so format 2 passes the bytes on unchanged.
/// Never change a line here: the golden files of Tests/Fixtures/journals hold the truth.
enum LegacyCheckpoint {
    enum Field {
        case string, optionalString, int64
    }

    /// Each kind's fields in order, with the name Swift's synthesized JSON gave them in format 1.
    static let fields: [String: [(json: String, type: Field)]] = [
        "tus": [("uploadURL", .string), ("expires", .optionalString)],
        "s3": [("uploadID", .string), ("key", .string), ("partSize", .int64)],
        "chunked": [("upToken", .string), ("blockSize", .int64), ("blocksAcknowledged", .int64)],
    ]

    static func fields(of kind: String) throws(BinaryDecodingError) -> [(json: String, type: Field)] {
        guard let fields = fields[kind] else {
            throw BinaryDecodingError(description: "unknown checkpoint kind '\(kind)'")
        }
        return fields
    }
}

extension Checkpoint {
    /// Format 2: the kind, then its fields with no length in front.
    init(format2 reader: inout BinaryReader) throws(BinaryDecodingError) {
        let kind = try reader.readString()
        let fields = try LegacyCheckpoint.fields(of: kind)
        let payload = try reader.bytesConsumed { (reader) throws(BinaryDecodingError) in
            for field in fields {
                switch field.type {
                case .string: _ = try reader.readString()
                case .optionalString:
                    _ = try reader.readOptional { (reader) throws(BinaryDecodingError) in try reader.readString() }
                case .int64: _ = try reader.readInt64()
                }
            }
        }
        self.init(kind: kind, payload: payload)
    }
}

/// Format 1: Swift's synthesized JSON of the old enum, `{"tus": {"uploadURL": "…", "expires": null}}`.
extension Checkpoint: Decodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let outer = try decoder.container(keyedBy: Key.self)
        guard outer.allKeys.count == 1, let kindKey = outer.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a checkpoint has one kind"))
        }
        let inner = try outer.nestedContainer(keyedBy: Key.self, forKey: kindKey)
        var writer = BinaryWriter()
        for field in try LegacyCheckpoint.fields(of: kindKey.stringValue) {
            let key = Key(stringValue: field.json)
            switch field.type {
            case .string: writer.write(try inner.decode(String.self, forKey: key))
            case .optionalString: writer.write(try inner.decodeIfPresent(String.self, forKey: key)) { $0.write($1) }
            case .int64: writer.write(try inner.decode(Int64.self, forKey: key))
            }
        }
        self.init(kind: kindKey.stringValue, payload: writer.bytes)
    }
}
