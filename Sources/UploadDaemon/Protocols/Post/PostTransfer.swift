import Foundation
import UploadCore
import UploadHTTP
import UploadWire

/// multipart/form-data POST, the file streamed from disk in one part after the extra fields.
/// The server's status and the start of its answer land in `result`, with the uploaded file's URL
/// when the answer is JSON that names one. A 303 See Other (or 301, 302) is how a form's server
/// says "stored, see it there" (RFC 9110 §15.4.4): a success, its `Location` the result, and
/// nothing fetched from it.
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
        let postURL = response.redirectedURL ?? target.url
        if Self.seeOther.contains(response.status), let location = response.header("location") {
            try context.source.confirmUnchanged()
            let url = URL(string: location, relativeTo: URL(string: postURL))?.absoluteString ?? location
            return JobResult(
                url: Redaction.redactURL(url), status: response.status, body: String(response.bodyText.prefix(4096)))
        }
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(response, method: "POST", url: target.url)
        }
        try context.source.confirmUnchanged()
        let url = response.resultURL(pointer: target.resultURLPointer, answeredURL: postURL)
        return JobResult(url: url, status: response.status, body: String(response.bodyText.prefix(4096)))
    }

    /// The redirects after a POST that mean it was taken, and name where its result is.
    static let seeOther: Set<Int> = [301, 302, 303]

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        _ = try await deleteFromServer(job, target: target)
    }

    func deleteFromServer(_ job: Job, target: ResolvedTarget) async throws -> DeleteOutcome {
        try await HTTPDelete.resultURL(of: job, target: target, http: http)
    }
}
