import Foundation
import Testing
import UploadCore

@testable import UploadDaemon

@Suite("ResultURL: where the server put the file")
struct ResultURLTests {
    func response(_ body: String, location: String? = nil) -> HTTPResponse {
        HTTPResponse(
            status: 201, headers: location.map { [KeyValue(name: "location", value: $0)] } ?? [], body: Array(body.utf8)
        )
    }

    @Test(arguments: [
        (#"{"url":"https://h/1"}"#, "https://h/1"), (#"{"fileUrl":"https://h/2"}"#, "https://h/2"),
        (#"{"location":"https://h/3"}"#, "https://h/3"), (#"{"data":{"fileUrl":"https://h/4"}}"#, "https://h/4"),
        (#"{"data":{"url":"https://h/5"},"code":0}"#, "https://h/5"), (#"{"file_url":"https://h/6"}"#, "https://h/6"),
    ])
    func wellKnownKeys(body: String, expected: String) {
        #expect(ResultURL.find(in: response(body), pointer: nil) == expected)
    }

    @Test func topLevelBeforeData() {
        #expect(ResultURL.find(in: response(#"{"url":"top","data":{"url":"inner"}}"#), pointer: nil) == "top")
    }

    @Test func jsonPointer() {
        let body = #"{"result":{"files":[{"href":"https://h/a"},{"href":"https://h/b"}]},"a/b":{"~x":"esc"}}"#
        #expect(ResultURL.find(in: response(body), pointer: "/result/files/1/href") == "https://h/b")
        #expect(ResultURL.find(in: response(body), pointer: "/a~1b/~0x") == "esc")
        #expect(ResultURL.find(in: response(body), pointer: "/result/files/9/href") == nil)
        #expect(ResultURL.find(in: response(body), pointer: "/result") == nil, "not a string")
    }

    @Test func locationHeaderWhenTheBodySaysNothing() {
        #expect(ResultURL.find(in: response("created", location: "https://h/loc"), pointer: nil) == "https://h/loc")
        #expect(
            ResultURL.find(in: response(#"{"ok":true}"#, location: "https://h/loc"), pointer: nil) == "https://h/loc")
        #expect(
            ResultURL.find(in: response(#"{"url":42}"#, location: "https://h/loc"), pointer: nil) == "https://h/loc")
        #expect(ResultURL.find(in: response(""), pointer: nil) == nil)
    }

    /// The doc comment promises the Location header last, whatever was looked at before it.
    @Test func locationHeaderWhenThePointerFindsNothing() {
        #expect(
            ResultURL.find(in: response(#"{"ok":true}"#, location: "https://h/loc"), pointer: "/data/url")
                == "https://h/loc")
    }
}
