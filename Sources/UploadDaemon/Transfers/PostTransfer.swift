import Foundation
import UploadCore

/// multipart/form-data POST, the file streamed from disk in one part after the extra fields.
/// The server's status and the start of its answer land in `result`, with the uploaded file's URL
/// when the answer is JSON that names one.
struct PostTransfer: Transfer {
    let http: HTTPClient

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
                retryAfter: response.retryAfter)
        }
        try context.source.verifyUnchanged()
        let url = ResultURL.find(in: response, pointer: target.resultURLPointer)
        return JobResult(url: url, status: response.status, body: String(response.bodyText.prefix(4096)))
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        guard let url = job.result?.url, url.hasPrefix("http") else {
            throw TransferFailure.config("the server did not say where job \(job.id)'s file is, so it cannot be deleted")
        }
        try await HTTPDelete.send(http: http, target: target, url: url)
    }
}

/// Finds the uploaded file's URL in a server's answer.
enum ResultURL {
    /// Looks at `pointer` (a JSON pointer such as `/data/url`) when given, else at `url`, `fileUrl`
    /// and `location`, at the top level or under `data`; else at the Location header.
    static func find(in response: HTTPResponse, pointer: String?) -> String? {
        if let json = try? JSONSerialization.jsonObject(with: Data(response.body)) {
            if let pointer {
                if let url = resolve(pointer, in: json) as? String { return url }
                return response.header("location")
            }
            let keys = ["url", "fileUrl", "location", "Location", "file_url"]
            for container in [json, (json as? [String: Any])?["data"] as Any] {
                guard let object = container as? [String: Any] else { continue }
                for key in keys { if let value = object[key] as? String { return value } }
            }
        }
        return response.header("location")
    }

    static func resolve(_ pointer: String, in json: Any) -> Any? {
        var current: Any? = json
        for token in pointer.split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = current as? [String: Any] {
                current = object[key]
            } else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }
}
