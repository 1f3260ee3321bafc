import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// A multipart body's length is -1 until libcurl works it out: it must still count as a body
/// (for the global limit and the upload buffer), and as not sent before libcurl knows its size.
@Suite("Multipart bodies: sent, limited and buffered as bodies")
struct MultipartBodyTests {
    init() { HTTPClient.globalInit() }

    func multipart(size: Int) throws -> (HTTPBody, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let path = try directory.write("photo.jpg", String(repeating: "x", count: size))
        let snapshot = try SnapshotCache(cacheDirectory: directory.path + "/cache").snapshot(
            source: path, id: JobID(1), mode: .none)
        let source = try SourceFile(snapshot: snapshot, displayPath: path)
        let region = FileRegion(file: source, offset: 0, length: Int64(size))
        let body = HTTPBody.multipart([
            .field(name: "album", value: "trip"),
            .file(name: "file", fileName: "photo.jpg", contentType: "image/jpeg", region: region),
        ])
        return (body, directory)
    }

    /// Before the fix, the first progress call (an upload total of 0, before the connection was
    /// made) started the answer's deadline: a POST longer than `response_timeout` was cut off
    /// while its bytes were still going out.
    @Test func theAnswersDeadlineWaitsUntilTheBodyIsKnownAndSent() throws {
        let (body, directory) = try multipart(size: 100_000)
        defer { _ = directory }
        var request = HTTPRequest(method: "POST", url: "http://127.0.0.1:9/upload", body: body)
        request.responseTimeout = 1
        let curl = try CurlRequest(request, meter: nil)
        #expect(!curl.shouldAbortWhileIdle())
        usleep(1_100_000)
        #expect(!curl.shouldAbortWhileIdle(), "the deadline ran before anything was sent")
        #expect(!curl.answerTimedOut)
    }

    @Test func aMultipartBodyTakesAShareOfTheLimitAndABufferOfItsSize() throws {
        let (body, directory) = try multipart(size: 1 << 20)
        defer { _ = directory }
        #expect(body.length == -1)
        #expect(body.sizeHint > 1 << 20 && body.sizeHint < (1 << 20) + 4096, "\(body.sizeHint)")
        let curl = try CurlRequest(
            HTTPRequest(method: "POST", url: "http://127.0.0.1:9/upload", body: body), meter: nil)
        #expect(curl.sendsBody)
        #expect(CurlRequest.uploadBufferSize(rateLimit: nil, bodyLength: body.sizeHint) > 1 << 20)
        #expect(!(try CurlRequest(HTTPRequest(method: "GET", url: "http://127.0.0.1:9/"), meter: nil)).sendsBody)
    }
}
