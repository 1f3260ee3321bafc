import Foundation
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// A server behind the HTTP seam, written as one function from request to answer, which keeps
/// whatever state it needs. Every request is logged as "METHOD url [Upload-Offset]".
final class ScriptedHTTP: HTTPSending {
    typealias Server = @Sendable (HTTPRequest) throws -> HTTPResponse

    private let server: Server
    private let log = Mutex<[String]>([])

    init(_ server: @escaping Server) { self.server = server }

    var requests: [String] { log.withLock { $0 } }

    func send(_ request: HTTPRequest, meter: ProgressMeter?) async throws -> HTTPResponse {
        let offset = request.headers.first { $0.name.lowercased() == "upload-offset" }.map { " @\($0.value)" } ?? ""
        log.withLock { $0.append("\(request.method) \(request.url)\(offset)") }
        return try server(request)
    }

    static func answer(_ status: Int, _ headers: [String: String] = [:], body: String = "") -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: headers.map { KeyValue(name: $0.key.lowercased(), value: $0.value) }.sorted { $0.name < $1.name },
            body: Array(body.utf8))
    }
}

/// A source file of `size` bytes, and a context to upload it to `url` with `uploadProtocol`.
final class TransferBench: Sendable {
    let directory: TemporaryDirectory
    let source: SourceFile
    let commits = CommitLog()
    let notes = Mutex<[String]>([])

    init(size: Int) throws {
        directory = try TemporaryDirectory()
        let path = try directory.write("a.bin", String(repeating: "x", count: size))
        let snapshot = try SnapshotCache(cacheDirectory: directory.path + "/cache").snapshot(
            source: path, id: JobID(1), mode: .none)
        source = try SourceFile(snapshot: snapshot, displayPath: path)
    }

    func context(
        _ uploadProtocol: UploadProtocol, url: String, chunkSize: Int64? = nil, checkpoint: Checkpoint? = nil
    ) -> TransferContext {
        var job = Job(id: JobID(1), spec: JobSpec(source: source.displayPath, destination: url), createdAt: Date())
        job.checkpoint = checkpoint
        let commits = commits
        return TransferContext(
            job: job,
            target: ResolvedTarget(uploadProtocol: uploadProtocol, url: url, fileName: "a.bin", chunkSize: chunkSize),
            source: source, meter: ProgressMeter(),
            commit: { acked, _, durable in commits.append(acked, durable: durable) },
            note: { [self] message in notes.withLock { $0.append(message) } })
    }
}
