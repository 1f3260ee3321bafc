import Foundation
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// HTTP as RFC 9110 has it, over any `HTTPSending`: what every protocol's requests get.
///
/// - 417 Expectation Failed: the request is sent once more without `Expect: 100-continue`.
/// - 307 and 308 to the same origin: followed (at most `maxRedirects` hops), the method and the
///   body sent again from the start, with the same credentials and headers. A redirect to
///   another origin is handed back as it came: the transfers refuse it, as the file and the
///   credentials would go where the user did not say.
/// - A server that never answers `Expect: 100-continue` costs libcurl's 1 s wait before every
///   body it sends. After the first such wait the origin is remembered for the daemon's run, and
///   bodies go to it without `Expect`.
///
/// 301, 302 and 303 are the transfers' to read (a POST's 303 names the uploaded file).
package final class HTTPSemantics: HTTPSending {
    package let inner: any HTTPSending
    package static let maxRedirects = 5
    /// Bodies from this size on are sent with `Expect: 100-continue` (`CurlRequest` drops it for
    /// smaller ones).
    package static let expectThreshold: Int64 = 1 << 20

    /// Origins that never answered 100 Continue, or refused `Expect` with 417.
    private let withoutExpect = Mutex(Set<String>())

    package init(_ inner: any HTTPSending) { self.inner = inner }

    /// Whether bodies to the origin of `url` are sent without `Expect`.
    package func sendsWithoutExpect(to url: String) -> Bool {
        guard let origin = Origin(url) else { return false }
        return withoutExpect.withLock { $0.contains(origin.description) }
    }

    package func send(_ original: HTTPRequest, meter: ProgressMeter?) async throws -> HTTPResponse {
        var request = original
        // An `Expect` the caller set is theirs: not touched, nor learnt from.
        let callerSetExpect = original.headers.contains { $0.name.lowercased() == "expect" }
        if !callerSetExpect && Self.sendsExpect(request) && sendsWithoutExpect(to: request.url) {
            request.headers.append(Self.noExpect)
        }
        var hops = 0
        var resentWithoutExpect = false
        while true {
            let sentBefore = meter?.bytesSent ?? 0
            var response = try await inner.send(request, meter: meter)
            let expected =
                !callerSetExpect && Self.sendsExpect(request)
                && !request.headers.contains { $0.name.lowercased() == "expect" }
            if response.status == 417 && !callerSetExpect && !resentWithoutExpect {
                remember(request.url, "refused Expect: 100-continue with 417")
                Self.rewind(meter, to: sentBefore, because: "the server refused Expect: 100-continue (HTTP 417)")
                request.headers.append(Self.noExpect)
                resentWithoutExpect = true
                continue
            }
            // The body went out without a 100 Continue first: libcurl waited its second for it.
            if expected && !response.statusLines.isEmpty && !response.continued && HTTPStatus.isSuccess(response.status)
            {
                remember(request.url, "did not answer Expect: 100-continue")
            }
            if response.status == 307 || response.status == 308, hops < Self.maxRedirects,
                let next = Self.sameOriginRedirect(from: request.url, location: response.header("location"))
            {
                hops += 1
                Self.rewind(meter, to: sentBefore, because: "the server moved it (HTTP \(response.status))")
                Log.debug(
                    "\(request.method) \(Redaction.redactURL(request.url)): \(response.status) to \(Redaction.redactURL(next)), following"
                )
                request.url = next
                continue
            }
            if request.url != original.url { response.redirectedURL = request.url }
            return response
        }
    }

    /// `Expect:` with no value: libcurl then sends none.
    package static let noExpect = KeyValue(name: "Expect", value: "")

    /// Whether libcurl sends `Expect: 100-continue` with this request (HTTP/1.1, a body of 1 MiB or more).
    package static func sendsExpect(_ request: HTTPRequest) -> Bool {
        request.method != "HEAD" && request.body.sizeHint >= expectThreshold
    }

    /// The absolute URL a 307 or 308 names, when it is on the same origin as `url`; else nil.
    package static func sameOriginRedirect(from url: String, location: String?) -> String? {
        guard let location, !location.isEmpty, let base = URL(string: url),
            let next = URL(string: location, relativeTo: base)?.absoluteString,
            let from = Origin(url), let to = Origin(next), from == to
        else { return nil }
        return next
    }

    private static func rewind(_ meter: ProgressMeter?, to sentBefore: Int64, because reason: String) {
        guard let meter else { return }
        let resent = meter.bytesSent - sentBefore
        if resent > 0 { meter.rewind(by: resent, because: reason) }
    }

    private func remember(_ url: String, _ what: String) {
        guard let origin = Origin(url)?.description else { return }
        let new = withoutExpect.withLock { $0.insert(origin).inserted }
        if new { Log.info("\(origin) \(what): its request bodies are sent without waiting for it from now on") }
    }
}
