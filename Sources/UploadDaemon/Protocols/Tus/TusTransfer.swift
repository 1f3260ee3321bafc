import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// tus 1.0 (tus.io): creation, PATCH in chunks from the server's offset, and the extensions the
/// server advertises — creation-with-upload, checksum, termination, expiration.
///
/// A chunk the server refuses as too large (a 413 from a proxy's body limit, or Django's bare 400)
/// is halved, down to `ChunkRefusal.floor`, and sent again; the size that works is remembered for
/// the server's origin (`ChunkSizeMemory`), so the next upload there starts with it. The chunk size
/// is not journaled: a resumed upload goes on from the server's offset with whatever size it sends.
///
/// The upload URL is journaled durably the moment the server hands it out, so a crash right after
/// creation resumes the same upload instead of leaving an orphan. On resume the server's
/// `Upload-Offset` (HEAD) is the truth.
struct TusTransfer: Transfer {
    let http: any HTTPSending
    /// The chunk sizes servers took, per origin: the daemon's own unless a test gives one.
    var chunkSizes = ChunkSizeMemory.shared
    /// 8 MiB: large enough that the per-request round trip is noise on a fast link, small enough
    /// that an interrupted chunk costs little to resend and that servers buffering a PATCH in
    /// memory stay comfortable. `--chunk-size` changes it.
    static let defaultChunkSize: Int64 = 8 << 20
    static let resumable = KeyValue(name: "Tus-Resumable", value: "1.0.0")
    /// 409s in a row (each followed by HEAD, and the PATCH sent again from its offset) before the
    /// attempt fails: a server whose HEAD and PATCH never agree would otherwise hold the job forever.
    static let conflictsInARow = 3

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        let total = context.source.size
        let configured = min(max(target.chunkSize ?? Self.defaultChunkSize, 1), ChunkSize.largest)
        let server = try await TusServer.discover(http: http, target: target)
        var upload: (url: String, expires: String?)?
        var offset: Int64 = 0
        if let saved = context.job.checkpoint(as: TusCheckpoint.self) {
            let url = try target.checkServerURL(saved.uploadURL, for: "the tus upload")
            let expires = saved.expires
            switch try await serverOffset(of: url, target: target, total: total) {
            case .some(let serverOffset):
                upload = (url, expires)
                offset = serverOffset
                await context.note("resuming at byte \(serverOffset) of \(total), where the server has it")
                try await context.commit(offset, Checkpoint(TusCheckpoint(uploadURL: url, expires: expires)), false)
            case .none:
                await context.note("the tus server no longer has the upload (expired or removed); starting a new one")
            }
        }
        if upload == nil {
            let created = try await create(context, server: server)
            upload = (created.url, created.expires)
            offset = created.offset
        }
        guard let upload else { throw TransferFailure.protocolViolation("no tus upload was created") }
        let url = upload.url
        var expires = upload.expires
        var checksumRetries = 0
        var conflicts = 0
        var chunkSize = configured
        if let largest = chunkSizes.largest(for: url), largest < chunkSize {
            chunkSize = largest
            await context.note(
                "sending chunks of \(ChunkRefusal.shown(largest)): the server refused larger ones earlier")
        }
        // Since a chunk was refused, until one goes through.
        var afterRefusal = false
        while offset < total {
            let length = min(chunkSize, total - offset)
            var headers = [Self.resumable, KeyValue(name: "Upload-Offset", value: String(offset))]
            headers.append(KeyValue(name: "Content-Type", value: "application/offset+octet-stream"))
            if let checksum = try server.checksumHeader(context.source, offset: offset, length: length) {
                headers.append(checksum)
            }
            let body = HTTPBody.file(FileRegion(file: context.source, offset: offset, length: length))
            let response = try await http.send(
                target.request("PATCH", url: url, headers: headers, body: body), meter: context.meter)
            switch response.status {
            case 200..<300:
                // The new offset counts what the server kept of this chunk: more than it was sent
                // would mark bytes it never got as uploaded (and a file cut short as complete).
                guard let next = Self.offset(in: response, total: total), next > offset, next <= offset + length
                else {
                    throw TransferFailure.protocolViolation(
                        "PATCH of bytes \(offset) to \(offset + length) answered an impossible Upload-Offset (\(Self.shown(response.header("upload-offset")))) for a file of \(total) bytes"
                    )
                }
                offset = next
                expires = response.header("upload-expires") ?? expires
                checksumRetries = 0
                conflicts = 0
                try await context.commit(offset, Checkpoint(TusCheckpoint(uploadURL: url, expires: expires)), false)
                if afterRefusal {
                    afterRefusal = false
                    await context.note(ChunkRefusal.acceptedNote(chunkSize))
                }
            case 409 where conflicts >= Self.conflictsInARow:
                // Retryable: a server in the middle of a failover may agree with itself later.
                throw TransferFailure(
                    JobError(
                        code: "protocol",
                        message:
                            "PATCH \(Redaction.redactURL(url)) answered 409 (offset mismatch) \(conflicts + 1) times in a row, each time after HEAD said where to go on from"
                    ), retryable: true)
            case 409:
                // Offset mismatch: the server has a different idea of where we are. Ask it.
                conflicts += 1
                guard let serverOffset = try await serverOffset(of: url, target: target, total: total) else {
                    throw TransferFailure.network("the tus upload vanished during PATCH (409, then HEAD found nothing)")
                }
                offset = serverOffset
            case 460 where checksumRetries < 3:
                checksumRetries += 1
                await context.note("the server rejected a chunk's checksum (460); sending it again")
            case 404, 410:
                // Forgotten here too: the next attempt starts a new upload. Its HEAD may still
                // answer for this one (django-tus answered HEAD 200 and every PATCH 410), and
                // resuming it again and again held the job in a loop of failed attempts.
                try await context.commit(0, nil, true)
                throw TransferFailure(
                    JobError(
                        code: "http",
                        message:
                            "PATCH \(Redaction.redactURL(url)): the upload expired or was removed (HTTP \(response.status)); the next attempt starts a new one",
                        status: response.status),
                    retryable: true)
            case let status where ChunkRefusal.refusesBody(response, bareBadRequest: true):
                // The chunk, not the file, is too large for the server (or a proxy before it).
                guard let smaller = ChunkRefusal.halved(length) else {
                    throw TransferFailure.http(
                        status: status, method: "PATCH", url: Redaction.redactURL(url), body: response.bodyText,
                        retryAfter: nil, hint: ChunkRefusal.floorHint(length, status: status))
                }
                chunkSizes.remember(smaller, for: url)
                await context.note(ChunkRefusal.retryNote(refused: length, status: status, next: smaller))
                chunkSize = smaller
                afterRefusal = true
            default:
                throw TransferFailure.http(
                    status: response.status, method: "PATCH", url: Redaction.redactURL(url), body: response.bodyText,
                    retryAfter: response.retryAfter)
            }
        }
        try context.source.verifyUnchanged()
        // A Location relative to a destination that names its user and password resolves with
        // them: the result is shown, logged and handed to hooks (the checkpoint keeps the URL).
        return JobResult(url: Redaction.redactURL(url), status: 204)
    }

    /// After a cancel, a remove, or a failure for good: DELETE, when the server offers termination.
    /// A server without it (or one that lists it but answers 405 or 501, as django-tus does) keeps
    /// the upload until it expires; nothing more can be done, so that is not an error to retry.
    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {
        guard let url = job.checkpoint(as: TusCheckpoint.self)?.uploadURL else { return }
        let checked = try target.checkServerURL(url, for: "the tus upload")
        // An OPTIONS that fails says nothing either way: the DELETE is tried.
        if let server = try? await TusServer.discover(http: http, target: target),
            !server.extensions.contains("termination")
        {
            Log.info(
                "job \(job.id): the tus server does not offer termination; it keeps the partial upload until it expires"
            )
            return
        }
        let response = try await http.send(target.request("DELETE", url: checked, headers: [Self.resumable]))
        switch response.status {
        case 200..<300, 404, 410: return
        case 405, 501:
            Log.info(
                "job \(job.id): the tus server refused to terminate the partial upload (HTTP \(response.status)); it keeps it until it expires"
            )
        default:
            throw TransferFailure.http(
                status: response.status, method: "DELETE", url: Redaction.redactURL(checked), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        guard let url = job.checkpoint(as: TusCheckpoint.self)?.uploadURL ?? job.result?.url else {
            throw TransferFailure.config("job \(job.id) has no tus upload URL to delete")
        }
        try await terminate(try target.checkServerURL(url, for: "the tus upload"), target: target)
    }

    /// DELETE (the termination extension). A 404 or 410 means it is gone already.
    private func terminate(_ url: String, target: ResolvedTarget) async throws {
        try await HTTPDelete.send(http: http, target: target, url: url, headers: [Self.resumable])
    }

    /// HEAD: the server's offset, or nil when the upload is gone (404, 410).
    private func serverOffset(of url: String, target: ResolvedTarget, total: Int64) async throws -> Int64? {
        let response = try await http.send(target.request("HEAD", url: url, headers: [Self.resumable]))
        if response.status == 404 || response.status == 410 || response.status == 403 { return nil }
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "HEAD", url: Redaction.redactURL(url), body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        guard let offset = Self.offset(in: response, total: total) else {
            throw TransferFailure.protocolViolation(
                "HEAD \(Redaction.redactURL(url)) answered an impossible Upload-Offset (\(Self.shown(response.header("upload-offset")))) for a file of \(total) bytes"
            )
        }
        return offset
    }

    static func offset(in response: HTTPResponse, total: Int64) -> Int64? {
        TusHeaders.offset(response.header("upload-offset"), total: total)
    }

    /// A server's header value for a message: short, and without control characters.
    static func shown(_ value: String?) -> String {
        guard let value else { return "none" }
        return String(
            value.prefix(40).unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
    }

    /// POST to the creation endpoint, with no bytes: the new URL is journaled durably before any
    /// byte is sent. (creation-with-upload would save a round trip, but a daemon killed while its
    /// first chunk is on the wire would leave that upload on the server with no record of it.)
    private func create(_ context: TransferContext, server: TusServer)
        async throws -> (url: String, expires: String?, offset: Int64)
    {
        let target = context.target
        let total = context.source.size
        if let maxSize = server.maxSize, total > maxSize {
            throw TransferFailure.protocolViolation(
                "the tus server accepts at most \(maxSize) bytes; the file has \(total)")
        }
        let headers = [
            Self.resumable, KeyValue(name: "Upload-Length", value: String(total)),
            KeyValue(name: "Upload-Metadata", value: Self.metadata(fileName: target.fileName, job: context.job)),
        ]
        let response = try await http.send(target.request("POST", headers: headers), meter: context.meter)
        guard response.status == 201 || response.status == 200, let location = response.header("location") else {
            // The creation has no body: a 413 to it is about the file's Upload-Length.
            var hint: String?
            if response.status == 413 {
                let maxSize = TusHeaders.maxSize(response.header("tus-max-size")) ?? server.maxSize
                hint =
                    maxSize.map {
                        "the tus server takes uploads of at most \($0) bytes (Tus-Max-Size); the file has \(total)"
                    }
                    ?? "the tus server refuses a file this large (\(total) bytes)"
            }
            throw TransferFailure.http(
                status: response.status, method: "POST", url: Redaction.redactURL(target.url), body: response.bodyText,
                retryAfter: response.retryAfter, hint: hint)
        }
        guard let resolved = URL(string: location, relativeTo: URL(string: target.url))?.absoluteString else {
            throw TransferFailure.protocolViolation(
                "the tus server answered an unusable Location: \(Self.shown(location))")
        }
        let url = try target.checkServerURL(resolved, for: "the tus upload")
        let expires = response.header("upload-expires")
        var offset: Int64 = 0
        if response.header("upload-offset") != nil {
            // Nothing was sent with the creation: anything but 0 is a server's mistake.
            guard let stated = Self.offset(in: response, total: 0) else {
                throw TransferFailure.protocolViolation(
                    "the tus server's creation answer has an impossible Upload-Offset (\(Self.shown(response.header("upload-offset"))))"
                )
            }
            offset = stated
        }
        try await context.commit(offset, Checkpoint(TusCheckpoint(uploadURL: url, expires: expires)), true)
        return (url, expires, offset)
    }

    /// `filename` and `filetype` (and the job's own metadata), base64 values as tus wants them.
    static func metadata(fileName: String, job: Job) -> String {
        var pairs = [("filename", fileName), ("filetype", MIMETypes.shared.type(forFileName: fileName))]
        for (key, value) in (job.spec.metadata ?? [:]).sorted(by: { $0.key < $1.key })
        where key.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "," }) && key != "filename" && key != "filetype"
        {
            pairs.append((key, value))
        }
        return pairs.map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
    }
}
