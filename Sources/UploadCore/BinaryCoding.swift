import Foundation
import UploadWire

/// A compact binary encoding for journal payloads: LEB128 varints (zigzag for signed numbers),
/// length-prefixed UTF-8 strings, a presence byte before optionals, a count before arrays, and
/// dates as the bits of their `timeIntervalSinceReferenceDate` (exact round trip).
///
/// Hand-written because no library on the machine does this, and because Foundation's JSONDecoder
/// made replaying 100,000 jobs take seconds. The layout of each type is fixed field by field.
/// A nested struct is a *message*: its byte length, then its fields. Fields added later go at the
/// end of a message (or of a record): an older reader skips the bytes it does not know, and a
/// newer reader finds `isAtEnd` where an older writer stopped and uses the field's default.
public struct BinaryWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func write(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    public mutating func write(_ value: Int64) {
        write(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func write(_ value: Int) { write(Int64(value)) }

    public mutating func write(_ value: Bool) { bytes.append(value ? 1 : 0) }

    public mutating func writeByte(_ value: UInt8) { bytes.append(value) }

    public mutating func write(_ value: String) {
        var text = value
        text.withUTF8 { utf8 in
            write(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// `head + tail` as `write(_: String)` writes it, without making the joined string: a job's
    /// source is its folder and its name (`JobSpec.source`), and each of its records holds it.
    public mutating func write(joining head: String, _ tail: String) {
        write(UInt64(head.utf8.count + tail.utf8.count))
        appendUTF8(of: head)
        appendUTF8(of: tail)
    }

    private mutating func appendUTF8(of text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    public mutating func write(_ value: Date) {
        withUnsafeBytes(of: value.timeIntervalSinceReferenceDate.bitPattern.littleEndian) {
            bytes.append(contentsOf: $0)
        }
    }

    /// A presence byte, then the value when there is one.
    public mutating func write<T>(_ value: T?, _ writeValue: (inout BinaryWriter, T) -> Void) {
        write(value != nil)
        if let value { writeValue(&self, value) }
    }

    /// A count, then each element.
    public mutating func write<T>(_ values: [T], _ writeValue: (inout BinaryWriter, T) -> Void) {
        write(UInt64(values.count))
        for value in values { writeValue(&self, value) }
    }

    /// Continues `bytes`: hand them over (no copy when the caller drops its own reference).
    public init(appending bytes: [UInt8]) { self.bytes = bytes }

    /// A message: the byte length of what `body` writes, then those bytes. Written in place: the
    /// length goes in the byte saved for it, or, for 128 bytes or more, in the bytes it needs.
    public mutating func writeMessage(_ body: (inout BinaryWriter) -> Void) {
        let start = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - start - 1
        guard length >= 0x80 else {
            bytes[start] = UInt8(length)
            return
        }
        var prefix = BinaryWriter()
        prefix.write(UInt64(length))
        bytes.replaceSubrange(start...start, with: prefix.bytes)
    }

    /// Overwrites bytes already written (a frame's length and checksum, once its payload is known).
    public mutating func overwrite(at offset: Int, with replacement: some Collection<UInt8>) {
        bytes.replaceSubrange(offset..<offset + replacement.count, with: replacement)
    }

    /// Bytes as they are, with no length (a record's payload kept verbatim).
    public mutating func writeRaw(_ raw: [UInt8]) { bytes.append(contentsOf: raw) }
}

public struct BinaryDecodingError: Error, CustomStringConvertible {
    public var description: String
    /// A well-formed value this reader does not know (a protocol or state added later): not damage.
    public var isUnknownValue = false

    public init(description: String, isUnknownValue: Bool = false) {
        self.description = description
        self.isUnknownValue = isUnknownValue
    }
}

public struct BinaryReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public var isAtEnd: Bool { offset == bytes.count }

    public mutating func readUInt64() throws(BinaryDecodingError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw BinaryDecodingError(description: "a number is cut off") }
            let byte = bytes[offset]
            offset += 1
            guard shift < 64, shift < 63 || byte <= 1 else {
                throw BinaryDecodingError(description: "a number is too long")
            }
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    public mutating func readInt64() throws(BinaryDecodingError) -> Int64 {
        let raw = try readUInt64()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    public mutating func readInt() throws(BinaryDecodingError) -> Int {
        let value = try readInt64()
        guard let int = Int(exactly: value) else { throw BinaryDecodingError(description: "a number is out of range") }
        return int
    }

    public mutating func readBool() throws(BinaryDecodingError) -> Bool {
        switch try readByte() {
        case 0: return false
        case 1: return true
        case let other: throw BinaryDecodingError(description: "\(other) is not a boolean")
        }
    }

    public mutating func readString() throws(BinaryDecodingError) -> String {
        let length = try readUInt64()
        guard length <= UInt64(bytes.count - offset) else {
            throw BinaryDecodingError(description: "a string is cut off")
        }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))])
        offset += Int(length)
        let text = slice.withMemoryRebound(to: UInt8.self) { String(checkingUTF8: $0) }
        guard let text else { throw BinaryDecodingError(description: "a string is not valid UTF-8") }
        return text
    }

    public mutating func readDate() throws(BinaryDecodingError) -> Date {
        guard bytes.count - offset >= 8 else { throw BinaryDecodingError(description: "a date is cut off") }
        var bits: UInt64 = 0
        for index in 0..<8 { bits |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits))
    }

    /// A value of a `String` raw-value enum, by its name, so reordering cases never changes meaning.
    public mutating func readEnum<T: RawRepresentable>(_ type: T.Type) throws(BinaryDecodingError) -> T
    where T.RawValue == String {
        let name = try readString()
        guard let value = T(rawValue: name) else {
            throw BinaryDecodingError(description: "unknown \(T.self) '\(name)'", isUnknownValue: true)
        }
        return value
    }

    /// A message: reads its length, hands `readFields` a reader of exactly those bytes, and skips
    /// what it left unread (fields of a newer writer).
    public mutating func readMessage<T>(_ readFields: (inout BinaryReader) throws(BinaryDecodingError) -> T)
        throws(BinaryDecodingError) -> T
    {
        let length = try readUInt64()
        guard length <= UInt64(bytes.count - offset) else {
            throw BinaryDecodingError(description: "a message is cut off")
        }
        var inner = BinaryReader(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))]))
        let value = try readFields(&inner)
        offset += Int(length)
        return value
    }

    /// A field added after its message's first version: read when present, else `fallback` (an
    /// older writer stopped before it).
    public mutating func readIfPresent<T>(
        _ fallback: T, _ readValue: (inout BinaryReader) throws(BinaryDecodingError) -> T
    ) throws(BinaryDecodingError) -> T {
        isAtEnd ? fallback : try readValue(&self)
    }

    /// The bytes not read yet.
    public var remaining: [UInt8] { Array(bytes[offset...]) }

    /// Reads everything left (the opaque rest of a message).
    public mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return remaining
    }

    /// The exact bytes `readFields` consumed, for a reader that checks fields it passes on unchanged.
    public mutating func bytesConsumed(by readFields: (inout BinaryReader) throws(BinaryDecodingError) -> Void)
        throws(BinaryDecodingError) -> [UInt8]
    {
        let start = offset
        try readFields(&self)
        return Array(bytes[start..<offset])
    }

    public mutating func readOptional<T>(_ readValue: (inout BinaryReader) throws(BinaryDecodingError) -> T)
        throws(BinaryDecodingError) -> T?
    {
        try readBool() ? try readValue(&self) : nil
    }

    public mutating func readArray<T>(_ readValue: (inout BinaryReader) throws(BinaryDecodingError) -> T)
        throws(BinaryDecodingError) -> [T]
    {
        let count = try readUInt64()
        // Every element takes at least one byte: a count beyond what is left is damage, not a reason to allocate.
        guard count <= UInt64(bytes.count - offset) else { throw BinaryDecodingError(description: "a list is cut off") }
        var values: [T] = []
        values.reserveCapacity(Int(count))
        for _ in 0..<count { values.append(try readValue(&self)) }
        return values
    }

    private mutating func readByte() throws(BinaryDecodingError) -> UInt8 {
        guard offset < bytes.count else { throw BinaryDecodingError(description: "a value is cut off") }
        defer { offset += 1 }
        return bytes[offset]
    }
}
