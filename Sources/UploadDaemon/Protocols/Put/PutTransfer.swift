import Foundation
import UploadCore
import UploadWire

/// HTTP PUT of the whole file to a URL (WebDAV servers, nginx, presigned URLs). Not resumable: a
/// retry sends the file again. A 409 makes the missing WebDAV folders first (`WebDAVCollections`).
/// `delete` sends DELETE to the same URL.
struct PutTransfer: Transfer {
    let http: any HTTPSending

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        var extra: [KeyValue] = []
        if !target.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            extra.append(KeyValue(name: "Content-Type", value: MIMETypes.shared.type(forFileName: target.fileName)))
        }
        let region = FileRegion(file: context.source, offset: 0, length: context.source.size)
        let put = target.request("PUT", headers: extra, body: .file(region))
        var response = try await http.send(put, meter: context.meter)
        if response.status == 409 {
            // WebDAV: the folder does not exist. Make it, then send the file again (once).
            try await WebDAVCollections(http: http).createParents(of: target.url, target: target)
            await context.note("made the missing folders on the server")
            context.meter.rewind(by: context.meter.bytesSent)
            response = try await http.send(put, meter: context.meter)
        }
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "PUT", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter, location: response.header("location"))
        }
        try context.source.confirmUnchanged()
        return JobResult(url: Redaction.redactURL(target.url), status: response.status, body: nil)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        try await HTTPDelete.send(http: http, target: target, url: target.url)
    }
}

/// DELETE of an uploaded object (or a tus upload, with `Tus-Resumable`); a 404 or 410 means it is
/// already gone, which is what was wanted.
enum HTTPDelete {
    static func send(http: any HTTPSending, target: ResolvedTarget, url: String, headers: [KeyValue] = []) async throws
    {
        let response = try await http.send(target.request("DELETE", url: url, headers: headers))
        guard HTTPStatus.isSuccess(response.status) || response.status == 404 || response.status == 410 else {
            throw TransferFailure.http(
                status: response.status, method: "DELETE", url: Redaction.redactURL(url), body: response.bodyText,
                retryAfter: response.retryAfter, location: response.header("location"))
        }
    }
}
