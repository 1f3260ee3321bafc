import Foundation
import UploadCore

/// tus 1.0 (tus.io): creation, PATCH in chunks from the server's offset, and the extensions the
/// server advertises — creation-with-upload, checksum, termination, expiration.
///
/// The upload URL is journaled durably the moment the server hands it out, so a crash right after
/// creation resumes the same upload instead of leaving an orphan. On resume the server's
/// `Upload-Offset` (HEAD) is the truth.
struct TusTransfer: Transfer {
    let http: HTTPClient
    /// 8 MiB: large enough that the per-request round trip is noise on a fast link, small enough
    /// that an interrupted chunk costs little to resend and that servers buffering a PATCH in
    /// memory stay comfortable. `--chunk-size` changes it.
    static let defaultChunkSize: Int64 = 8 << 20
    static let resumable = KeyValue(name: "Tus-Resumable", value: "1.0.0")

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        let total = context.source.size
        let chunkSize = max(target.chunkSize ?? Self.defaultChunkSize, 1)
        let server = try await TusServer.discover(http: http, target: target)
        var upload: (url: String, expires: String?)?
        var offset: Int64 = 0
        if case .tus(let url, let expires)? = context.job.checkpoint {
            switch try await serverOffset(of: url, target: target) {
            case .some(let serverOffset):
                upload = (url, expires)
                offset = serverOffset
                await context.note("resuming at byte \(serverOffset) of \(total), where the server has it")
                try await context.commit(offset, .tus(uploadURL: url, expires: expires), false)
            case .none:
                await context.note("the tus server no longer has the upload (expired or removed); starting a new one")
            }
        }
        if upload == nil {
            let created = try await create(context, server: server, chunkSize: chunkSize)
            upload = (created.url, created.expires)
            offset = created.offset
        }
        guard let upload else { throw TransferFailure.protocolViolation("no tus upload was created") }
        let url = upload.url
        var expires = upload.expires
        var checksumRetries = 0
        while offset < total {
            let length = min(chunkSize, total - offset)
            var headers = [Self.resumable, KeyValue(name: "Upload-Offset", value: String(offset))]
            headers.append(KeyValue(name: "Content-Type", value: "application/offset+octet-stream"))
            if let checksum = try server.checksumHeader(context.source, offset: offset, length: length) { headers.append(checksum) }
            let body = HTTPBody.file(FileRegion(file: context.source, offset: offset, length: length))
            let response = try await http.send(target.request("PATCH", url: url, headers: headers, body: body), meter: context.meter)
            switch response.status {
            case 200..<300:
                guard let next = response.header("upload-offset").flatMap(Int64.init), next > offset, next <= total else {
                    throw TransferFailure.protocolViolation("PATCH answered without a valid Upload-Offset")
                }
                offset = next
                expires = response.header("upload-expires") ?? expires
                checksumRetries = 0
                try await context.commit(offset, .tus(uploadURL: url, expires: expires), false)
            case 409:
                // Offset mismatch: the server has a different idea of where we are. Ask it.
                guard let serverOffset = try await serverOffset(of: url, target: target) else {
                    throw TransferFailure.network("the tus upload vanished during PATCH (409, then HEAD found nothing)")
                }
                offset = serverOffset
            case 460 where checksumRetries < 3:
                checksumRetries += 1
                await context.note("the server rejected a chunk's checksum (460); sending it again")
            case 404, 410:
                throw TransferFailure(
                    JobError(code: "http", message: "PATCH \(Redaction.redactURL(url)): the upload expired or was removed (HTTP \(response.status))", status: response.status),
                    retryable: true)
            default:
                throw TransferFailure.http(
                    status: response.status, method: "PATCH", url: Redaction.redactURL(url), body: response.bodyText,
                    retryAfter: response.retryAfter)
            }
        }
        try context.source.verifyUnchanged()
        return JobResult(url: url, status: 204)
    }

    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {
        guard case .tus(let url, _)? = job.checkpoint else { return }
        try await terminate(url, target: target)
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        let checkpointURL: String?
        if case .tus(let url, _)? = job.checkpoint { checkpointURL = url } else { checkpointURL = nil }
        guard let url = checkpointURL ?? job.result?.url else {
            throw TransferFailure.config("job \(job.id) has no tus upload URL to delete")
        }
        try await terminate(url, target: target)
    }

    /// DELETE (the termination extension). A 404 or 410 means it is gone already.
    private func terminate(_ url: String, target: ResolvedTarget) async throws {
        let response = try await http.send(target.request("DELETE", url: url, headers: [Self.resumable]))
        guard HTTPStatus.isSuccess(response.status) || response.status == 404 || response.status == 410 else {
            throw TransferFailure.http(
                status: response.status, method: "DELETE", url: Redaction.redactURL(url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
    }

    /// HEAD: the server's offset, or nil when the upload is gone (404, 410).
    private func serverOffset(of url: String, target: ResolvedTarget) async throws -> Int64? {
        let response = try await http.send(target.request("HEAD", url: url, headers: [Self.resumable]))
        if response.status == 404 || response.status == 410 || response.status == 403 { return nil }
        guard HTTPStatus.isSuccess(response.status), let offset = response.header("upload-offset").flatMap(Int64.init) else {
            throw TransferFailure.http(
                status: response.status, method: "HEAD", url: Redaction.redactURL(url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        return offset
    }

    /// POST to the creation endpoint, with the first chunk when the server takes it
    /// (creation-with-upload). The new URL is journaled before anything else is sent.
    private func create(_ context: TransferContext, server: TusServer, chunkSize: Int64)
        async throws -> (url: String, expires: String?, offset: Int64)
    {
        let target = context.target
        let total = context.source.size
        if let maxSize = server.maxSize, total > maxSize {
            throw TransferFailure.protocolViolation("the tus server accepts at most \(maxSize) bytes; the file has \(total)")
        }
        var headers = [
            Self.resumable, KeyValue(name: "Upload-Length", value: String(total)),
            KeyValue(name: "Upload-Metadata", value: Self.metadata(fileName: target.fileName, job: context.job)),
        ]
        var body = HTTPBody.none
        let firstChunk = min(chunkSize, total)
        if server.extensions.contains("creation-with-upload") && firstChunk > 0 {
            headers.append(KeyValue(name: "Content-Type", value: "application/offset+octet-stream"))
            if let checksum = try server.checksumHeader(context.source, offset: 0, length: firstChunk) { headers.append(checksum) }
            body = .file(FileRegion(file: context.source, offset: 0, length: firstChunk))
        }
        let response = try await http.send(target.request("POST", headers: headers, body: body), meter: context.meter)
        guard response.status == 201 || response.status == 200, let location = response.header("location") else {
            throw TransferFailure.http(
                status: response.status, method: "POST", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        guard let url = URL(string: location, relativeTo: URL(string: target.url))?.absoluteString else {
            throw TransferFailure.protocolViolation("the tus server answered an unusable Location: \(location)")
        }
        let expires = response.header("upload-expires")
        let offset = response.header("upload-offset").flatMap(Int64.init) ?? 0
        try await context.commit(offset, .tus(uploadURL: url, expires: expires), true)
        return (url, expires, offset)
    }

    /// `filename` and `filetype` (and the job's own metadata), base64 values as tus wants them.
    static func metadata(fileName: String, job: Job) -> String {
        var pairs = [("filename", fileName), ("filetype", MIMETypes.shared.type(forFileName: fileName))]
        for (key, value) in (job.spec.metadata ?? [:]).sorted(by: { $0.key < $1.key })
        where key.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "," }) && key != "filename" && key != "filetype" {
            pairs.append((key, value))
        }
        return pairs.map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
    }
}

/// What a tus server said about itself in answer to OPTIONS.
struct TusServer: Sendable {
    var extensions: Set<String>
    var checksumAlgorithm: String?
    var maxSize: Int64?

    /// The `auto` probe: whether OPTIONS on the destination answers with `Tus-Resumable`.
    /// Any failure to answer means "not tus": the PUT that follows reports real errors.
    static func speaksTus(http: HTTPClient, target: ResolvedTarget) async throws -> Bool {
        do {
            let response = try await http.send(target.request("OPTIONS", headers: [TusTransfer.resumable]))
            return HTTPStatus.isSuccess(response.status) && response.header("tus-resumable") != nil
        } catch is TransferFailure {
            return false
        }
    }

    static func discover(http: HTTPClient, target: ResolvedTarget) async throws -> TusServer {
        let response = try await http.send(target.request("OPTIONS", headers: [TusTransfer.resumable]))
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "OPTIONS", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        let extensions = Set((response.header("tus-extension") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let offered = (response.header("tus-checksum-algorithm") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        // The strongest algorithm both sides know; none when the server lacks the checksum extension.
        let preference = ["sha256", "sha512", "sha1", "md5"]
        let algorithm = extensions.contains("checksum") ? preference.first(where: offered.contains) : nil
        return TusServer(
            extensions: extensions, checksumAlgorithm: algorithm, maxSize: response.header("tus-max-size").flatMap(Int64.init))
    }

    /// `Upload-Checksum: ALGORITHM BASE64` for a chunk, when the server checks them.
    func checksumHeader(_ file: SourceFile, offset: Int64, length: Int64) throws -> KeyValue? {
        guard let checksumAlgorithm, let digest = try Digest.of(file, offset: offset, length: length, algorithm: checksumAlgorithm)
        else { return nil }
        return KeyValue(name: "Upload-Checksum", value: "\(checksumAlgorithm) \(Data(digest).base64EncodedString())")
    }
}
