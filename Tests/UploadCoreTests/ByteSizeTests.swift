import Testing

@testable import UploadCore

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
        (0, "0 B"), (999, "999 B"), (1000, "1.00 KB"), (12_400_000, "12.40 MB"), (80_000_000, "80.00 MB"),
        (1_500_000_000, "1.50 GB"), (2_000_000_000_000, "2.00 TB"),
    ]

    @Test(arguments: formatted)
    func formatsInDecimalUnits(bytes: Int64, expected: String) {
        #expect(ByteSize.format(bytes) == expected)
    }

    @Test func formatsRates() {
        #expect(ByteSize.formatRate(500) == "500 B/s")
        #expect(ByteSize.formatRate(1500) == "1.5 KB/s")
        #expect(ByteSize.formatRate(38_200_000) == "38.2 MB/s")
        #expect(ByteSize.formatRate(2_500_000_000) == "2.50 GB/s")
    }
}
