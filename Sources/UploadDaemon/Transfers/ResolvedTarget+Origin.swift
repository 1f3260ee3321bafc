import UploadCore
import UploadHTTP
import UploadWire

extension ResolvedTarget {
    /// Whether a request to `url` may carry the credentials and headers meant for the destination.
    func isSameOrigin(_ url: String) -> Bool {
        // The destination itself (every request of a PUT): no need to parse both (URLComponents
        // with its IDNA host check was 2% of the daemon's CPU per small file).
        if url == self.url { return true }
        guard let destination = Origin(self.url), let other = Origin(url) else { return false }
        return destination == other
    }

    /// A URL a server handed out (a tus upload URL, a file's URL in a JSON answer), checked before
    /// anything is sent to it: the same origin as the destination, or another one only when the
    /// remote allows it (`allow_cross_origin`, and then without credentials). Never from https to
    /// plain http.
    func checkServerURL(_ url: String, for purpose: String) throws(TransferFailure) -> String {
        guard let other = Origin(url) else {
            throw TransferFailure(
                JobError(
                    code: "protocol",
                    message: "the server named an unusable URL for \(purpose): \(Redaction.redactURL(url))"),
                retryable: false)
        }
        if isSameOrigin(url) { return url }
        let destination = Origin(self.url)
        if destination?.scheme == "https" && other.scheme == "http" {
            throw TransferFailure(
                JobError(
                    code: "protocol",
                    message:
                        "the server sent \(purpose) from https to plain http (\(Redaction.redactURL(url))); refusing to send anything there"
                ),
                retryable: false)
        }
        guard allowCrossOrigin else {
            throw TransferFailure(
                JobError(
                    code: "protocol",
                    message:
                        "the server named another origin for \(purpose) (\(other), not \(destination.map(\.description) ?? self.url)); "
                        + "refusing to send your file or credentials there. If that server is yours, set allow_cross_origin = yes in the remote's section; it then gets the file without your credentials"
                ),
                retryable: false)
        }
        return url
    }
}
