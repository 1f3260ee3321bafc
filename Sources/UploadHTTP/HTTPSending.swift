/// Sends one request and returns the server's answer: the seam between every transfer and the
/// network. `HTTPClient` (libcurl) in the daemon; scripted servers in unit tests, so that each
/// protocol's answers (a tus 409, an S3 error document, a 503 with Retry-After) are tested without
/// a socket.
package protocol HTTPSending: Sendable {
    func send(_ request: HTTPRequest, meter: ProgressMeter?) async throws -> HTTPResponse
}

extension HTTPSending {
    /// A request whose upload progress nobody watches.
    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await send(request, meter: nil)
    }
}

extension HTTPClient: HTTPSending {}
