import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

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
        #expect(response(body).resultURL(pointer: nil) == expected)
    }

    @Test func topLevelBeforeData() {
        #expect(response(#"{"url":"top","data":{"url":"inner"}}"#).resultURL(pointer: nil) == "top")
    }

    @Test func jsonPointer() {
        let body = #"{"result":{"files":[{"href":"https://h/a"},{"href":"https://h/b"}]},"a/b":{"~x":"esc"}}"#
        #expect(response(body).resultURL(pointer: "/result/files/1/href") == "https://h/b")
        #expect(response(body).resultURL(pointer: "/a~1b/~0x") == "esc")
        #expect(response(body).resultURL(pointer: "/result/files/9/href") == nil)
        #expect(response(body).resultURL(pointer: "/result") == nil, "not a string")
    }

    @Test func locationHeaderWhenTheBodySaysNothing() {
        #expect(response("created", location: "https://h/loc").resultURL(pointer: nil) == "https://h/loc")
        #expect(
            response(#"{"ok":true}"#, location: "https://h/loc").resultURL(pointer: nil) == "https://h/loc")
        #expect(
            response(#"{"url":42}"#, location: "https://h/loc").resultURL(pointer: nil) == "https://h/loc")
        #expect(response("").resultURL(pointer: nil) == nil)
    }

    /// A Location that is a relative reference names the file on the server that answered (RFC 9110
    /// §10.2.2): resolved against the URL the POST went to, or was redirected to.
    @Test func aRelativeLocationIsResolvedAgainstTheURLThatAnswered() {
        let answered = "http://h:8080/store/run/"
        #expect(
            response("", location: "/store/run/body").resultURL(pointer: nil, answeredURL: answered)
                == "http://h:8080/store/run/body")
        #expect(
            response("", location: "f.bin").resultURL(pointer: nil, answeredURL: answered)
                == "http://h:8080/store/run/f.bin")
        #expect(
            response("", location: "https://cdn/f").resultURL(pointer: nil, answeredURL: answered)
                == "https://cdn/f", "an absolute one as it is")
        #expect(
            response(#"{"url":"/kept"}"#, location: "/l").resultURL(pointer: nil, answeredURL: answered)
                == "/kept", "what the body names is the server's own word")
        #expect(response("", location: "/store/run/body").resultURL(pointer: nil) == "/store/run/body")
    }

    /// The doc comment promises the Location header last, whatever was looked at before it.
    @Test func locationHeaderWhenThePointerFindsNothing() {
        #expect(
            response(#"{"ok":true}"#, location: "https://h/loc").resultURL(pointer: "/data/url")
                == "https://h/loc")
    }
}
