import Foundation
import Glibc
import UploadCore
import UploadWire

/// `uploadctl remotes`: the configured remotes, and a check that uploads to one can work.
extension Scheduler {
    func remotes() -> [RemoteInfo] {
        config.remotes.values.sorted { $0.name < $1.name }.map { remote in
            let secret =
                remote.passwordCredential.map { "credential \($0)" } ?? remote.passwordFile.map { "file \($0)" }
                ?? remote.secretAccessKeyCredential.map { "credential \($0)" }
                ?? remote.secretAccessKeyFile.map { "file \($0)" }
            return RemoteInfo(
                name: remote.name, protocol: remote.uploadProtocol, url: Redaction.redactURL(remote.url),
                user: remote.user ?? remote.accessKeyID, secretSource: secret)
        }
    }

    /// Checks a remote the way its uploads would reach it, with its own credentials: a `file://`
    /// folder must be writable, an S3 bucket must answer HeadBucket, an HTTP server must answer
    /// an OPTIONS request without refusing the credentials.
    func testRemote(named name: String) async throws(RPCError) -> RemoteTestResult {
        guard config.remotes[name] != nil else {
            let known = config.remotes.keys.sorted().joined(separator: ", ")
            throw RPCError.invalidParams(
                "no remote '\(name)' in the config" + (known.isEmpty ? " (it has none)" : "; the remotes are \(known)"))
        }
        let probe = Job(
            id: JobID(0), spec: JobSpec(source: "/uploadd-remote-test", destination: "\(name):"),
            createdAt: dependencies.now())
        let target: ResolvedTarget
        do {
            target = try TargetResolver(config: config, environment: dependencies.environment).resolve(probe)
        } catch {
            return RemoteTestResult(name: name, ok: false, message: error.error.message)
        }
        if target.url.hasPrefix("file://") {
            // Off the scheduler: a hung mount must not stop every job.
            return (try? await Blocking.run { Self.testFolder(name: name, target: target) })
                ?? RemoteTestResult(name: name, ok: false, message: "could not look at the folder")
        }
        let request: HTTPRequest
        if let s3 = target.s3 {
            let url = s3.url(key: "")
            var signed = HTTPRequest(
                method: "HEAD", url: url,
                headers: s3.signer.sign(
                    method: "HEAD", url: url, headers: [], payloadHash: SigV4Signer.emptyPayloadHash, date: Date()))
            signed.caFile = target.caFile
            signed.http2 = target.http2
            request = signed
        } else {
            var options = HTTPRequest(method: "OPTIONS", url: config.remotes[name]!.url, headers: target.headers)
            options.credentials = target.credentials
            options.caFile = target.caFile
            options.http2 = target.http2
            request = options
        }
        var sent = request
        sent.connectTimeout = min(config.connectTimeout, 10)
        sent.responseTimeout = 20
        sent.stallTimeout = 20
        let what = target.s3 != nil ? "the bucket (HeadBucket)" : "the server (OPTIONS)"
        do {
            let response = try await dependencies.http.send(sent)
            return Self.verdict(name: name, status: response.status, asked: what, s3: target.s3 != nil)
        } catch let failure as TransferFailure {
            return RemoteTestResult(name: name, ok: false, message: "cannot reach \(what): \(failure.error.message)")
        } catch {
            return RemoteTestResult(name: name, ok: false, message: "cannot reach \(what): \(error)")
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
        case 500...:
            return RemoteTestResult(name: name, ok: false, message: "\(what) failed (\(reason))", status: status)
        default:
            // 404 or 405 to an OPTIONS: the server is there and did not refuse us; a missing
            // folder is made at the first upload.
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
        guard access(existing, W_OK) == 0 else {
            return RemoteTestResult(name: name, ok: false, message: "\(existing) is not writable by uploadd")
        }
        let made = existing == path ? "" : " (\(path) is made at the first upload)"
        return RemoteTestResult(name: name, ok: true, message: "\(existing) is a writable folder\(made)")
    }
}
