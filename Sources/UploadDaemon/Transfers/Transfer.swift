import Foundation
import UploadCore
import UploadHTTP
import UploadWire

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

    /// `deleteUploaded`, saying whether the server still had the file.
    func deleteFromServer(_ job: Job, target: ResolvedTarget) async throws -> DeleteOutcome
}

extension Transfer {
    func discardPartialUpload(_ job: Job, target: ResolvedTarget) async throws {}

    func deleteFromServer(_ job: Job, target: ResolvedTarget) async throws -> DeleteOutcome {
        try await deleteUploaded(job, target: target)
        return .deleted
    }
}

/// What `uploadctl delete` found on the server.
enum DeleteOutcome: Sendable, Equatable {
    case deleted
    /// The server answered that there was nothing there (HTTP 404 or 410).
    case absent(status: Int)
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
    /// A `file://` destination without a trailing slash: the upload looks, off the scheduler, whether
    /// it names a folder (the file then goes in it, as `url` + `fileName`) or the file itself. Never
    /// asked of the file system where the scheduler runs: a hung mount would stop every job.
    var fileURLMayNameFolder = false
    var headers: [KeyValue] = []
    var fields: [KeyValue] = []
    var credentials: BasicCredentials?
    var caFile: String?
    /// HTTP/2 when the server offers it (the remote's `http2`); else HTTP/1.1.
    var http2 = false
    /// The multipart field name of the file part (post).
    var fileField = "file"
    /// The name the file gets on the server.
    var fileName: String
    var chunkSize: Int64?
    var resultURLPointer: String?
    var stallTimeout = 60
    var minSpeed: Int64 = 0
    var minSpeedTime = 120
    var connectTimeout = 20
    /// `rate_limit`, one bucket for all the attempt's requests.
    var rateLimit: TransferRate?
    /// The umask for what a `file://` copy creates: the adding client's, else the daemon's own.
    var umask: mode_t = 0o022
    /// `auto` for an http destination: the registry's probes decide the protocol before the upload.
    var needsProbe = false
    /// Bucket, key, endpoint and credentials for the s3 protocol.
    var s3: S3Target?
    /// Whether URLs a server names on another origin may be used (without credentials).
    var allowCrossOrigin = false
    /// Seconds a server may take to answer once the request is sent.
    var responseTimeout = 300
    /// Whether the upload waits while the connection is metered, or the machine on battery.
    var waitOnMetered = false
    var waitOnBattery = false

    /// A request with this target's CA and timeouts, and its credentials and headers when it goes
    /// to the destination's origin (`checkServerURL` vets any other URL first).
    func request(_ method: String, url: String? = nil, headers extra: [KeyValue] = [], body: HTTPBody = .none)
        -> HTTPRequest
    {
        let url = url ?? self.url
        let trusted = isSameOrigin(url)
        var request = HTTPRequest(method: method, url: url, headers: (trusted ? headers : []) + extra, body: body)
        request.credentials = trusted ? credentials : nil
        request.responseTimeout = responseTimeout
        request.caFile = caFile
        request.http2 = http2
        request.stallTimeout = stallTimeout
        request.minSpeed = minSpeed
        request.minSpeedTime = minSpeedTime
        request.connectTimeout = connectTimeout
        request.sendRate = rateLimit
        return request
    }
}
