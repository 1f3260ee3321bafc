import Testing
import UploadWire

@Suite struct UTF8TextTests {
    /// Whatever the bytes, and wherever a byte above 0x7F sits among the eight checked at a time,
    /// the answer is `String(validating:as:)`'s.
    @Test func checkingAgreesWithValidatingOnAnyBytes() {
        var generator = SystemRandomNumberGenerator()
        let pieces: [[UInt8]] = [
            Array("plain ascii".utf8), Array("é".utf8), Array("日本".utf8), Array("🙂".utf8), [0xFF], [0xC3], [0x80],
            [0xED, 0xA0, 0x80], [0], Array("12345678".utf8),
        ]
        for _ in 0..<5_000 {
            let count = Int.random(in: 0...6, using: &generator)
            let bytes = (0..<count).flatMap { _ in pieces.randomElement(using: &generator)! }
            bytes.withUnsafeBufferPointer { utf8 in
                #expect(String(checkingUTF8: utf8) == String(validating: utf8, as: UTF8.self), "\(bytes)")
            }
        }
        for position in 0..<20 {
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 20)
            bytes[position] = 0xFF
            bytes.withUnsafeBufferPointer { #expect(String(checkingUTF8: $0) == nil, "0xFF at \(position)") }
        }
    }
}
