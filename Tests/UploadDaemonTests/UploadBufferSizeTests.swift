import Testing

@testable import UploadDaemon
@testable import UploadHTTP

/// libcurl's upload buffer: big for big files, no bigger than a small file, a quarter second's
/// worth under a rate limit, never under libcurl's 16 KiB.
@Suite struct UploadBufferSizeTests {
    @Test func bigForBigFilesAndNoBiggerThanASmallOne() {
        #expect(CurlRequest.uploadBufferSize(rateLimit: nil, bodyLength: 1 << 30) == 2 << 20)
        #expect(CurlRequest.uploadBufferSize(rateLimit: nil, bodyLength: 64 << 10) == 64 << 10)
        #expect(CurlRequest.uploadBufferSize(rateLimit: nil, bodyLength: 4 << 10) == 16 << 10)
        #expect(CurlRequest.uploadBufferSize(rateLimit: nil, bodyLength: 0) == 16 << 10)
    }

    @Test func aQuarterSecondUnderARateLimit() {
        #expect(CurlRequest.uploadBufferSize(rateLimit: 512 << 10, bodyLength: 1 << 30) == 128 << 10)
        #expect(CurlRequest.uploadBufferSize(rateLimit: 1 << 10, bodyLength: 1 << 30) == 16 << 10)
        #expect(CurlRequest.uploadBufferSize(rateLimit: 100 << 20, bodyLength: 1 << 30) == 2 << 20)
        #expect(CurlRequest.uploadBufferSize(rateLimit: 512 << 10, bodyLength: 32 << 10) == 32 << 10)
    }
}
