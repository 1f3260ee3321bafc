extension String {
    /// The text of `utf8`, nil when it is not valid UTF-8.
    ///
    /// ASCII, most of what the journal and the control protocol carry, is valid UTF-8 as it is and
    /// is taken after a check of eight bytes at a time. Only the rest goes through
    /// `String(validating:as:)`, which is generic over encodings and looks its types up at run time:
    /// it was an eighth of replaying a million jobs, and an eighth of `uploadctl wait`'s CPU.
    public init?(checkingUTF8 utf8: UnsafeBufferPointer<UInt8>) {
        if Self.isASCII(UnsafeRawBufferPointer(utf8)) {
            self.init(decoding: utf8, as: UTF8.self)
        } else {
            guard let text = String(validating: utf8, as: UTF8.self) else { return nil }
            self = text
        }
    }

    /// Whether every byte is below 0x80, eight at a time.
    private static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }
}
