import Testing

@testable import UploadWire

@Suite("LineFramer: NDJSON framing with a length limit")
struct LineFramerTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func splitsLinesAndKeepsThePartialOne() {
        var framer = LineFramer(maxLineLength: 100)
        #expect(framer.feed(bytes("{\"a\":1}\n{\"b\"")) == [.line(bytes("{\"a\":1}"))])
        #expect(framer.bufferedCount == 4)
        #expect(framer.feed(bytes(":2}\n\n")) == [.line(bytes("{\"b\":2}")), .line([])])
        #expect(framer.bufferedCount == 0)
    }

    @Test func aLineFedOneByteAtATime() {
        var framer = LineFramer(maxLineLength: 100)
        var outputs: [LineFramer.Output] = []
        for byte in bytes("hello\r\nworld\n") { outputs += framer.feed([byte]) }
        #expect(outputs == [.line(bytes("hello")), .line(bytes("world"))])
    }

    @Test func crlfLosesOnlyTheCarriageReturn() {
        var framer = LineFramer(maxLineLength: 100)
        #expect(
            framer.feed(bytes("a\r\nb\r\r\n\rc\n")) == [.line(bytes("a")), .line(bytes("b\r")), .line(bytes("\rc"))])
    }

    @Test func crSplitFromLFAcrossFeeds() {
        var framer = LineFramer(maxLineLength: 100)
        #expect(framer.feed(bytes("abc\r")).isEmpty)
        #expect(framer.feed(bytes("\n")) == [.line(bytes("abc"))])
    }

    @Test func exactlyAtTheLimitIsALine() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed(bytes("12345678")).isEmpty)
        #expect(framer.feed(bytes("\n")) == [.line(bytes("12345678"))])
        #expect(framer.feed(bytes("abcdefgh\n")) == [.line(bytes("abcdefgh"))])
    }

    @Test func oneOverTheLimitWithoutNewlineIsTooLong() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed(bytes("1234")).isEmpty)
        #expect(framer.feed(bytes("56789")) == [.tooLong])
        #expect(framer.bufferedCount == 0)
    }

    @Test func oneOverTheLimitWithNewlineIsTooLong() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed(bytes("ok\n123456789\nnext\n")) == [.line(bytes("ok")), .tooLong])
    }

    @Test func nothingAfterOverflow() {
        var framer = LineFramer(maxLineLength: 4)
        #expect(framer.feed(bytes("toolong")) == [.tooLong])
        #expect(framer.feed(bytes("\nfine\n")).isEmpty)
        #expect(framer.feed(bytes("a\n")).isEmpty)
        #expect(framer.bufferedCount == 0)
    }

    @Test func defaultLimitIsOneMebibyte() {
        var framer = LineFramer()
        #expect(framer.maxLineLength == 1 << 20)
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        #expect(framer.feed(line + [10]) == [.line(line)])
        #expect(framer.feed(line + [UInt8(ascii: "x")]) == [.tooLong])
    }

    @Test func worksOnArraySlices() {
        var framer = LineFramer(maxLineLength: 100)
        let buffer = bytes("xxa\nb\nyy")
        #expect(framer.feed(buffer[2..<6]) == [.line(bytes("a")), .line(bytes("b"))])
    }
}
