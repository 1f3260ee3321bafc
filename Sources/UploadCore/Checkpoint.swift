import UploadWire

/// Protocol-specific state that lets an interrupted upload continue where the server has it (a tus
/// URL, an S3 UploadId, a block token), journaled as soon as the server hands it out.
///
/// The daemon's core keeps it opaque: the protocol's checkpoint kind and a payload only that
/// protocol reads (`CheckpointPayload`), so a protocol adds or changes its checkpoint without
/// touching the journal. A transfer that finds a kind it does not know starts the upload over.
public struct Checkpoint: Sendable, Equatable, CustomStringConvertible {
    public var kind: String
    public var payload: [UInt8]

    public init(kind: String, payload: [UInt8]) {
        self.kind = kind
        self.payload = payload
    }

    public init<Value: CheckpointPayload>(_ value: Value) {
        var writer = BinaryWriter()
        value.write(to: &writer)
        self.init(kind: Value.kind, payload: writer.bytes)
    }

    /// The protocol's own value, or nil when this is another kind or does not decode.
    public func decode<Value: CheckpointPayload>(_ type: Value.Type) -> Value? {
        guard kind == Value.kind else { return nil }
        return payload.withUnsafeBytes { bytes in
            var reader = BinaryReader(bytes)
            return try? Value(reading: &reader)
        }
    }

    public var description: String { "\(kind) checkpoint (\(payload.count) bytes)" }
}

/// A protocol's checkpoint as a Swift value. Its payload follows the journal's rules for a message
/// (BinaryCoding.swift): new fields go at the end, read with `readIfPresent`.
public protocol CheckpointPayload: Sendable, Equatable {
    /// The name the journal stores it under; never changes once released.
    static var kind: String { get }
    init(reading reader: inout BinaryReader) throws(BinaryDecodingError)
    func write(to writer: inout BinaryWriter)
}

extension Job {
    /// The job's checkpoint as `Value`, when it has one of that kind.
    public func checkpoint<Value: CheckpointPayload>(as type: Value.Type) -> Value? { checkpoint?.decode(type) }
}
