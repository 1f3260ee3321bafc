import CShims
import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// S3 uploads with Signature Version 4: one PutObject below the multipart threshold, else
/// CreateMultipartUpload, UploadPart for each part (with its CRC32C, several parts at once) and
/// CompleteMultipartUpload.
///
/// The UploadId is journaled durably before the first part is sent. A later attempt asks the server
/// what it holds (ListParts), keeps each listed part whose size and CRC32C match the file, and sends
/// the rest; an upload the server no longer knows starts over, and so does one on a server without
/// ListParts (501, a 500 twice, a 404 that is not S3's NoSuchUpload), once the old one is aborted.
/// Cancel, remove and a failure for good abort the multipart upload; `delete` deletes the object.
///
/// A part refused as too large (413 from a proxy's body limit) is not halved as tus chunks are:
/// S3 takes no part under 5 MiB but the last, so the limit has to be raised where it is set.
struct S3Transfer: Transfer {
    let http: any HTTPSending

    func upload(_ context: TransferContext) async throws -> JobResult {
        let client = try S3Client(http: http, target: context.target)
        let s3 = client.s3
        if let saved = context.job.checkpoint(as: S3Checkpoint.self) {
            if saved.key == s3.key {
                return try await resume(context, client: client, uploadID: saved.uploadID, partSize: saved.partSize)
            }
            // The destination changed (a remote edited) since this upload began: drop the old one.
            await client.abortInBackground(saved.uploadID, key: saved.key)
        }
        if context.source.size < s3.multipartThreshold || context.source.size == 0 {
            return try await putObject(context, client: client)
        }
        return try await startMultipart(context, client: client)
    }

    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {
        guard let saved = job.checkpoint(as: S3Checkpoint.self) else { return }
        let client = try S3Client(http: http, target: target)
        try await client.abort(saved.uploadID, key: saved.key)
        Log.info("job \(job.id): aborted the S3 multipart upload of \(client.s3.displayName)")
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        let client = try S3Client(http: http, target: target)
        let key = job.checkpoint(as: S3Checkpoint.self)?.key ?? client.s3.key
        _ = try await client.send(
            "DELETE", key: key, operation: "DeleteObject", accepting: [404])
    }

    // MARK: - Single PUT

    private func putObject(_ context: TransferContext, client: S3Client) async throws -> JobResult {
        let source = context.source
        let sums = try await PartChecksums.compute(
            source, offset: 0, length: source.size, sha256: client.s3.signPayload)
        var headers = client.objectHeaders(fileName: context.target.fileName)
        headers.append(KeyValue(name: "x-amz-checksum-crc32c", value: sums.crc32cBase64))
        let response = try await client.send(
            "PUT", key: client.s3.key, headers: headers,
            body: .file(FileRegion(file: source, offset: 0, length: source.size)), payloadHash: sums.payloadHash,
            operation: "PutObject", meter: context.meter)
        try source.verifyUnchanged()
        return JobResult(url: client.s3.objectURL, status: response.status)
    }

    // MARK: - Multipart

    private func startMultipart(_ context: TransferContext, client: S3Client) async throws -> JobResult {
        let s3 = client.s3
        let partSize = S3PartSizing.partSize(fileSize: context.source.size, requested: context.target.chunkSize)
        var headers = client.objectHeaders(fileName: context.target.fileName)
        headers.append(KeyValue(name: "x-amz-checksum-algorithm", value: "CRC32C"))
        let response = try await client.send(
            "POST", key: s3.key, query: "uploads=", headers: headers, operation: "CreateMultipartUpload")
        guard let uploadID = S3XML.value("UploadId", in: response.bodyText), !uploadID.isEmpty else {
            throw TransferFailure.protocolViolation(
                "S3 CreateMultipartUpload \(s3.displayName): the answer has no UploadId: \(S3Answer.summary(response.bodyText))"
            )
        }
        let checkpoint = Checkpoint(S3Checkpoint(uploadID: uploadID, key: s3.key, partSize: partSize))
        do {
            // Durable before any part is sent: after a crash the next attempt finds this upload
            // instead of leaving it orphaned on the server.
            try await context.commit(0, checkpoint, true)
        } catch {
            // The job was paused or canceled meanwhile: nobody else knows this UploadId.
            await client.abortInBackground(uploadID, key: s3.key)
            throw error
        }
        Log.info(
            "job \(context.job.id): started S3 multipart upload of \(s3.displayName) in parts of \(partSize) bytes")
        return try await sendParts(context, client: client, uploadID: uploadID, partSize: partSize, done: [:])
    }

    private func resume(_ context: TransferContext, client: S3Client, uploadID: String, partSize: Int64) async throws
        -> JobResult
    {
        let s3 = client.s3
        let size = context.source.size
        let answer = try await client.listParts(uploadID, key: s3.key)
        guard case .parts(let listed) = answer else {
            // Gone (aborted, expired, or completed just before the daemon stopped, before that
            // could be journaled), or a server that cannot say what it holds. Only if it completed
            // is the object there, whole.
            if let result = try await completedEarlier(context, client: client, partSize: partSize) {
                await context.note(
                    "the S3 upload of \(s3.displayName) had completed before uploadd stopped; not sent again")
                return result
            }
            if case .unsupported(let status) = answer {
                // Its parts cannot be listed, so none can be kept: the upload is dropped and
                // begun again, once in this attempt (a new upload is not listed again).
                await context.note(
                    "the server does not list the parts of an S3 upload (ListParts answered \(status)); aborting it and starting a new one"
                )
                await client.abortInBackground(uploadID, key: s3.key)
            } else {
                await context.note(
                    "the server no longer knows the S3 upload of \(s3.displayName); starting a new one")
            }
            return try await startMultipart(context, client: client)
        }
        let count = S3PartSizing.partCount(fileSize: size, partSize: partSize)
        var done: [Int: CompletedPart] = [:]
        for part in listed where part.number >= 1 && part.number <= count {
            try Task.checkCancellation()
            let range = S3PartSizing.range(ofPart: part.number, fileSize: size, partSize: partSize)
            guard part.size == range.length, !part.etag.isEmpty else { continue }
            let sums = try await PartChecksums.compute(
                context.source, offset: range.offset, length: range.length, sha256: false)
            if let serverChecksum = part.checksumCRC32C, serverChecksum != sums.crc32cBase64 { continue }
            done[part.number] = CompletedPart(number: part.number, etag: part.etag, checksumCRC32C: sums.crc32cBase64)
        }
        Log.info(
            "job \(context.job.id): resuming the S3 upload of \(s3.displayName): \(done.count) of \(count) parts are on the server"
        )
        // The server's parts are the truth, whatever the journal said before.
        let held = done.keys.reduce(Int64(0)) {
            $0 + S3PartSizing.range(ofPart: $1, fileSize: size, partSize: partSize).length
        }
        try await context.commit(
            held, Checkpoint(S3Checkpoint(uploadID: uploadID, key: s3.key, partSize: partSize)), false)
        return try await sendParts(context, client: client, uploadID: uploadID, partSize: partSize, done: done)
    }

    /// The object, when the server holds exactly this file as it would after our multipart upload:
    /// same size, and the composite CRC32C (`x-amz-checksum-crc32c: BASE64-N`) or the multipart
    /// ETag (MD5 of the parts' MD5s, `-N`) of the same parts. Anything else is not trusted.
    private func completedEarlier(_ context: TransferContext, client: S3Client, partSize: Int64) async throws
        -> JobResult?
    {
        let s3 = client.s3
        let response = try await client.send(
            "HEAD", key: s3.key, headers: [KeyValue(name: "x-amz-checksum-mode", value: "ENABLED")],
            operation: "HeadObject", accepting: [403, 404])
        guard HTTPStatus.isSuccess(response.status), let length = response.header("content-length").flatMap(Int64.init),
            length == context.source.size
        else { return nil }
        let size = context.source.size
        let count = S3PartSizing.partCount(fileSize: size, partSize: partSize)
        let source = context.source
        let (crcs, md5s) = try await Blocking.run { () throws -> ([UInt32], [[UInt8]]) in
            var crcs: [UInt32] = []
            var md5s: [[UInt8]] = []
            for number in 1...count {
                let range = S3PartSizing.range(ofPart: number, fileSize: size, partSize: partSize)
                var crc: UInt32 = 0
                guard let md5 = MessageDigest(algorithm: "md5") else {
                    throw TransferFailure.config("libcrypto has no MD5")
                }
                try source.forEachPiece(offset: range.offset, length: range.length) { piece in
                    crc = CShims_crc32c(crc, piece.baseAddress, piece.count)
                    md5.update(piece)
                }
                crcs.append(crc)
                md5s.append(md5.finish())
            }
            return (crcs, md5s)
        }
        var composite: UInt32 = 0
        for crc in crcs {
            withUnsafeBytes(of: crc.bigEndian) { composite = CShims_crc32c(composite, $0.baseAddress, 4) }
        }
        let expectedChecksum = Base64.encodeBigEndian(composite)
        if let checksum = response.header("x-amz-checksum-crc32c"),
            checksum == "\(expectedChecksum)-\(count)" || checksum == expectedChecksum
        {
            return JobResult(url: s3.objectURL, status: response.status)
        }
        guard let md5 = MessageDigest(algorithm: "md5") else { return nil }
        for digest in md5s { digest.withUnsafeBytes { md5.update($0) } }
        let expectedETag = "\(Hex.encode(md5.finish()))-\(count)"
        if let etag = response.header("etag")?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")),
            etag == expectedETag
        {
            return JobResult(url: s3.objectURL, status: response.status)
        }
        return nil
    }

    /// Sends the parts the server does not hold, `partsInFlight` at a time, then completes the upload.
    ///
    /// Parts finish in any order: the bytes reported as acknowledged are the sum of the parts done,
    /// so they only grow. The first part that fails ends the attempt with its own error; leaving
    /// the task group cancels the parts still in flight and waits for them.
    private func sendParts(
        _ context: TransferContext, client: S3Client, uploadID: String, partSize: Int64,
        done initial: [Int: CompletedPart]
    ) async throws -> JobResult {
        let size = context.source.size
        let count = S3PartSizing.partCount(fileSize: size, partSize: partSize)
        let checkpoint = Checkpoint(S3Checkpoint(uploadID: uploadID, key: client.s3.key, partSize: partSize))
        func length(_ number: Int) -> Int64 {
            S3PartSizing.range(ofPart: number, fileSize: size, partSize: partSize).length
        }
        var done = initial
        var acked = done.keys.reduce(Int64(0)) { $0 + length($1) }
        var pending = (1...count).filter { initial[$0] == nil }.makeIterator()
        // The rate limit is per transfer, and libcurl applies it per request: parts in flight at
        // once would each get all of it. A limited link gains nothing from more connections, so
        // its parts go one at a time and a pause or crash loses at most one part's progress.
        let width = context.target.rateLimit == nil ? Self.partsInFlight : 1
        try await withThrowingTaskGroup(of: CompletedPart.self) { group in
            func sendNext() {
                guard let number = pending.next() else { return }
                group.addTask {
                    try await uploadPart(
                        number, of: count, context, client: client, uploadID: uploadID, partSize: partSize)
                }
            }
            for _ in 0..<width { sendNext() }
            while let part = try await group.next() {
                sendNext()
                done[part.number] = part
                acked += length(part.number)
                Log.debug(
                    "job \(context.job.id): uploaded S3 part \(part.number) of \(count) (\(length(part.number)) bytes)")
                try await context.commit(acked, checkpoint, false)
            }
        }
        try context.source.verifyUnchanged()
        return try await complete(context, client: client, uploadID: uploadID, parts: done)
    }

    /// Parts in flight at once when no rate limit applies. One at a time leaves the link idle
    /// while each part's checksums are read and while each answer comes back (aws-cli sends 10
    /// at once). Against SeaweedFS on loopback four were faster than two and as fast as eight,
    /// and they bound what a pause or crash throws away to four partly sent parts. Each costs
    /// libcurl's 2 MiB upload buffer and, while its checksums are read, a 256 KiB read buffer:
    /// a part is streamed from the file, never held in memory.
    static let partsInFlight = 4

    /// UploadPart for one part, streamed from the file with its CRC32C.
    private func uploadPart(
        _ number: Int, of count: Int, _ context: TransferContext, client: S3Client, uploadID: String, partSize: Int64
    ) async throws -> CompletedPart {
        try Task.checkCancellation()
        let s3 = client.s3
        let source = context.source
        let range = S3PartSizing.range(ofPart: number, fileSize: source.size, partSize: partSize)
        let sums = try await PartChecksums.compute(
            source, offset: range.offset, length: range.length, sha256: s3.signPayload)
        let encodedID = SigV4Signer.uriEncode(uploadID, encodeSlash: true)
        let response = try await client.send(
            "PUT", key: s3.key, query: "partNumber=\(number)&uploadId=\(encodedID)",
            headers: [KeyValue(name: "x-amz-checksum-crc32c", value: sums.crc32cBase64)],
            body: .file(FileRegion(file: source, offset: range.offset, length: range.length)),
            payloadHash: sums.payloadHash, operation: "UploadPart \(number) of \(count)", meter: context.meter)
        guard let etag = response.header("etag"), !etag.isEmpty else {
            throw TransferFailure.protocolViolation(
                "S3 UploadPart \(number) of \(s3.displayName): the answer has no ETag header")
        }
        if let echoed = response.header("x-amz-checksum-crc32c"), echoed != sums.crc32cBase64 {
            throw TransferFailure(
                JobError(
                    code: "protocol",
                    message:
                        "S3 UploadPart \(number) of \(s3.displayName): the server stored CRC32C \(echoed), the file has \(sums.crc32cBase64)"
                ),
                retryable: true)
        }
        return CompletedPart(number: number, etag: etag, checksumCRC32C: sums.crc32cBase64)
    }

    private func complete(_ context: TransferContext, client: S3Client, uploadID: String, parts: [Int: CompletedPart])
        async throws -> JobResult
    {
        let s3 = client.s3
        let ordered = parts.keys.sorted().map { parts[$0]! }
        let body = Array(
            S3Answer.completeBody(ordered.map { ($0.number, $0.etag, $0.checksumCRC32C) }).utf8)
        let encodedID = SigV4Signer.uriEncode(uploadID, encodeSlash: true)
        let response = try await client.send(
            "POST", key: s3.key, query: "uploadId=\(encodedID)",
            headers: [KeyValue(name: "Content-Type", value: "application/xml")], body: .bytes(body),
            payloadHash: Hex.encode(Crypto.sha256(body)), operation: "CompleteMultipartUpload", accepting: [404])
        if response.status == 404 {
            // The upload is gone: completed by an attempt whose answer was lost, or expired. The
            // next attempt lists parts, finds nothing and starts over.
            throw TransferFailure(
                JobError(
                    code: "http",
                    message:
                        "S3 CompleteMultipartUpload \(s3.displayName): the server no longer knows the upload; starting over",
                    status: 404),
                retryable: true)
        }
        Log.info("job \(context.job.id): completed the S3 upload of \(s3.displayName) in \(ordered.count) parts")
        return JobResult(url: s3.objectURL, status: response.status)
    }
}

/// One part the server holds, as CompleteMultipartUpload names it.
struct CompletedPart: Sendable, Equatable {
    var number: Int
    var etag: String
    var checksumCRC32C: String
}

/// The CRC32C (and, when the payload is signed, the SHA-256) of a region of the file, read off
/// the cooperative pool before the region is sent.
struct PartChecksums: Sendable {
    var crc32c: UInt32
    var sha256: String?

    var crc32cBase64: String { Base64.encodeBigEndian(crc32c) }
    var payloadHash: String { sha256 ?? SigV4Signer.unsignedPayload }

    static func compute(_ source: SourceFile, offset: Int64, length: Int64, sha256: Bool) async throws -> PartChecksums
    {
        try await Blocking.run {
            var crc: UInt32 = 0
            let hasher = sha256 ? MessageDigest.sha256() : nil
            try source.forEachPiece(offset: offset, length: length) { piece in
                guard let base = piece.baseAddress else { return }
                crc = CShims_crc32c(crc, base, piece.count)
                hasher?.update(piece)
            }
            return PartChecksums(crc32c: crc, sha256: hasher.map { Hex.encode($0.finish()) })
        }
    }
}

/// Signed requests to one S3 target, with S3's error documents turned into classified failures.
struct S3Client: Sendable {
    let http: any HTTPSending
    let target: ResolvedTarget
    let s3: S3Target

    init(http: any HTTPSending, target: ResolvedTarget) throws(TransferFailure) {
        guard let s3 = target.s3 else {
            throw .config(
                "\(Redaction.redactURL(target.url)) is not an S3 destination; use s3://bucket/key or a remote with protocol = s3"
            )
        }
        self.http = http
        self.target = target
        self.s3 = s3
    }

    /// Content-Type from the file name unless the user set one, and the user's own headers.
    func objectHeaders(fileName: String) -> [KeyValue] {
        var headers = target.headers
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.append(KeyValue(name: "Content-Type", value: MIMETypes.shared.type(forFileName: fileName)))
        }
        return headers
    }

    /// Sends a signed request. Returns a 2xx answer (or one whose status is in `accepting`); any
    /// other answer, and a 200 that carries an `<Error>` document, throws a classified failure.
    func send(
        _ method: String, key: String, query: String = "", headers: [KeyValue] = [], body: HTTPBody = .none,
        payloadHash: String = SigV4Signer.emptyPayloadHash, operation: String, meter: ProgressMeter? = nil,
        accepting: Set<Int> = [], maxResponseBytes: Int? = nil
    ) async throws -> HTTPResponse {
        let url = s3.url(key: key, query: query)
        let signed = s3.signer.sign(method: method, url: url, headers: headers, payloadHash: payloadHash, date: Date())
        var request = HTTPRequest(method: method, url: url, headers: signed, body: body)
        request.caFile = target.caFile
        request.http2 = target.http2
        request.stallTimeout = target.stallTimeout
        request.connectTimeout = target.connectTimeout
        request.sendRate = target.rateLimit
        request.responseTimeout = target.responseTimeout
        if let maxResponseBytes { request.maxResponseBytes = maxResponseBytes }
        let response = try await http.send(request, meter: meter)
        if accepting.contains(response.status) { return response }
        if HTTPStatus.isSuccess(response.status) {
            // CompleteMultipartUpload may answer 200 and report the failure in the body.
            if method == "POST", let error = S3Answer.error(in: response.bodyText) {
                throw S3Failure.make(
                    status: 200, error: error, body: response.bodyText, operation: operation, s3: s3, method: method,
                    retryAfter: response.retryAfter)
            }
            return response
        }
        throw S3Failure.make(
            status: response.status, error: S3Answer.error(in: response.bodyText), body: response.bodyText,
            operation: operation, s3: s3, method: method, retryAfter: response.retryAfter, bodyLength: body.length)
    }

    /// What ListParts says of an upload.
    enum PartListing: Sendable, Equatable {
        /// Every part the server holds.
        case parts([S3Answer.ListedPart])
        /// NoSuchUpload: aborted, expired, or completed.
        case unknownUpload
        /// A server without ListParts: 501, a 500 twice in a row, or a 404 without S3's error
        /// document (`answer` says which, for the job's history).
        case unsupported(_ answer: String)
    }

    /// Pause before asking ListParts again after a 500: S3 itself answers one now and then.
    static let listPartsPause: Duration = .seconds(1)

    /// Every part the server holds of an upload, or why it cannot say. Any other error keeps its
    /// class (a 503 SlowDown is retried, a 403 is not).
    func listParts(_ uploadID: String, key: String) async throws -> PartListing {
        var parts: [S3Answer.ListedPart] = []
        var marker = 0
        var serverErrors = 0
        let encodedID = SigV4Signer.uriEncode(uploadID, encodeSlash: true)
        while true {
            let query = "max-parts=1000&part-number-marker=\(marker)&uploadId=\(encodedID)"
            let response = try await send(
                "GET", key: key, query: query, operation: "ListParts", accepting: [404, 500, 501],
                maxResponseBytes: 4 << 20)
            let error = S3Answer.error(in: response.bodyText)
            let answered = "HTTP \(response.status)\(error.map { " \($0.code)" } ?? "")"
            switch response.status {
            case 404 where error?.code == "NoSuchUpload":
                return .unknownUpload
            case 404 where error == nil:
                return .unsupported("\(answered), not S3's NoSuchUpload")
            case 404:
                throw S3Failure.make(
                    status: 404, error: error, body: response.bodyText, operation: "ListParts", s3: s3, method: "GET",
                    retryAfter: nil)
            case 501:
                return .unsupported(answered)
            case 500:
                serverErrors += 1
                if serverErrors >= 2 { return .unsupported("\(answered) twice") }
                try await Task.sleep(for: Self.listPartsPause)
                continue
            default:
                serverErrors = 0
            }
            let page = S3Answer.partsPage(in: response.bodyText)
            parts += page.parts
            guard page.isTruncated else { break }
            let next = page.nextPartNumberMarker ?? page.parts.map(\.number).max() ?? marker
            guard next > marker else {
                throw TransferFailure.protocolViolation(
                    "S3 ListParts \(s3.displayName): the server's listing does not advance")
            }
            // An upload has at most 10,000 parts: a listing that goes on is a broken or hostile
            // server, not a reason to keep a slot busy and memory growing.
            guard next < S3PartSizing.maximumParts, parts.count <= S3PartSizing.maximumParts else {
                throw TransferFailure.protocolViolation(
                    "S3 ListParts \(s3.displayName): the server lists more than \(S3PartSizing.maximumParts) parts")
            }
            marker = next
        }
        return .parts(parts)
    }

    /// AbortMultipartUpload; an upload already gone is fine.
    func abort(_ uploadID: String, key: String) async throws {
        let encodedID = SigV4Signer.uriEncode(uploadID, encodeSlash: true)
        _ = try await send(
            "DELETE", key: key, query: "uploadId=\(encodedID)", operation: "AbortMultipartUpload", accepting: [404])
    }

    /// Aborts an upload nobody else will hear of, even though the calling task is being canceled
    /// (a canceled task's requests fail at once, so the abort runs in a task of its own).
    func abortInBackground(_ uploadID: String, key: String) async {
        let client = self
        let job = Task.detached {
            do {
                try await client.abort(uploadID, key: key)
            } catch {
                Log.warning("could not abort the S3 multipart upload of s3://\(client.s3.bucket)/\(key): \(error)")
            }
        }
        await job.value
    }
}

/// S3 errors as classified failures, with the server's code and message.
enum S3Failure {
    /// The hint for a request refused as too large: a proxy's body limit (nginx: 1 MiB by
    /// default) in front of the S3 server, since S3 takes parts up to 5 GiB.
    static func tooLarge(_ bodyLength: Int64?) -> String {
        let sent = bodyLength.map { $0 > 0 ? "a request of \(ChunkRefusal.shown($0))" : "the request" } ?? "the request"
        return
            "the server, or a proxy in front of it, refused \(sent) as too large; S3 parts cannot be smaller than 5 MiB (but the last), so raise that limit (nginx: client_max_body_size) above the part size (--chunk-size; 5M at the least)"
    }

    /// Codes worth another try whatever their status: S3 answers 400 RequestTimeout for an idle
    /// socket, and BadDigest or a SHA-256 mismatch when bytes were damaged in flight.
    static let retryableCodes: Set<String> = [
        "RequestTimeout", "BadDigest", "XAmzContentSHA256Mismatch", "InternalError", "SlowDown", "ServiceUnavailable",
        "OperationAborted",
    ]

    /// `bodyLength`: the bytes the request sent, named when the server refused them as too large.
    static func make(
        status: Int, error: S3Answer.ErrorDocument?, body: String, operation: String, s3: S3Target, method: String,
        retryAfter: Duration?, bodyLength: Int64? = nil
    ) -> TransferFailure {
        var message = "S3 \(method) \(s3.displayName) (\(operation)): \(status)"
        if let error {
            message += " \(error.code)"
            if !error.message.isEmpty { message += ": \(error.message)" }
        } else {
            let reason = HTTPStatus.reason(status)
            if !reason.isEmpty { message += " \(reason)" }
            let detail = S3Answer.summary(body)
            if !detail.isEmpty { message += ": \(detail)" }
        }
        switch error?.code {
        case "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken", "AccessDenied":
            message += " (check the S3 credentials from \(s3.credentials.source) and the region \(s3.region))"
        case "NoSuchBucket":
            message += " (create the bucket \(s3.bucket) first, or check the endpoint \(s3.endpoint))"
        case "AuthorizationHeaderMalformed" where !(error?.message.lowercased().contains("region") ?? false):
            // AWS names the region it expected; a server that says nothing of one could not read
            // the header itself, and a region would not help.
            message +=
                " (the server could not read the Authorization header uploadd wrote as the AWS SDKs write it; check the endpoint \(s3.endpoint) is an S3 server, and report this with its name and version)"
        case "AuthorizationHeaderMalformed", "PermanentRedirect":
            message +=
                " (the bucket may be in another region than \(s3.region); set region in the remote or AWS_REGION)"
        case "RequestTimeTooSkewed":
            message += " (this machine's clock is off; SigV4 signatures are valid for 15 minutes)"
        case "EntityTooLarge":
            message += " (\(tooLarge(bodyLength)))"
        default:
            if error == nil && (status == 401 || status == 403) {
                message += " (check the S3 credentials from \(s3.credentials.source))"
            } else if status == 413 {
                message += " (\(tooLarge(bodyLength)))"
            }
        }
        let retryable = HTTPStatus.isRetryable(status) || error.map { retryableCodes.contains($0.code) } ?? false
        // (A 413 is not retried, nor is the part halved as a tus chunk is: S3 takes no part under
        // 5 MiB but the last, so a limit on request bodies that low has to be raised.)
        return TransferFailure(
            JobError(code: "http", message: message, status: status == 200 ? nil : status), retryable: retryable,
            retryAfter: retryAfter)
    }
}
