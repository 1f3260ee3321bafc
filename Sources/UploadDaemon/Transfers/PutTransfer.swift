import Foundation
import UploadCore

/// HTTP PUT of the whole file to a URL (WebDAV servers, nginx, presigned URLs). Not resumable: a
/// retry sends the file again. `delete` sends DELETE to the same URL.
struct PutTransfer: Transfer {
    let http: HTTPClient

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        var extra: [KeyValue] = []
        if !target.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            extra.append(KeyValue(name: "Content-Type", value: MIMETypes.shared.type(forFileName: target.fileName)))
        }
        let region = FileRegion(file: context.source, offset: 0, length: context.source.size)
        let response = try await http.send(target.request("PUT", headers: extra, body: .file(region)), meter: context.meter)
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "PUT", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        try context.source.verifyUnchanged()
        return JobResult(url: Redaction.redactURL(target.url), status: response.status, body: nil)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        try await HTTPDelete.send(http: http, target: target, url: target.url)
    }
}

/// DELETE of an uploaded object; a 404 or 410 means it is already gone, which is what was wanted.
enum HTTPDelete {
    static func send(http: HTTPClient, target: ResolvedTarget, url: String) async throws {
        let response = try await http.send(target.request("DELETE", url: url))
        guard HTTPStatus.isSuccess(response.status) || response.status == 404 || response.status == 410 else {
            throw TransferFailure.http(
                status: response.status, method: "DELETE", url: Redaction.redactURL(url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
    }
}
