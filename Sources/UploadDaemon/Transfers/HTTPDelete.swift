import UploadCore
import UploadHTTP
import UploadWire

/// DELETE of an uploaded object (or a tus upload, with `Tus-Resumable`); a 404 or 410 means it is
/// already gone, which is what was wanted.
enum HTTPDelete {
    @discardableResult
    static func send(http: any HTTPSending, target: ResolvedTarget, url: String, headers: [KeyValue] = []) async throws
        -> DeleteOutcome
    {
        let response = try await http.send(target.request("DELETE", url: url, headers: headers))
        guard HTTPStatus.isSuccess(response.status) || response.status == 404 || response.status == 410 else {
            throw TransferFailure.http(response, method: "DELETE", url: url)
        }
        return HTTPStatus.isSuccess(response.status) ? .deleted : .absent(status: response.status)
    }

    /// DELETE of the URL the server named in its answer (`job.result.url`, checked as any URL a
    /// server names): where POST receivers and the block protocol put the file.
    static func resultURL(of job: Job, target: ResolvedTarget, http: any HTTPSending) async throws -> DeleteOutcome {
        guard let url = job.result?.url, url.hasPrefix("http") else {
            throw TransferFailure.config(
                "the server did not say where job \(job.id)'s file is, so it cannot be deleted")
        }
        return try await send(http: http, target: target, url: try target.checkServerURL(url, for: "deleting the file"))
    }
}

extension TransferFailure {
    /// The server answered `method` to `url` with an error status: its reason phrase and the start
    /// of its answer make the message.
    static func http(_ response: HTTPResponse, method: String, url: String) -> TransferFailure {
        .http(
            status: response.status, method: method, url: Redaction.redactURL(url), body: response.bodyText,
            retryAfter: response.retryAfter, location: response.header("location"), reasonPhrase: response.reason)
    }
}
