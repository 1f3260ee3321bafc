import Foundation
import UploadCore
import UploadHTTP
import UploadWire

/// HTTP PUT of the whole file to a URL (WebDAV servers, nginx, presigned URLs). Not resumable: a
/// retry sends the file again. A PUT refused the way servers refuse one into a missing folder
/// (404, 409, 424, 500) asks whether the folder exists, makes the missing ones and sends the file
/// once more (`WebDAVCollections`). `delete` sends DELETE to the same URL.
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
        let sentAt = WebDAVCollections.moment()
        var response = try await http.send(put, meter: context.meter)
        if WebDAVCollections.mayMeanMissingFolder(response.status) {
            // The folder may not exist. If the server says so, make it, then send the file again (once).
            // The file goes again also when no folder was left to make: another job into the same
            // new folder made it meanwhile (two PUTs side by side both get the 409).
            let folders = WebDAVCollections(http: http)
            let state = try await folders.parentState(
                of: target.url, target: target, putStatus: response.status, sentAt: sentAt)
            if state != .present {
                let made = state == .missing ? try await folders.createParents(of: target.url, target: target) : false
                await context.note(
                    "the server answered the PUT with HTTP \(response.status): "
                        + (made ? "made the missing folders" : "the missing folders were made meanwhile"))
                context.meter.restart(because: "the folder was missing (HTTP \(response.status)); made it")
                response = try await http.send(put, meter: context.meter)
            }
        }
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(response, method: "PUT", url: target.url)
        }
        try context.source.confirmUnchanged()
        return JobResult(
            url: Redaction.redactURL(response.redirectedURL ?? target.url), status: response.status, body: nil)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        _ = try await deleteFromServer(job, target: target)
    }

    func deleteFromServer(_ job: Job, target: ResolvedTarget) async throws -> DeleteOutcome {
        try await HTTPDelete.send(http: http, target: target, url: target.url)
    }
}
