import Foundation
import UploadCore
import UploadWire

/// multipart/form-data POST, the file streamed from disk in one part after the extra fields.
/// The server's status and the start of its answer land in `result`, with the uploaded file's URL
/// when the answer is JSON that names one.
struct PostTransfer: Transfer {
    let http: any HTTPSending

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        var parts = target.fields.map { MultipartPart.field(name: $0.name, value: $0.value) }
        let region = FileRegion(file: context.source, offset: 0, length: context.source.size)
        parts.append(
            .file(
                name: target.fileField, fileName: target.fileName,
                contentType: MIMETypes.shared.type(forFileName: target.fileName), region: region))
        let response = try await http.send(target.request("POST", body: .multipart(parts)), meter: context.meter)
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "POST", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter, location: response.header("location"))
        }
        try context.source.confirmUnchanged()
        let url = response.resultURL(pointer: target.resultURLPointer)
        return JobResult(url: url, status: response.status, body: String(response.bodyText.prefix(4096)))
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        guard let url = job.result?.url, url.hasPrefix("http") else {
            throw TransferFailure.config(
                "the server did not say where job \(job.id)'s file is, so it cannot be deleted")
        }
        try await HTTPDelete.send(
            http: http, target: target, url: try target.checkServerURL(url, for: "deleting the file"))
    }
}
