import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// What a waiting job's line says of its last error: the server's answer, without the request
/// the line names already (issue 49, item 7: "retrying in 43s: HTTP 500").
struct ActivityReasonTests {
    @Test func theRequestItNamesFirstGoes() {
        let failure = TransferFailure.http(
            status: 503, method: "PUT", url: "http://127.0.0.1:37657/up/three.bin", body: "failed on purpose",
            retryAfter: nil)
        let error = failure.error
        #expect(error.message.hasPrefix("PUT http://127.0.0.1:37657/up/three.bin: "), "\(error.message)")
        #expect(JobActivity.reason(error).hasPrefix("HTTP 503"), "\(JobActivity.reason(error))")
    }

    @Test func otherMessagesStayWhole() {
        for message in [
            "connect to 127.0.0.1 port 1 failed: Connection refused", "PUT: no URL: odd",
            "no bytes moved for 60s; the connection stalled", "GET a b://c: d",
        ] {
            #expect(JobActivity.reason(JobError(code: "network", message: message)) == message)
        }
    }
}
