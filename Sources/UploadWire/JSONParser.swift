/// Where a JSON text stops being JSON (RFC 8259), and why.
public struct JSONSyntaxError: Error, Equatable, CustomStringConvertible {
    /// The byte where the reader gave up.
    public var offset: Int
    public var reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

extension JSONValue {
    /// Nesting deeper than this is refused (JSONDecoder's limit too): a hostile line of 100,000
    /// `[` must not take the reading thread's stack.
    public static let maximumDepth = 512

    /// Reads one JSON text (RFC 8259, UTF-8, whitespace around it allowed) straight into a value.
    ///
    /// Hand-written, because Foundation has nothing that does this well on Linux: JSONDecoder
    /// reads a `JSONValue` by trying each kind in turn and throwing at each miss (half of
    /// uploadctl's CPU in an add of 2,000 files, reading the answers), and JSONSerialization
    /// gives NSNumber for both `true` and `1`. It is strict: a lone surrogate escape, bytes that
    /// are not UTF-8, a number out of a Double's range, a trailing comma are errors.
    public init(parsing bytes: [UInt8]) throws(JSONSyntaxError) {
        self = try bytes.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in
            var reader = JSONReader(bytes: buffer)
            let value = try reader.value()
            reader.skipWhitespace()
            guard reader.index == buffer.count else { throw reader.error("text after the JSON value") }
            return value
        }
    }
}

/// The reader behind `JSONValue(parsing:)`; the daemon's `PlainAddBatch` reads with it too
/// (`package`: seen by the package's modules, not an API).
package struct JSONReader {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var index = 0
    package var depth = 0

    package init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func error(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: index, reason: reason) }

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func value() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw error("the text ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try nested { (reader) throws(JSONSyntaxError) in try reader.object() }
        case UInt8(ascii: "["): return try nested { (reader) throws(JSONSyntaxError) in try reader.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("not the start of a JSON value")
        }
    }

    private mutating func nested(_ read: (inout JSONReader) throws(JSONSyntaxError) -> JSONValue)
        throws(JSONSyntaxError) -> JSONValue
    {
        depth += 1
        guard depth <= JSONValue.maximumDepth else {
            throw error("arrays and objects nested more than \(JSONValue.maximumDepth) deep")
        }
        defer { depth -= 1 }
        return try read(&self)
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
            word.withUTF8Buffer({ expected in (0..<count).allSatisfy { bytes[index + $0] == expected[$0] } })
        else { throw error("not the start of a JSON value") }
        index += count
        return value
    }

    /// After `{`.
    private mutating func object() throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        members.reserveCapacity(6)  // one allocation for most objects, not one per doubling
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("an object's key must be a string")
            }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("':' expected") }
            index += 1
            let member = try value()
            if members[key] == nil { members[key] = member }  // a repeated key: the first counts, as in JSONDecoder
            skipWhitespace()
            guard index < bytes.count else { throw error("the text ends inside an object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw error("',' or '}' expected")
            }
        }
    }

    /// After `[`.
    private mutating func array() throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw error("the text ends inside an array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw error("',' or ']' expected")
            }
        }
    }

    /// At the opening quote.
    package mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        // Most strings have no escapes: their bytes are the string's.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return try text(UnsafeBufferPointer(rebasing: bytes[start..<index]), at: start)
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if byte < 0x20 { throw error("a control character inside a string (escape it)") }
            index += 1
        }
        throw error("the text ends inside a string")
    }

    /// The rest of a string that has escapes, from its first byte.
    private mutating func escapedString(from start: Int) throws(JSONSyntaxError) -> String {
        var utf8 = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try utf8.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in
                    try text(buffer, at: start)
                }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: String(try unicodeEscape()).utf8)
                default:
                    index -= 1
                    throw error("an unknown escape in a string")
                }
            default:
                if byte < 0x20 { throw error("a control character inside a string (escape it)") }
                utf8.append(byte)
                index += 1
            }
        }
        throw error("the text ends inside a string")
    }

    /// After `\u`: one scalar, from a surrogate pair when it takes two escapes.
    private mutating func unicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let first = try hexQuad()
        switch first {
        case 0xD800...0xDBFF:
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw error("a lone surrogate escape in a string") }
            index += 2
            let second = try hexQuad()
            guard (0xDC00...0xDFFF).contains(second) else { throw error("a lone surrogate escape in a string") }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        case 0xDC00...0xDFFF:
            throw error("a lone surrogate escape in a string")
        default:
            return Unicode.Scalar(first)!
        }
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func text(_ utf8: UnsafeBufferPointer<UInt8>, at start: Int) throws(JSONSyntaxError) -> String {
        guard let text = String(checkingUTF8: utf8) else {
            throw JSONSyntaxError(offset: start, reason: "a string that is not valid UTF-8")
        }
        return text
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(JSONSyntaxError) -> Double {
        let start = index
        var integer = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit here") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("a number cannot start with 0") }
        } else {
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integer = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit here") }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integer = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit here") }
            skipDigits()
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
        // An integer of up to 16 digits is exact in an Int64, and converting that rounds as reading
        // the text would: no text to convert.
        if integer, digits.count <= 16 {
            var value: Int64 = 0
            for byte in digits where byte != UInt8(ascii: "-") { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
            return digits[0] == UInt8(ascii: "-") ? -Double(value) : Double(value)
        }
        guard let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite else {
            throw JSONSyntaxError(offset: start, reason: "a number out of range")
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }
}
