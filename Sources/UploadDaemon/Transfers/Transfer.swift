import Foundation
import UploadCore

/// One upload protocol. The scheduler drives every protocol through this seam, and unit tests
/// drive the scheduler through it without a network.
protocol Transfer: Sendable {
    /// Uploads the job's bytes and returns what the server said. Throws `TransferFailure` (classified
    /// for retry) or `CancellationError` when the job was paused, canceled or the daemon stops.
    func upload(_ context: TransferContext) async throws -> JobResult

    /// Drops a partial upload the server holds (tus termination, S3 AbortMultipartUpload), after a
    /// cancel or remove. Nothing for protocols that keep nothing partial.
    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws

    /// Removes the uploaded object from the server (`uploadctl delete`).
    func deleteUploaded(_ job: Job, target: ResolvedTarget) async throws
}

extension Transfer {
    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {}
}

/// Everything an attempt needs, fixed when it starts.
struct TransferContext: Sendable {
    /// The job as it was when the attempt started (its checkpoint tells where to resume).
    var job: Job
    var target: ResolvedTarget
    var source: SourceFile
    var meter: ProgressMeter
    /// Journals bytes the server committed, with the protocol's checkpoint. Await it before relying
    /// on the checkpoint (for example before sending bytes that depend on a new upload URL).
    var commit: @Sendable (_ bytesAcked: Int64, _ checkpoint: Checkpoint?, _ durable: Bool) async throws -> Void
    /// Adds a line to the job's history (for example: the server forgot the upload, starting over).
    var note: @Sendable (_ message: String) async -> Void = { _ in }
}

/// The destination resolved against the config: what a transfer sends, where, and how.
struct ResolvedTarget: Sendable, Equatable {
    var uploadProtocol: UploadProtocol
    /// The full URL for http protocols, `file:///dir/name` for file.
    var url: String
    var headers: [KeyValue] = []
    var fields: [KeyValue] = []
    var credentials: BasicCredentials?
    var caFile: String?
    /// The multipart field name of the file part (post).
    var fileField = "file"
    /// The name the file gets on the server.
    var fileName: String
    var chunkSize: Int64?
    var resultURLPointer: String?
    var stallTimeout = 60
    var connectTimeout = 20
    var rateLimit: Int64?
    /// `auto` for an http destination: an OPTIONS probe decides between tus and put.
    var probeForTus = false
    /// Bucket, key, endpoint and credentials for the s3 protocol.
    var s3: S3Target?

    /// A request with this target's credentials, CA and timeouts.
    func request(_ method: String, url: String? = nil, headers extra: [KeyValue] = [], body: HTTPBody = .none)
        -> HTTPRequest
    {
        var request = HTTPRequest(method: method, url: url ?? self.url, headers: headers + extra, body: body)
        request.credentials = credentials
        request.caFile = caFile
        request.stallTimeout = stallTimeout
        request.connectTimeout = connectTimeout
        request.maxSendRate = rateLimit
        return request
    }
}

/// Picks the Transfer for a protocol.
enum TransferFactory {
    /// The protocols this build can upload with, as daemon.hello lists them.
    static let supportedProtocols: [UploadProtocol] = [.put, .post, .file, .tus, .chunked, .s3]

    static func transfer(for uploadProtocol: UploadProtocol, http: HTTPClient) throws(TransferFailure) -> any Transfer {
        switch uploadProtocol {
        case .put: return PutTransfer(http: http)
        case .post: return PostTransfer(http: http)
        case .file: return FileTransfer()
        case .chunked: return ChunkedTransfer(http: http)
        case .tus: return TusTransfer(http: http)
        case .s3: return S3Transfer(http: http)
        case .auto:
            throw .config("the protocol was not resolved")
        }
    }
}
