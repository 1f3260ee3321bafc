import Foundation
import UploadCore
import UploadHTTP
import UploadWire

/// The chunked block protocol of the mobile app (contrib/receiver/README.md): an init POST that returns an
/// `upToken`, then each block POSTed as multipart with its sequence number and CRC32, the last
/// answer carrying the file's URL. Every acknowledged block is journaled durably, so a crash
/// re-sends at most the block that was in flight.
///
/// Every block of an upload has the block size its init named (the checkpoint keeps it): a block
/// the server refuses as too large (413, or a 400 that says so) starts a new upload with blocks of
/// half the size, down to `ChunkRefusal.floor`, and the size is remembered for the server's origin.
struct ChunkedTransfer: Transfer {
    let http: any HTTPSending
    /// The block sizes servers took, per origin: the daemon's own unless a test gives one.
    var chunkSizes = ChunkSizeMemory.shared
    static let defaultBlockSize: Int64 = 1 << 20

    func upload(_ context: TransferContext) async throws -> JobResult {
        let target = context.target
        let total = context.source.size
        var blockSize = min(max(target.chunkSize ?? Self.defaultBlockSize, 1), ChunkSize.largest)
        var upToken: String
        var acknowledged: Int64
        if let saved = context.job.checkpoint(as: ChunkedCheckpoint.self) {
            (upToken, blockSize, acknowledged) = (saved.upToken, saved.blockSize, saved.blocksAcknowledged)
            guard ChunkSize.isValid(blockSize), acknowledged >= 0 else {
                throw TransferFailure.protocolViolation(
                    "the journaled block state is impossible (block size \(blockSize), \(acknowledged) blocks)")
            }
        } else {
            if let largest = chunkSizes.largest(for: target.url), largest < blockSize {
                blockSize = largest
                await context.note(
                    "sending blocks of \(ChunkRefusal.shown(largest)): the server refused larger ones earlier")
            }
            upToken = try await initialize(context, blockSize: blockSize)
            acknowledged = 0
        }
        // total / blockSize, rounded up, without an overflow for any file size.
        var blockCount = Self.blockCount(total, blockSize)
        guard acknowledged <= blockCount else {
            throw TransferFailure.protocolViolation(
                "the journaled block state is impossible (\(acknowledged) of \(blockCount) blocks acknowledged)")
        }
        var restarted = false
        // Since a block was refused as too large, until one goes through.
        var afterRefusal = false
        // Every block acknowledged, and then a crash before the job's end was journaled: the
        // last block goes again, as the protocol allows, for the answer that names the file.
        var index = min(acknowledged, blockCount - 1)
        var last: (response: HTTPResponse, data: [String: Any])?
        while index < blockCount {
            let offset = index * blockSize
            let length = min(blockSize, total - offset)
            let crc = try context.source.crc32(offset: offset, length: length)
            var parts = commonFields(target, blockSize: blockSize, total: total, sequence: index + 1)
            parts.append(.field(name: "upToken", value: upToken))
            parts.append(.field(name: "crc", value: String(crc, radix: 16)))
            parts.append(
                .file(
                    name: "block", fileName: target.fileName, contentType: "application/octet-stream",
                    region: FileRegion(file: context.source, offset: offset, length: length)))
            let response = try await http.send(target.request("POST", body: .multipart(parts)), meter: context.meter)
            if (response.status == 404 || response.status == 410) && !restarted {
                // The server forgot the upload (expired or restarted empty): begin again, once.
                await context.note(
                    "the server no longer knows upload \(upToken) (HTTP \(response.status)); starting over")
                restarted = true
                upToken = try await initialize(context, blockSize: blockSize)
                index = 0
                continue
            }
            if ChunkRefusal.refusesBody(response, bareBadRequest: false) {
                // Too large for the server (or a proxy before it). The blocks' size is fixed at
                // init: begin a new upload with blocks half the size.
                guard let smaller = ChunkRefusal.halved(length) else {
                    throw TransferFailure.http(
                        status: response.status, method: "POST",
                        url: "\(Redaction.redactURL(target.url)) (block \(index + 1) of \(blockCount))",
                        body: response.bodyText, retryAfter: nil,
                        hint: ChunkRefusal.floorHint(length, status: response.status))
                }
                chunkSizes.remember(smaller, for: target.url)
                await context.note(
                    ChunkRefusal.retryNote(refused: length, status: response.status, next: smaller)
                        + "; starting a new upload with blocks of that size")
                blockSize = smaller
                blockCount = Self.blockCount(total, blockSize)
                upToken = try await initialize(context, blockSize: blockSize)
                index = 0
                afterRefusal = true
                continue
            }
            let data = try Self.check(response, target: target, step: "block \(index + 1) of \(blockCount)")
            index += 1
            try await context.commit(
                offset + length,
                Checkpoint(ChunkedCheckpoint(upToken: upToken, blockSize: blockSize, blocksAcknowledged: index)), true)
            last = (response, data)
            if afterRefusal {
                afterRefusal = false
                await context.note(ChunkRefusal.acceptedNote(blockSize))
            }
        }
        guard let last else { throw TransferFailure.protocolViolation("no block was sent") }
        let url =
            last.data["fileUrl"] as? String
            ?? last.response.resultURL(
                pointer: target.resultURLPointer, answeredURL: last.response.redirectedURL ?? target.url)
        return JobResult(url: url, status: last.response.status, body: String(last.response.bodyText.prefix(4096)))
    }

    /// Blocks of `blockSize` in `total` bytes, at least one (an empty file is one empty block).
    static func blockCount(_ total: Int64, _ blockSize: Int64) -> Int64 {
        max(1, total / blockSize + (total % blockSize == 0 ? 0 : 1))
    }

    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws {
        _ = try await deleteFromServer(job, target: target)
    }

    func deleteFromServer(_ job: Job, target: ResolvedTarget) async throws -> DeleteOutcome {
        try await HTTPDelete.resultURL(of: job, target: target, http: http)
    }

    /// The init request: answers the upToken, journaled before any block is sent.
    private func initialize(_ context: TransferContext, blockSize: Int64) async throws -> String {
        let target = context.target
        var parts = commonFields(target, blockSize: blockSize, total: context.source.size, sequence: 0)
        parts.append(
            .file(
                name: "block", fileName: target.fileName, contentType: "application/octet-stream",
                region: FileRegion(file: context.source, offset: 0, length: 0)))
        let response = try await http.send(target.request("POST", body: .multipart(parts)))
        let data = try Self.check(response, target: target, step: "init")
        guard let upToken = data["upToken"] as? String, !upToken.isEmpty else {
            throw TransferFailure.protocolViolation(
                "the init answer has no data.upToken: \(response.bodyText.prefix(200))")
        }
        try await context.commit(
            0, Checkpoint(ChunkedCheckpoint(upToken: upToken, blockSize: blockSize, blocksAcknowledged: 0)), true)
        return upToken
    }

    private func commonFields(_ target: ResolvedTarget, blockSize: Int64, total: Int64, sequence: Int64)
        -> [MultipartPart]
    {
        let ext = (target.fileName as NSString).pathExtension
        let suffix = ext.count <= 16 && ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? ext : ""
        var parts: [MultipartPart] = [
            .field(name: "sequenceNo", value: String(sequence)), .field(name: "blockSize", value: String(blockSize)),
            .field(name: "totFileSize", value: String(total)), .field(name: "suffix", value: suffix),
        ]
        parts += target.fields.map { .field(name: $0.name, value: $0.value) }
        return parts
    }

    /// A 2xx with a JSON body whose `code` is 0 (or absent); returns its `data` object.
    static func check(_ response: HTTPResponse, target: ResolvedTarget, step: String) throws -> [String: Any] {
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "POST", url: "\(Redaction.redactURL(target.url)) (\(step))",
                body: response.bodyText, retryAfter: response.retryAfter)
        }
        guard let answer = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw TransferFailure.protocolViolation(
                "\(step): the server's answer is not a JSON object: \(response.bodyText.prefix(200))")
        }
        if let code = answer["code"] as? Int, code != 0 {
            let message = answer["message"] as? String ?? "error \(code)"
            throw TransferFailure(
                JobError(code: "protocol", message: "\(step): the server said \(code): \(message)"), retryable: false)
        }
        return answer["data"] as? [String: Any] ?? [:]
    }
}
