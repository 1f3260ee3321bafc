import Foundation
import Testing

@testable import UploadCore

@Suite("HTTP status classification and failure messages")
struct TransferFailureTests {
    @Test(arguments: [408, 423, 429, 500, 502, 503, 504, 507, 599])
    func retryableStatuses(status: Int) {
        #expect(HTTPStatus.isRetryable(status))
        let failure = TransferFailure.http(status: status, method: "PUT", url: "https://h/x", body: "", retryAfter: nil)
        #expect(failure.retryable)
    }

    @Test(arguments: [400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 422])
    func statusesThatFailAtOnce(status: Int) {
        #expect(!HTTPStatus.isRetryable(status))
        let failure = TransferFailure.http(status: status, method: "PUT", url: "https://h/x", body: "", retryAfter: nil)
        #expect(!failure.retryable)
        #expect(failure.error.code == "http")
        #expect(failure.error.status == status)
    }

    @Test func successRange() {
        #expect(HTTPStatus.isSuccess(200))
        #expect(HTTPStatus.isSuccess(204))
        #expect(!HTTPStatus.isSuccess(199))
        #expect(!HTTPStatus.isSuccess(300))
    }

    @Test func retryAfterSeconds() {
        #expect(HTTPStatus.parseRetryAfter("120") == .seconds(120))
        #expect(HTTPStatus.parseRetryAfter(" 0 ") == .zero)
        #expect(HTTPStatus.parseRetryAfter("-1") == nil)
        #expect(HTTPStatus.parseRetryAfter("soon") == nil)
        #expect(HTTPStatus.parseRetryAfter("") == nil)
    }

    @Test func retryAfterHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(
            HTTPStatus.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now.addingTimeInterval(-90))
                == .seconds(90))
        #expect(HTTPStatus.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now.addingTimeInterval(60)) == .zero)
    }

    @Test func messageNamesMethodURLStatusAndServerText() {
        let failure = TransferFailure.http(
            status: 409, method: "PUT", url: "https://h/dir/a.bin", body: "the file is locked by another upload\n",
            retryAfter: nil)
        let message = failure.error.message
        #expect(message.contains("PUT https://h/dir/a.bin"))
        #expect(message.contains("409 Conflict"))
        #expect(message.contains("the file is locked by another upload"))
        #expect(failure.description == message)
    }

    @Test func htmlBodyIsReducedToItsTitle() {
        let body = """
            <html>
            <head><title>403 Forbidden</title></head>
            <body><center><h1>403 Forbidden</h1></center><hr><center>nginx/1.22.1</center></body>
            </html>
            """
        let message = TransferFailure.http(status: 403, method: "PUT", url: "https://h/x", body: body, retryAfter: nil)
            .error.message
        #expect(message.contains(": 403 Forbidden"))
        #expect(!message.contains("<"))
        #expect(!message.contains("nginx/1.22.1"))
        #expect(message.contains("check the user and password"))
    }

    /// Python's http.server: the message in the reason phrase, a page titled "Error response".
    @Test func aGenericPageGivesWayToTheReasonPhraseAndTheBodysOwnText() {
        let page = """
            <!DOCTYPE HTML>
            <html lang="en">
                <head>
                    <meta charset="utf-8">
                    <title>Error response</title>
                </head>
                <body>
                    <h1>Error response</h1>
                    <p>Error code: 400</p>
                    <p>Message: Field &quot;files&quot; not found.</p>
                    <p>Error code explanation: 400 - Bad request syntax or unsupported method.</p>
                </body>
            </html>
            """
        let message = TransferFailure.http(
            status: 400, method: "POST", url: "http://h/upload", body: page, retryAfter: nil,
            reasonPhrase: "Field \"files\" not found.")
        #expect(message.error.message == "POST http://h/upload: HTTP 400 Bad Request: Field \"files\" not found.")
        #expect(TransferFailure.summarize(page) == "Message: Field \"files\" not found.")
        // A standard reason phrase adds nothing; a title that says something stays the message.
        #expect(
            TransferFailure.summarize("<title>Quota exceeded</title>", reasonPhrase: "Forbidden") == "Quota exceeded")
        #expect(
            TransferFailure.summarize("{\"error\":\"no file\"}", reasonPhrase: "Bad Request")
                == "{\"error\":\"no file\"}")
        #expect(TransferFailure.summarize("", reasonPhrase: "Disk quota exceeded") == "Disk quota exceeded")
    }

    @Test func longBodiesAreCutToOneShortLine() {
        let body = String(repeating: "word ", count: 200) + "\nsecond line"
        let summary = TransferFailure.summarize(body)
        #expect(summary.count <= 201)
        #expect(summary.hasSuffix("…"))
        #expect(!summary.contains("\n"))
    }

    @Test func hintsForCommonStatuses() {
        let notFound = TransferFailure.http(status: 404, method: "PUT", url: "u", body: "", retryAfter: nil)
        #expect(notFound.error.message.contains("does the directory exist"))
        let tooLarge = TransferFailure.http(status: 413, method: "POST", url: "u", body: "", retryAfter: nil)
        #expect(tooLarge.error.message.contains("refuses a file this large"))
    }

    @Test func retryAfterIsCarried() {
        let failure = TransferFailure.http(status: 503, method: "PUT", url: "u", body: "", retryAfter: .seconds(7))
        #expect(failure.retryAfter == .seconds(7))
    }

    @Test func classifiedConstructors() {
        #expect(TransferFailure.network("x").retryable)
        #expect(TransferFailure.timeout("x").retryable)
        #expect(TransferFailure.stalled(seconds: 30).retryable)
        #expect(TransferFailure.stalled(seconds: 30).error.message.contains("30s"))
        #expect(!TransferFailure.source("x").retryable)
        #expect(!TransferFailure.config("x").retryable)
        #expect(!TransferFailure.tls("x").retryable)
        #expect(TransferFailure.tls("bad cert").error.message.contains("ca_file"))
        #expect(!TransferFailure.protocolViolation("x").retryable)
        #expect(TransferFailure.io("x", retryable: true).retryable)
    }
}
