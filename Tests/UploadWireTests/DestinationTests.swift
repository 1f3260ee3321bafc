import Foundation
import Testing

@testable import UploadWire

@Suite("Destination parsing and safe file names")
struct DestinationTests {
    @Test(arguments: ["https://example.com/dir/", "http://127.0.0.1:8080/up/name.bin", "HTTPS://Example.com/x"])
    func httpURLs(text: String) throws {
        let destination = try Destination.parse(text)
        guard case .http(let url) = destination else {
            Issue.record("expected http, got \(destination)")
            return
        }
        #expect(url.absoluteString == text)
        #expect(destination.impliedProtocol == nil)
    }

    @Test func s3BucketAndKey() throws {
        #expect(try Destination.parse("s3://bucket/prefix/") == .s3(bucket: "bucket", key: "prefix/"))
        #expect(try Destination.parse("s3://bucket/a/b.mp4") == .s3(bucket: "bucket", key: "a/b.mp4"))
        #expect(try Destination.parse("s3://bucket") == .s3(bucket: "bucket", key: ""))
        #expect(try Destination.parse("s3://bucket/").impliedProtocol == .s3)
    }

    @Test func fileURLs() throws {
        #expect(try Destination.parse("file:///srv/in/") == .file(path: "/srv/in/"))
        #expect(try Destination.parse("file:///srv/in/a%20b.txt") == .file(path: "/srv/in/a b.txt"))
        #expect(try Destination.parse("file:///srv/in/").impliedProtocol == .file)
    }

    /// `auto` picks a protocol without asking a server only where one protocol's traits claim the
    /// kind, and that protocol uploads there: a second protocol for `file://` leaves it as it was.
    @Test func autoPicksAtMostOneProtocolPerKindAndOnlyOneThatFits() {
        for kind in [Destination.Kind.http, .s3, .file] {
            let claiming = UploadProtocol.allCases.filter { $0.traits.chosenByAutoFor.contains(kind) }
            #expect(claiming.count <= 1, "\(kind): \(claiming)")
            for uploadProtocol in claiming { #expect(uploadProtocol.traits.destinations.contains(kind)) }
        }
        #expect(UploadProtocol.allCases.allSatisfy { !$0.traits.chosenByAutoFor.contains(.http) }, "http is probed")
    }

    @Test func remotes() throws {
        #expect(try Destination.parse("nas:videos/2024") == .remote(name: "nas", path: "videos/2024"))
        #expect(try Destination.parse("my-remote_2.x:") == .remote(name: "my-remote_2.x", path: ""))
        #expect(try Destination.parse("nas:/abs").impliedProtocol == nil)
    }

    @Test(arguments: [
        ("", "it is empty"),
        ("https://host/a\nb", "control character"),
        ("https://", "not a valid URL"),
        ("s3:///key", "no bucket name"),
        ("file://relative/dir", "absolute path"),
        ("/just/a/path", "no scheme"),
        ("bad name:x", "unknown scheme"),
        (":path", "unknown scheme"),
        ("ftp://host/dir/", "does not upload to ftp:// URLs"),
        ("sftp://me@host/x", "does not upload to sftp:// URLs"),
        ("webdav://host/", "does not upload to webdav:// URLs"),
    ])
    func refuses(text: String, reason: String) {
        let error = #expect(throws: Destination.ParseError.self) { try Destination.parse(text) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
        #expect(error?.description.contains("use http(s)://host/dir/") == true)
    }

    @Test func errorsNeverShowThePassword() {
        let error = #expect(throws: Destination.ParseError.self) { try Destination.parse("https://bob:hunter2@/x") }
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test(arguments: [("/home/u/video.mp4", "video.mp4"), ("/a/vidéo 1.mov", "vidéo 1.mov"), ("/x/.hidden", ".hidden")])
    func safeNames(path: String, name: String) {
        #expect(SafeFileName.component(from: path) == name)
    }

    @Test(arguments: ["/", "//", "/a/..", "/a/.", "/a/b\n", "/a/tab\there", "/a/del\u{7F}", ""])
    func unsafeNames(path: String) {
        #expect(SafeFileName.component(from: path) == nil)
    }

    /// The last component is found by bytes now: it must be what NSString's lastPathComponent gives
    /// (but for `//`, which corelibs reads as "" and Darwin as "/": unsafe either way, see above).
    @Test(arguments: [
        "", "/", "a", "/a", "a/", "/a/b", "/a/b/", "/a/b//", "a//b", "/é/ü", "/dir/vidéo 1.mov/", "/a/🇫🇷",
        "x/🇫🇷/", "/a/e\u{301}", "/a/.", "/a/..", "..", "/a b/c d",
    ])
    func lastComponentIsNSStringsLastPathComponent(path: String) {
        #expect(SafeFileName.lastComponent(of: path) == (path as NSString).lastPathComponent)
    }

    @Test func isSafeRefusesSlashes() {
        #expect(!SafeFileName.isSafe("a/b"))
        #expect(SafeFileName.isSafe("a b.txt"))
    }
}
