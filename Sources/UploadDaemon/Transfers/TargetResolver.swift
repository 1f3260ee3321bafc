import Foundation
import UploadCore

/// Resolves a job's destination against the config when an attempt starts: remotes, the file name,
/// the protocol, headers, fields and credentials (secrets are read here, never journaled).
struct TargetResolver: Sendable {
    var config: DaemonConfig
    var environment: [String: String]

    func resolve(_ job: Job) throws(TransferFailure) -> ResolvedTarget {
        let spec = job.spec
        guard let fileName = SafeFileName.component(from: spec.source) else {
            throw .source("cannot derive a safe file name from \(spec.source)")
        }
        var remote: RemoteConfig?
        var destinationText = spec.destination
        var destination: Destination
        do {
            destination = try Destination.parse(destinationText)
            if case .remote(let name, let path) = destination {
                guard let found = config.remotes[name] else {
                    throw TransferFailure.config(
                        "no remote named '\(name)' in the config; add a [remote \(name)] section to uploadd.conf or use a URL")
                }
                remote = found
                destinationText = Self.join(found.url, path)
                destination = try Destination.parse(destinationText)
                if case .remote = destination {
                    throw TransferFailure.config("remote '\(name)' has a url that is not http(s), s3 or file: \(found.url)")
                }
            }
        } catch let error as TransferFailure {
            throw error
        } catch {
            throw .config("\(error)")
        }

        var uploadProtocol = job.resolvedProtocol ?? spec.uploadProtocol
        if uploadProtocol == .auto { uploadProtocol = remote?.uploadProtocol ?? .auto }
        let probeForTus = uploadProtocol == .auto && destination.impliedProtocol == nil
        if uploadProtocol == .auto { uploadProtocol = destination.impliedProtocol ?? .put }

        var target = ResolvedTarget(uploadProtocol: uploadProtocol, url: destinationText, fileName: fileName)
        target.probeForTus = probeForTus
        target.headers = (remote?.headers ?? []) + spec.headers
        target.fields = (remote?.fields ?? []) + spec.fields
        target.caFile = remote?.caFile
        target.fileField = remote?.fileField ?? "file"
        target.chunkSize = spec.chunkSize ?? remote?.chunkSize
        target.resultURLPointer = remote?.resultURLPointer
        target.stallTimeout = config.stallTimeout
        target.connectTimeout = config.connectTimeout
        target.rateLimit = config.rateLimit
        target.credentials = try credentials(spec: spec, remote: remote)

        switch destination {
        case .http:
            // A trailing slash names a directory: the file keeps its name there. post sends to the
            // URL itself: the name travels in the multipart part.
            if !probeForTus { target.settle(uploadProtocol) }
        case .file(let path):
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            // Built with URL(fileURLWithPath:) so that `%`, `?` and `#` in names are encoded and
            // read back as the same bytes.
            if path.hasSuffix("/") || (exists && isDirectory.boolValue) {
                target.url = URL(fileURLWithPath: path, isDirectory: true).appendingPathComponent(fileName).absoluteString
            } else {
                target.url = URL(fileURLWithPath: path).absoluteString
            }
        case .s3, .remote:
            break
        }
        target.s3 = try S3Target.resolve(
            destination: destination, uploadProtocol: uploadProtocol, fileName: fileName, remote: remote,
            environment: environment)
        if let s3 = target.s3 { target.url = s3.objectURL }
        return target
    }

    private func credentials(spec: JobSpec, remote: RemoteConfig?) throws(TransferFailure) -> BasicCredentials? {
        if let user = spec.user {
            let parts = user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return BasicCredentials(user: String(parts[0]), password: parts.count > 1 ? String(parts[1]) : "")
        }
        guard let remote, let user = remote.user else { return nil }
        return BasicCredentials(user: user, password: try SecretReader(environment: environment).password(for: remote))
    }

    /// `base` + `path`, with exactly one slash between them.
    static func join(_ base: String, _ path: String) -> String {
        if path.isEmpty { return base }
        let trimmedBase = base.hasSuffix("/") ? String(base.dropLast()) : base
        let trimmedPath = path.hasPrefix("/") ? String(path.dropFirst()) : path
        return trimmedBase + "/" + trimmedPath
    }

    static func percentEncodedPathComponent(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }
}

/// Reads a remote's password from a file or a systemd credential, at the moment it is needed.
struct SecretReader {
    var environment: [String: String]

    func password(for remote: RemoteConfig) throws(TransferFailure) -> String {
        if let name = remote.passwordCredential {
            guard let directory = environment["CREDENTIALS_DIRECTORY"] else {
                throw .config(
                    "remote '\(remote.name)' names the credential '\(name)', but uploadd was not given credentials (LoadCredential= in the unit)")
            }
            return try read(directory + "/" + name, remote: remote)
        }
        if let file = remote.passwordFile {
            return try read((file as NSString).expandingTildeInPath, remote: remote)
        }
        return ""
    }

    private func read(_ path: String, remote: RemoteConfig) throws(TransferFailure) -> String {
        do {
            let text = String(decoding: try FileOps.readFile(path), as: UTF8.self)
            return text.trimmingCharacters(in: .newlines)
        } catch {
            throw .config("cannot read the password of remote '\(remote.name)': \(error)")
        }
    }
}

extension ResolvedTarget {
    /// Fixes the protocol and the URL that goes with it: a PUT to a URL ending in `/` goes to the
    /// file's name in that directory; post and tus send to the URL itself (the name travels in the
    /// multipart part or the tus metadata).
    mutating func settle(_ finalProtocol: UploadProtocol) {
        uploadProtocol = finalProtocol
        probeForTus = false
        if finalProtocol == .put && url.hasSuffix("/") && url.lowercased().hasPrefix("http") {
            url += TargetResolver.percentEncodedPathComponent(fileName)
        }
    }
}
