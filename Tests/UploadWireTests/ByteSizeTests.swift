import Testing

@testable import UploadWire

@Suite("ByteSize parsing and formatting")
struct ByteSizeTests {
    static let valid: [(String, Int64)] = [
        ("0", 0), ("123", 123), ("100B", 100), ("512K", 512 * 1024), ("8M", 8 << 20), ("1G", 1 << 30),
        ("2T", 2 << 40), ("8MiB", 8 << 20), ("8m", 8 << 20), ("4kib", 4096), ("1.5G", 1_610_612_736), (" 4K ", 4096),
        ("0.5K", 512),
    ]

    @Test(arguments: valid)
    func parses(text: String, expected: Int64) throws {
        #expect(try ByteSize.parse(text) == expected)
    }

    @Test(arguments: [
        "", "K", "-1", "-1M", "abc", "1.2.3", "1e3", "inf", "nan", "10X", "8 M", "M8", "99999999999T", "0x10",
    ])
    func refuses(text: String) {
        let error = #expect(throws: ByteSize.ParseError.self) { try ByteSize.parse(text) }
        #expect(error?.text == text)
        #expect(error?.description.contains("'\(text)' is not a size") == true)
    }

    static let formatted: [(Int64, String)] = [
        (0, "0 B"), (1000, "1000 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (8 << 20, "8.00 MiB"),
        (13_002_342, "12.40 MiB"), (3 << 30, "3.00 GiB"), (2 << 40, "2.00 TiB"),
    ]

    /// The units the input is read in (8M is 8 MiB), named as IEC names them.
    @Test(arguments: formatted)
    func formatsInBinaryUnits(bytes: Int64, expected: String) {
        #expect(ByteSize.format(bytes) == expected)
        if bytes >= 1024, let parsed = try? ByteSize.parse(String(expected.dropLast(2))) {
            #expect(abs(Double(parsed - bytes)) < Double(bytes) / 100, "\(expected) reads back as about \(bytes)")
        }
    }

    /// As printf's %.2f formats the quotient, ties (1152 bytes is 1.125 KiB) and carries
    /// (1023.999 KiB is 1024.00 KiB) included.
    @Test func formatsAsPrintfWould() {
        var random = SystemRandomNumberGenerator()
        let units: [(Double, String)] = [
            (0x400, "KiB"), (0x10_0000, "MiB"), (0x4000_0000, "GiB"), (0x100_0000_0000, "TiB"),
        ]
        var samples: [Int64] = [1024, 1152, 1_048_575, 1_048_576, 0x3FFF_FFFF, 0xFF_FFFF_FFFF, Int64.max]
        for magnitude in 10..<62 {
            for _ in 0..<200 {
                samples.append(Int64.random(in: (1 << magnitude)...(1 << (magnitude + 1)), using: &random))
            }
        }
        for bytes in samples {
            let (divisor, unit) = units.last { Double(bytes) >= $0.0 }!
            #expect(ByteSize.format(bytes) == String(format: "%.2f \(unit)", Double(bytes) / divisor), "\(bytes)")
        }
    }

    @Test func formatsRates() {
        #expect(ByteSize.formatRate(500) == "500 B/s")
        #expect(ByteSize.formatRate(1536) == "1.5 KiB/s")
        #expect(ByteSize.formatRate(1_048_576) == "1.0 MiB/s", "rate_limit = 1M shows as what it is")
        #expect(ByteSize.formatRate(2.5 * 1_073_741_824) == "2.50 GiB/s")
    }
}
