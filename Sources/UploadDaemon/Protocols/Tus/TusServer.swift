import Foundation
import UploadCore
import UploadHTTP
import UploadWire

/// What a tus server said about itself in answer to OPTIONS.
struct TusServer: Sendable {
    var extensions: Set<String>
    var checksumAlgorithm: String?
    var maxSize: Int64?

    /// The `auto` probe: whether OPTIONS on the destination answers with `Tus-Resumable`, and
    /// what it answered, for the job's history. A server that answers at all decides, by its
    /// status line and headers (its body is never waited for); one that cannot be reached throws,
    /// so that the attempt is retried with the probe, not taken for PUT.
    static func probe(http: any HTTPSending, target: ResolvedTarget) async throws -> (speaks: Bool, answered: String) {
        let response = try await http.send(
            TransferRegistry.probeRequest(target.request("OPTIONS", headers: [TusTransfer.resumable])))
        if HTTPStatus.isSuccess(response.status) && response.header("tus-resumable") != nil {
            return (true, "the server answered OPTIONS with Tus-Resumable")
        }
        let answer = HTTPStatus.isSuccess(response.status) ? "without Tus-Resumable" : "with HTTP \(response.status)"
        return (false, "the server answered OPTIONS \(answer)")
    }

    static func discover(http: any HTTPSending, target: ResolvedTarget) async throws -> TusServer {
        let response = try await http.send(target.request("OPTIONS", headers: [TusTransfer.resumable]))
        guard HTTPStatus.isSuccess(response.status) else {
            throw TransferFailure.http(
                status: response.status, method: "OPTIONS", url: Redaction.redactURL(target.url),
                body: response.bodyText,
                retryAfter: response.retryAfter)
        }
        let extensions = Set(
            (response.header("tus-extension") ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        let offered = (response.header("tus-checksum-algorithm") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        // The strongest algorithm both sides know; none when the server lacks the checksum extension.
        let preference = ["sha256", "sha512", "sha1", "md5"]
        let algorithm = extensions.contains("checksum") ? preference.first(where: offered.contains) : nil
        return TusServer(
            extensions: extensions, checksumAlgorithm: algorithm,
            maxSize: TusHeaders.maxSize(response.header("tus-max-size")))
    }

    /// `Upload-Checksum: ALGORITHM BASE64` for a chunk, when the server checks them.
    func checksumHeader(_ file: SourceFile, offset: Int64, length: Int64) throws -> KeyValue? {
        guard let checksumAlgorithm,
            let digest = try MessageDigest.of(file, offset: offset, length: length, algorithm: checksumAlgorithm)
        else { return nil }
        return KeyValue(name: "Upload-Checksum", value: "\(checksumAlgorithm) \(Data(digest).base64EncodedString())")
    }
}
