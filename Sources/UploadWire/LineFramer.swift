/// Splits a byte stream into newline-terminated lines, refusing lines over a limit.
///
/// Feed it whatever `read` returned; it hands back complete lines (without the `\n`, and without a
/// trailing `\r`). Once a line grows past `maxLineLength` without a newline, it reports
/// `.tooLong` and the connection should be answered with an error and closed.
public struct LineFramer: Sendable {
    public enum Output: Equatable, Sendable {
        case line([UInt8])
        case tooLong
    }

    public let maxLineLength: Int
    private var pending: [UInt8] = []
    private var overflowed = false

    public init(maxLineLength: Int = ControlProtocol.maxLineLength) {
        self.maxLineLength = maxLineLength
    }

    /// Bytes buffered for a line not yet complete.
    public var bufferedCount: Int { pending.count }
    /// The memory those bytes take (the buffer grows by doubling).
    public var bufferCapacity: Int { pending.capacity }

    public mutating func feed(_ bytes: [UInt8]) -> [Output] { feed(bytes[...]) }

    /// Concrete, not generic over collections: called across modules, a generic version runs
    /// unspecialized, a witness call per byte (a quarter of uploadctl's time for a 10 MB answer).
    public mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Output] {
        guard !overflowed else { return [] }
        var outputs: [Output] = []
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            pending.append(contentsOf: bytes[start..<newline])
            if pending.count > maxLineLength {
                overflowed = true
                pending = []
                outputs.append(.tooLong)
                return outputs
            }
            if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
            outputs.append(.line(pending))
            pending = []
            start = bytes.index(after: newline)
        }
        pending.append(contentsOf: bytes[start...])
        if pending.count > maxLineLength {
            overflowed = true
            pending = []
            outputs.append(.tooLong)
        }
        return outputs
    }
}
