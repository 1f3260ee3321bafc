import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// Resolves a job's destination against the config when an attempt starts: remotes, the file name,
/// the protocol, headers, fields and credentials (secrets are read here, never journaled).
struct TargetResolver: Sendable {
    var config: DaemonConfig
    var environment: [String: String]
    /// The umask uploadd was started with, for `file://` copies of jobs added without one.
    var umask: mode_t = 0o022

    func resolve(_ job: Job) throws(TransferFailure) -> ResolvedTarget {
        let spec = job.spec
        var remote: RemoteConfig?
        var destinationText = spec.destination
        var destination: Destination
        do {
            destination = try Destination.parse(destinationText)
            if case .remote(let name, let path) = destination {
                guard let found = config.remotes[name] else {
                    throw TransferFailure.config(
                        "no remote named '\(name)' in the config; add a [remote \(name)] section to uploadd.conf or use a URL"
                    )
                }
                remote = found
                destinationText = Self.join(found.url, path)
                destination = try Destination.parse(destinationText)
                if case .remote = destination {
                    throw TransferFailure.config(
                        "remote '\(name)' has a url that is not http(s), s3 or file: \(found.url)")
                }
            }
        } catch let error as TransferFailure {
            throw error
        } catch {
            throw .config("\(error)")
        }

        // The source's name, or when that cannot go to a server, the name the destination gives.
        // A preparation that changed the format changed the name's extension (`IMG_1.HEIC` → `IMG_1.jpg`).
        let named = job.prepared?.fileName ?? spec.source
        guard let fileName = SafeFileName.component(from: named) ?? destination.explicitFileName else {
            throw .source(
                "cannot use the name of \(spec.source) on a server; name the file in the destination, as --to .../NAME")
        }
        var uploadProtocol = job.resolvedProtocol ?? spec.uploadProtocol
        if uploadProtocol == .auto { uploadProtocol = remote?.uploadProtocol ?? .auto }
        // auto: the only protocol for this kind of destination, else the server is asked first
        // (the fallback stands in until it answers).
        let needsProbe = uploadProtocol == .auto && destination.impliedProtocol == nil
        if uploadProtocol == .auto { uploadProtocol = destination.impliedProtocol ?? TransferRegistry.fallback }

        var target = ResolvedTarget(uploadProtocol: uploadProtocol, url: destinationText, fileName: fileName)
        target.needsProbe = needsProbe
        target.headers = (remote?.headers ?? []) + spec.headers
        target.fields = (remote?.fields ?? []) + spec.fields
        target.caFile = try remote.flatMap(Self.trustedCAFile)
        target.http2 = remote?.http2 ?? false
        target.fileField = spec.fileField ?? remote?.fileField ?? "file"
        target.chunkSize = spec.chunkSize ?? remote?.chunkSize
        target.resultURLPointer = remote?.resultURLPointer
        target.stallTimeout = config.stallTimeout
        target.minSpeed = config.minSpeed
        target.minSpeedTime = config.minSpeedTime
        target.connectTimeout = config.connectTimeout
        target.rateLimit = config.rateLimit.map { TransferRate(bytesPerSecond: $0) }
        target.umask = spec.umask.map { mode_t($0) } ?? umask
        target.responseTimeout = config.responseTimeout
        target.allowCrossOrigin = remote?.allowCrossOrigin ?? false
        target.waitOnMetered = remote?.waitOnMetered ?? config.waitOnMetered
        target.waitOnBattery = remote?.waitOnBattery ?? config.waitOnBattery
        target.credentials = try credentials(spec: spec, remote: remote)

        switch destination {
        case .http:
            // A trailing slash names a directory: the file keeps its name there. post sends to the
            // URL itself: the name travels in the multipart part.
            if !needsProbe { target.settle(uploadProtocol) }
        case .file(let path):
            // Built with URL(fileURLWithPath:) so that `%`, `?` and `#` in names are encoded and
            // read back as the same bytes. Whether a path without a trailing slash is a folder is
            // the upload's to find out (`fileURLMayNameFolder`): this runs on the scheduler.
            if path.hasSuffix("/") {
                target.url = Self.fileURL(named: fileName, inFolder: path)
            } else {
                target.url = URL(fileURLWithPath: path, isDirectory: false).absoluteString
                target.fileURLMayNameFolder = true
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

    /// The remote's CA bundle, when others could not have written it (`TrustedPath`): a CA of
    /// theirs in it would let them read what is sent over TLS, credentials included. A missing one
    /// is left for curl to report.
    private static func trustedCAFile(of remote: RemoteConfig) throws(TransferFailure) -> String? {
        guard let caFile = remote.caFile else { return nil }
        do {
            _ = try TrustedPath.check(caFile, what: "the [remote \(remote.name)] ca_file")
        } catch {
            throw .config(error.description)
        }
        return caFile
    }

    private func credentials(spec: JobSpec, remote: RemoteConfig?) throws(TransferFailure) -> BasicCredentials? {
        if let user = spec.user {
            let parts = user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return BasicCredentials(user: String(parts[0]), password: parts.count > 1 ? String(parts[1]) : "")
        }
        guard let remote, let user = remote.user else { return nil }
        return BasicCredentials(user: user, password: try SecretReader(environment: environment).password(for: remote))
    }

    /// The `file://` URL of `name` in the folder at `folder`.
    static func fileURL(named name: String, inFolder folder: String) -> String {
        URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(name).absoluteString
    }

    /// `base` + `path`, with exactly one slash between them.
    static func join(_ base: String, _ path: String) -> String {
        if path.isEmpty { return base }
        let trimmedBase = base.hasSuffix("/") ? String(base.dropLast()) : base
        let trimmedPath = path.hasPrefix("/") ? String(path.dropFirst()) : path
        return trimmedBase + "/" + trimmedPath
    }

    static func percentEncodedPathComponent(_ name: String) -> String {
        // Most names need nothing (letters, digits, `-._~`): no CharacterSet work then, which
        // showed in the profile of many small files.
        if name.utf8.allSatisfy(URLUnreserved.contains) { return name }
        return name.addingPercentEncoding(withAllowedCharacters: pathComponentAllowed) ?? name
    }

    private static let pathComponentAllowed: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#")
        return allowed
    }()
}

/// Reads a remote's password from a file or a systemd credential, at the moment it is needed.
struct SecretReader {
    var environment: [String: String]

    func password(for remote: RemoteConfig) throws(TransferFailure) -> String {
        if let name = remote.passwordCredential {
            guard let directory = environment["CREDENTIALS_DIRECTORY"] else {
                throw .config(
                    "remote '\(remote.name)' names the credential '\(name)', but uploadd was not given credentials (LoadCredential= in the unit)"
                )
            }
            return try read(directory + "/" + name, remote: remote)
        }
        if let file = remote.passwordFile {
            return try read((file as NSString).expandingTildeInPath, remote: remote, key: "password_file")
        }
        return ""
    }

    /// A password file named in the config (`key`) is checked as the config is (`TrustedPath`),
    /// each time: another user who owns it, or a folder above it, can read it whenever they like or
    /// swap in a symlink to a file of the victim's, whose content would then go to the server. A
    /// systemd credential is not checked: its folder is systemd's, made for this service alone.
    private func read(_ path: String, remote: RemoteConfig, key: String? = nil) throws(TransferFailure) -> String {
        do {
            let bytes =
                if let key {
                    try TrustedPath.readFile(path, what: "the [remote \(remote.name)] \(key)")
                } else {
                    try FileOps.readFile(path)
                }
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
        } catch let refusal as TrustedPath.Refusal {
            throw .config(refusal.description)
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
        needsProbe = false
        // The name goes at the end of the path; a query (a presigned URL's signature) stays.
        guard finalProtocol.traits.namesTheFileByURL, url.lowercased().hasPrefix("http") else { return }
        if url.hasSuffix("/"), !url.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            url += TargetResolver.percentEncodedPathComponent(fileName)  // the common case, without URLComponents
        } else if var components = URLComponents(string: url), components.percentEncodedPath.hasSuffix("/") {
            components.percentEncodedPath += TargetResolver.percentEncodedPathComponent(fileName)
            url = components.string ?? url
        }
    }
}
