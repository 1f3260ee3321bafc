import Foundation
import UploadCore

/// Where and how an S3 upload goes: bucket, key, endpoint, addressing, region and credentials,
/// resolved when an attempt starts (the credentials are read then and never journaled).
struct S3Target: Sendable, Equatable {
    var bucket: String
    /// The object key, not encoded.
    var key: String
    /// `scheme://host[:port]` with an optional base path, no trailing slash.
    var endpoint: String
    var region: String
    /// `endpoint/bucket/key` rather than `bucket.host/key`.
    var pathStyle: Bool
    var credentials: S3Credentials
    /// Files this large or larger go up in parts.
    var multipartThreshold: Int64
    /// Sign each body's SHA-256; else send `UNSIGNED-PAYLOAD` and rely on TLS and the CRC32C.
    var signPayload: Bool

    static let defaultMultipartThreshold: Int64 = 8 << 20

    /// `s3://bucket/key`, for messages.
    var displayName: String { "s3://\(bucket)/\(key)" }

    /// The object's URL, with `query` (already encoded) when given.
    func url(key: String, query: String = "") -> String {
        let encodedKey = SigV4Signer.uriEncode(key, encodeSlash: false)
        let base: String
        if pathStyle {
            base = "\(endpoint)/\(SigV4Signer.uriEncode(bucket, encodeSlash: true))/\(encodedKey)"
        } else {
            let parts = URLParts(endpoint)
            let basePath = parts.path == "/" ? "" : parts.path
            base = "\(parts.scheme)://\(bucket).\(parts.authority)\(basePath)/\(encodedKey)"
        }
        return query.isEmpty ? base : base + "?" + query
    }

    var objectURL: String { url(key: key) }

    var signer: SigV4Signer {
        SigV4Signer(
            accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey,
            sessionToken: credentials.sessionToken, region: region)
    }
}

extension S3Target {
    /// S3 settings for a destination, or nil when the job does not upload to S3.
    ///
    /// The endpoint is the remote's `endpoint`, else `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, else
    /// AWS's regional endpoint. A custom endpoint is addressed path-style and AWS itself
    /// virtual-hosted, as aws-cli does (a bucket whose name is not a plain DNS label stays
    /// path-style, so that TLS names match); `path_style` overrides. The region is the remote's
    /// `region`, else `AWS_REGION` or `AWS_DEFAULT_REGION`, else us-east-1.
    static func resolve(
        destination: Destination, uploadProtocol: UploadProtocol, fileName: String, remote: RemoteConfig?,
        environment: [String: String]
    ) throws(TransferFailure) -> S3Target? {
        guard case .s3(let bucket, let keyOrPrefix) = destination else {
            if uploadProtocol == .s3 {
                let via =
                    remote.map { "remote '\($0.name)' has protocol = s3, so its url must be" } ?? "--protocol s3 needs"
                throw .config("\(via) an s3://bucket/prefix/ destination")
            }
            return nil
        }
        guard uploadProtocol == .s3 else {
            throw .config(
                "an s3:// destination uploads with the s3 protocol, not \(uploadProtocol.rawValue); drop --protocol or use --protocol s3"
            )
        }
        var key = keyOrPrefix
        if key.isEmpty || key.hasSuffix("/") { key += fileName }

        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let region = remote?.region ?? nonEmpty("AWS_REGION") ?? nonEmpty("AWS_DEFAULT_REGION") ?? "us-east-1"
        let configured = remote?.endpoint ?? nonEmpty("AWS_ENDPOINT_URL_S3") ?? nonEmpty("AWS_ENDPOINT_URL")
        let endpoint: String
        let isAWS: Bool
        if let configured {
            endpoint = try normalizedEndpoint(configured, remote: remote)
            isAWS = URLParts(endpoint).authority.lowercased().hasSuffix(".amazonaws.com")
        } else {
            endpoint = "https://s3.\(region).amazonaws.com"
            isAWS = true
        }
        let virtualHostable = isAWS && isDNSLabel(bucket)
        let pathStyle = remote?.pathStyle ?? !virtualHostable
        let credentials = try S3CredentialResolver(environment: environment).resolve(remote: remote)
        return S3Target(
            bucket: bucket, key: key, endpoint: endpoint, region: region, pathStyle: pathStyle,
            credentials: credentials,
            multipartThreshold: remote?.multipartThreshold ?? defaultMultipartThreshold,
            signPayload: remote?.signPayload ?? !endpoint.hasPrefix("https://"))
    }

    /// `http(s)://host[:port][/base]` without a trailing slash or a default port.
    static func normalizedEndpoint(_ text: String, remote: RemoteConfig?) throws(TransferFailure) -> String {
        var parts = URLParts(text.trimmingCharacters(in: .whitespaces))
        guard parts.scheme == "http" || parts.scheme == "https", !parts.authority.isEmpty, parts.query.isEmpty else {
            let origin = remote.map { "endpoint of remote '\($0.name)'" } ?? "AWS_ENDPOINT_URL"
            throw .config("the S3 \(origin) must be an http(s)://host[:port] URL, not '\(text)'")
        }
        let defaultPort = parts.scheme == "https" ? ":443" : ":80"
        if parts.authority.hasSuffix(defaultPort) { parts.authority.removeLast(defaultPort.count) }
        var path = parts.path
        while path.hasSuffix("/") { path.removeLast() }
        return "\(parts.scheme)://\(parts.authority)\(path)"
    }

    /// Lowercase letters, digits and inner hyphens, 3 to 63 long: a bucket that can be a host name
    /// under a wildcard certificate (no dots).
    static func isDNSLabel(_ bucket: String) -> Bool {
        guard (3...63).contains(bucket.count), !bucket.hasPrefix("-"), !bucket.hasSuffix("-") else { return false }
        return bucket.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }
}

/// How a file is cut into parts: S3 allows at most 10,000 parts of 5 MiB to 5 GiB (the last part
/// may be smaller).
enum S3PartSizing {
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000
    static let defaultPartSize: Int64 = 8 << 20

    /// The requested size (default 8 MiB), at least 5 MiB, raised to whole MiB so that the file
    /// fits in 10,000 parts.
    static func partSize(fileSize: Int64, requested: Int64?) -> Int64 {
        var size = max(requested ?? defaultPartSize, minimumPartSize)
        if fileSize > size * maximumParts {
            let needed = (fileSize + maximumParts - 1) / maximumParts
            let mebibyte: Int64 = 1 << 20
            size = (needed + mebibyte - 1) / mebibyte * mebibyte
        }
        return min(size, maximumPartSize)
    }

    static func partCount(fileSize: Int64, partSize: Int64) -> Int {
        fileSize == 0 ? 1 : Int((fileSize + partSize - 1) / partSize)
    }

    /// Offset and length of part `number` (from 1).
    static func range(ofPart number: Int, fileSize: Int64, partSize: Int64) -> (offset: Int64, length: Int64) {
        let offset = Int64(number - 1) * partSize
        return (offset, max(0, min(partSize, fileSize - offset)))
    }
}

extension DaemonConfig {
    /// `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`, as systemd reads booleans.
    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }
}
