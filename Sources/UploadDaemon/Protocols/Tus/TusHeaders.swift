/// The numbers in a tus server's headers, read as untrusted input.
enum TusHeaders {
    /// An `Upload-Offset` (or `Upload-Length`) when it is plain decimal digits of a number from 0
    /// to `total`: a server's number is never used unchecked (a negative one made the arithmetic
    /// trap, and a daemon that replays the job would trap again at every start).
    static func offset(_ text: String?, total: Int64) -> Int64? {
        guard let text, !text.isEmpty, text.utf8.count <= 19,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let value = Int64(text),
            value <= total
        else { return nil }
        return value
    }

    /// `Tus-Max-Size`: a positive number, or nil.
    static func maxSize(_ text: String?) -> Int64? {
        guard let text, let value = offset(text, total: .max), value > 0 else { return nil }
        return value
    }
}
