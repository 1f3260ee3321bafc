import Foundation
import Glibc
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// `uploadctl remotes --test`: whether uploads to a remote can work, asked of its server the way
/// they would reach it, with its own credentials. Nothing of the queue: the scheduler hands over
/// its config and its HTTP client.
struct RemoteCheck {
    let config: DaemonConfig
    let environment: [String: String]
    let http: any HTTPSending

    /// Checks a remote the way its uploads would reach it, with its own credentials: a `file://`
    /// folder must take a file, an S3 bucket must answer HeadBucket. An HTTP server must answer
    /// OPTIONS (its head alone, within seconds) without refusing the credentials, and then
    /// a request it authenticates: PROPFIND (Depth 0) of the folder, or HEAD where it has no
    /// PROPFIND. A post or chunked remote gets a form of its fields without a file instead, as
    /// its credentials may be a field (`field = token=…`).
    func run(named name: String) async throws(RPCError) -> RemoteTestResult {
        guard config.remotes[name] != nil else {
            let known = config.remotes.keys.sorted().joined(separator: ", ")
            throw RPCError.invalidParams(
                "no remote '\(name)' in the config" + (known.isEmpty ? " (it has none)" : "; the remotes are \(known)"))
        }
        let probe = Job(
            id: JobID(0), spec: JobSpec(source: "/uploadd-remote-test", destination: "\(name):"),
            createdAt: Date())
        let target: ResolvedTarget
        do {
            target = try TargetResolver(config: config, environment: environment).resolve(probe)
        } catch {
            return RemoteTestResult(name: name, ok: false, message: error.error.message)
        }
        let test = TransferRegistry.entry(target.uploadProtocol).remoteTest
        if test == .localFolder {
            // Off the scheduler: a hung mount must not stop every job.
            return (try? await Blocking.run { Self.testFolder(name: name, target: target) })
                ?? RemoteTestResult(name: name, ok: false, message: "could not look at the folder")
        }
        let url = config.remotes[name]!.url
        if test == .s3, let s3 = target.s3 {
            let url = s3.url(key: "")
            var signed = HTTPRequest(
                method: "HEAD", url: url,
                headers: s3.signer.sign(
                    method: "HEAD", url: url, headers: [], payloadHash: SigV4Signer.emptyPayloadHash, date: Date()))
            signed.caFile = target.caFile
            signed.http2 = target.http2
            return await check(name: name, signed, asked: "the bucket (HeadBucket)", s3: true).result
        }
        func request(_ method: String, headers: [KeyValue] = [], body: HTTPBody = .none) -> HTTPRequest {
            var request = HTTPRequest(method: method, url: url, headers: target.headers + headers, body: body)
            request.credentials = target.credentials
            request.caFile = target.caFile
            request.http2 = target.http2
            return request
        }
        if test == .form {
            // The credentials may be a form field, which only a form carries; without a file part
            // the server refuses the form (400) once it has taken them, and stores nothing. A form
            // of no part at all is one Python's cgi module waits on for ever: it gets one field.
            let fields = target.fields.isEmpty ? [KeyValue(name: "uploadd-remote-test", value: "1")] : target.fields
            let form = request("POST", body: .multipart(fields.map { .field(name: $0.name, value: $0.value) }))
            return await check(name: name, form, asked: "the server (a form without a file)", s3: false).result
        }
        let options = await check(name: name, request("OPTIONS"), asked: "the server (OPTIONS)", s3: false)
        // Some servers leave OPTIONS open to anybody (rclone's WebDAV): only a request they
        // authenticate tells whether the credentials are right.
        guard options.result.ok, target.credentials != nil || !target.headers.isEmpty else { return options.result }
        let propfind = await check(
            name: name, request("PROPFIND", headers: [KeyValue(name: "Depth", value: "0")]),
            asked: "the folder (PROPFIND)", s3: false)
        guard let status = propfind.status, [400, 405, 501].contains(status) else {
            return propfind.status == 404
                ? RemoteTestResult(
                    name: name, ok: true,
                    message:
                        "the server accepted the credentials; the folder (PROPFIND) answered HTTP 404 Not Found: it is made at the first upload",
                    status: 404)
                : propfind.result
        }
        // No PROPFIND there: HEAD, whose 401 says as much (a folder may well be 403 or 404 to it).
        let head = await check(name: name, request("HEAD"), asked: "the folder (HEAD)", s3: false)
        if head.status == 401 || head.status.map({ $0 >= 500 }) == true { return head.result }
        return options.result
    }

    /// Sends one request of `remotes --test`, bounded (its head alone, within seconds), and judges
    /// its answer; `status` is nil when none came.
    private func check(name: String, _ request: HTTPRequest, asked what: String, s3: Bool) async -> (
        result: RemoteTestResult, status: Int?
    ) {
        var sent = request
        sent.headersOnly = true
        sent.connectTimeout = min(config.connectTimeout, 10)
        sent.responseTimeout = 10
        sent.stallTimeout = 10
        do {
            let response = try await http.send(sent)
            return (Self.verdict(name: name, status: response.status, asked: what, s3: s3), response.status)
        } catch let failure as TransferFailure {
            return (
                RemoteTestResult(name: name, ok: false, message: "cannot reach \(what): \(failure.error.message)"), nil
            )
        } catch {
            return (RemoteTestResult(name: name, ok: false, message: "cannot reach \(what): \(error)"), nil)
        }
    }

    static func verdict(name: String, status: Int, asked what: String, s3: Bool) -> RemoteTestResult {
        let reason = "HTTP \(status)" + (HTTPStatus.reason(status).isEmpty ? "" : " \(HTTPStatus.reason(status))")
        switch status {
        case 200..<300:
            return RemoteTestResult(name: name, ok: true, message: "\(what) answered \(reason)", status: status)
        case 401, 403:
            return RemoteTestResult(
                name: name, ok: false,
                message:
                    "\(what) refused the credentials (\(reason)): check the remote's \(s3 ? "access_key_id and secret access key" : "user and password_file or header")",
                status: status)
        case 404 where s3:
            return RemoteTestResult(
                name: name, ok: false, message: "no such bucket (\(reason)): check the remote's url", status: status)
        case 301 where s3:
            return RemoteTestResult(
                name: name, ok: false, message: "the bucket is in another region (\(reason)): set region",
                status: status)
        case 500... where status != 501:
            return RemoteTestResult(name: name, ok: false, message: "\(what) failed (\(reason))", status: status)
        default:
            // 404, 405 or 501 to an OPTIONS: the server is there and did not refuse us; a missing
            // folder is made at the first upload. 400 to a form without a file: it took the
            // credentials, then missed the file.
            return RemoteTestResult(
                name: name, ok: true, message: "\(what) is reachable and accepted the credentials (\(reason))",
                status: status)
        }
    }

    /// A `file://` remote: its folder exists (or can be made) and is writable.
    static func testFolder(name: String, target: ResolvedTarget) -> RemoteTestResult {
        let url = (try? FileTransfer.fileURL(of: target)) ?? target.url
        let path = URL(string: url)?.deletingLastPathComponent().path ?? url
        var existing = path
        while !FileManager.default.fileExists(atPath: existing), existing != "/" {
            existing = (existing as NSString).deletingLastPathComponent
        }
        do {
            _ = try OpenDirectory.open(existing)
        } catch {
            return RemoteTestResult(name: name, ok: false, message: "\(error)")
        }
        // Make a file there, as an upload would: access(2) says yes to root for /proc and any
        // read-only mount.
        var template = Array(((existing == "/" ? "" : existing) + "/.uploadd-remote-test-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            return RemoteTestResult(
                name: name, ok: false,
                message: "\(existing) is not writable by uploadd (making a file there: \(reason))")
        }
        close(fd)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        let made = existing == path ? "" : " (\(path) is made at the first upload)"
        return RemoteTestResult(name: name, ok: true, message: "\(existing) is a writable folder\(made)")
    }
}
