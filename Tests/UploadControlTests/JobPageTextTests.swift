import Testing
import UploadWire

@testable import UploadClient

/// Pages taken apart without parsing their jobs, and any page of another shape refused.
@Suite struct JobPageTextTests {
    private func page(_ text: String) -> (jobs: String, next: UInt64?)? {
        guard let page = JobPageText(Array(text.utf8)) else { return nil }
        return (String(decoding: page.jobs, as: UTF8.self), page.next?.rawValue)
    }

    @Test func thePagesUploaddWrites() throws {
        let jobs = #"{"id":1,"source":"/a/]}\"\\","state":"queued"},{"id":2,"metadata":{"k":["v"]},"state":"failed"}"#
        let last = try #require(page(#"{"jobs":["# + jobs + "]}"))
        #expect(last.jobs == jobs && last.next == nil)
        let middle = try #require(page(#"{"jobs":["# + jobs + #"],"next":2}"#))
        #expect(middle.jobs == jobs && middle.next == 2)
        let empty = try #require(page(#"{"jobs":[]}"#))
        #expect(empty.jobs.isEmpty && empty.next == nil)
    }

    /// Each of these goes to the parser instead.
    @Test(arguments: [
        #"{"jobs": [{"id":1}]}"#, #"{"errors":[],"jobs":[{"id":1}]}"#, #"{"jobs":[{"id":1}],"more":[1],"next":2}"#,
        #"{"jobs":[{"id":1}],"next":0}"#, #"{"jobs":[{"id":1}],"next":99999999999999999999}"#,
        #"{"jobs":[{"id":1}]],"next":2}"#, #"{"jobs":[{"id":"1}]}"#, #"{"jobs":[{"id":1}"#, #"{"jobs":["#, "",
        #"{"jobs":[{"id":1}],"next":-2}"#,
    ])
    func otherShapesAreRefused(text: String) {
        #expect(page(text) == nil)
    }
}
