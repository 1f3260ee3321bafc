import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("Origins: credentials go only where the user sent them")
struct OriginTests {
    func target(_ url: String, allowCrossOrigin: Bool = false) -> ResolvedTarget {
        var target = ResolvedTarget(uploadProtocol: .tus, url: url, fileName: "a.bin")
        target.credentials = BasicCredentials(user: "me", password: "pw")
        target.headers = [KeyValue(name: "X-Api-Key", value: "k")]
        target.allowCrossOrigin = allowCrossOrigin
        return target
    }

    @Test(arguments: [
        ("https://h.example/files/", "https://H.example:443/files/abc", true),
        ("http://h:80/a", "http://h/b", true),
        ("http://h:8080/a", "http://h:8081/a", false),
        ("http://h/a", "https://h/a", false),
        ("https://h/a", "https://other/a", false),
        ("http://127.0.0.1:5000/x", "http://localhost:5000/x", false),
        ("http://h:8080/dir/a%20b.bin", "http://h:8080/dir/a%20b.bin", true),
    ])
    func sameOriginIsSchemeHostAndPort(destination: String, other: String, same: Bool) {
        #expect(target(destination).isSameOrigin(other) == same)
    }

    @Test func requestsToAnotherOriginCarryNoCredentialsOrUserHeaders() {
        let target = target("https://h/files/")
        let own = target.request("PATCH", url: "https://h/files/1")
        #expect(own.credentials != nil)
        #expect(own.headers.contains { $0.name == "X-Api-Key" })
        let other = target.request(
            "PATCH", url: "https://cdn.example/files/1", headers: [KeyValue(name: "Tus-Resumable", value: "1.0.0")])
        #expect(other.credentials == nil)
        #expect(other.headers == [KeyValue(name: "Tus-Resumable", value: "1.0.0")])
    }

    @Test func aURLOnAnotherOriginIsRefusedUnlessAllowed() throws {
        let refused = #expect(throws: TransferFailure.self) {
            try target("https://h/files/").checkServerURL("https://cdn.example/u/1", for: "the tus upload")
        }
        #expect(refused?.retryable == false)
        #expect(refused?.error.message.contains("allow_cross_origin") == true)
        #expect(
            try target("https://h/files/", allowCrossOrigin: true).checkServerURL("https://cdn.example/u/1", for: "x")
                == "https://cdn.example/u/1")
        #expect(try target("https://h/files/").checkServerURL("https://h/files/2", for: "x") == "https://h/files/2")
    }

    @Test func neverFromHTTPSToPlainHTTPEvenWhenAllowed() {
        let error = #expect(throws: TransferFailure.self) {
            try target("https://h/files/", allowCrossOrigin: true).checkServerURL(
                "http://h/files/1", for: "the tus upload")
        }
        #expect(error?.error.message.contains("from https to plain http") == true)
    }

    @Test(arguments: ["ftp://h/x", "file:///etc/passwd", "not a url", ""])
    func unusableURLsAreRefused(url: String) {
        #expect(throws: TransferFailure.self) { try target("https://h/files/").checkServerURL(url, for: "x") }
    }
}

@Suite("TusHeaders: a server's numbers are checked before use")
struct TusHeadersTests {
    @Test(arguments: [
        ("0", Int64(100), Int64?(0)), ("100", 100, 100), ("101", 100, nil), ("-1", 100, nil),
        ("-9223372036854775808", 100, nil), ("99999999999999999999", .max, nil), ("+5", 100, nil), (" 5", 100, nil),
        ("5 ", 100, nil), ("abc", 100, nil), ("", 100, nil), ("9223372036854775807", .max, .max),
    ])
    func offsets(text: String, total: Int64, expected: Int64?) {
        #expect(TusHeaders.offset(text, total: total) == expected)
    }

    @Test func maxSizeIsPositive() {
        #expect(TusHeaders.maxSize("0") == nil)
        #expect(TusHeaders.maxSize("1073741824") == 1 << 30)
        #expect(TusHeaders.maxSize(nil) == nil)
    }
}
