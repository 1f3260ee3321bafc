/// For names that must not be guessed or repeated (a temporary copy's, a preparation run's).
extension FixedWidthInteger {
    /// Lowercase hex digits, zero-padded to the type's width.
    package var hexadecimal: String {
        let digits = String(self, radix: 16)
        return String(repeating: "0", count: Swift.max(0, Self.bitWidth / 4 - digits.count)) + digits
    }
}
