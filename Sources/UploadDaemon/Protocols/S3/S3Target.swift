import Foundation
import UploadCore
import UploadWire

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
    /// `endpoint_url` of the profile in `~/.aws/config`, else AWS's regional endpoint. A custom endpoint is addressed path-style and AWS itself
    /// virtual-hosted, as aws-cli does (a bucket whose name is not a plain DNS label stays
    /// path-style, so that TLS names match); `path_style` overrides. The region is the remote's
    /// `region`, else `AWS_REGION` or `AWS_DEFAULT_REGION`, else the profile's `region` in
    /// `~/.aws/config`, else us-east-1.
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
        let awsConfig = AWSSharedFiles(environment: environment).configValues()
        let region =
            remote?.region ?? nonEmpty("AWS_REGION") ?? nonEmpty("AWS_DEFAULT_REGION") ?? awsConfig["region"]
            ?? "us-east-1"
        let configured =
            remote?.endpoint ?? nonEmpty("AWS_ENDPOINT_URL_S3") ?? nonEmpty("AWS_ENDPOINT_URL")
            ?? awsConfig["endpoint_url"]
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
