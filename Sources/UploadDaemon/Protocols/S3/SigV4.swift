import Foundation
import Glibc
import UploadCore
import UploadHTTP
import UploadWire

/// AWS Signature Version 4 for the Authorization header, as S3 checks it.
///
/// The steps are pure functions (`canonicalRequest`, `stringToSign`, `signature`) so that tests
/// can hold each against the worked examples in AWS's documentation; `sign` chains them.
struct SigV4Signer: Sendable {
    var accessKeyID: String
    var secretAccessKey: String
    /// Temporary credentials (STS) come with a token that travels as `x-amz-security-token`.
    var sessionToken: String?
    var region: String
    var service = "s3"

    /// The payload hash that tells S3 the body is not part of the signature.
    static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of nothing: the payload hash of a request without a body.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// Headers a client library sets or changes on its own; signing them would break the signature.
    private static let unsignedHeaderNames: Set<String> = [
        "authorization", "user-agent", "expect", "content-length", "transfer-encoding", "connection", "accept-encoding",
    ]

    /// The request's headers plus `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` (with
    /// a session token) and `Authorization`, ready to send. `Host` is signed but left to libcurl,
    /// which sends the URL's authority.
    func sign(method: String, url: String, headers: [KeyValue], payloadHash: String, date: Date) -> [KeyValue] {
        let amzDate = Self.amzDate(date)
        var all = headers.filter { !Self.isAmzSigningHeader($0.name) }
        all.append(KeyValue(name: "x-amz-date", value: amzDate))
        all.append(KeyValue(name: "x-amz-content-sha256", value: payloadHash))
        if let sessionToken, !sessionToken.isEmpty {
            all.append(KeyValue(name: "x-amz-security-token", value: sessionToken))
        }
        let canonical = Self.canonicalRequest(method: method, url: url, headers: all, payloadHash: payloadHash)
        let day = String(amzDate.prefix(8))
        let toSign = Self.stringToSign(canonicalRequest: canonical.text, amzDate: amzDate, scope: scope(day: day))
        // Fields separated by ", " as botocore, the AWS SDKs and `curl --aws-sigv4` write them:
        // AWS also takes a bare ",", but some S3 servers split the header on ", " only.
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope(day: day)), SignedHeaders=\(canonical.signedHeaders), Signature=\(signature(stringToSign: toSign, day: day))"
        all.append(KeyValue(name: "Authorization", value: authorization))
        return all
    }

    /// `YYYYMMDD/region/service/aws4_request`.
    func scope(day: String) -> String { "\(day)/\(region)/\(service)/aws4_request" }

    /// The hex HMAC of the string to sign under the key derived from the secret, the day, the region
    /// and the service.
    func signature(stringToSign: String, day: String) -> String {
        var key = Crypto.hmacSHA256(key: Array("AWS4\(secretAccessKey)".utf8), day)
        key = Crypto.hmacSHA256(key: key, region)
        key = Crypto.hmacSHA256(key: key, service)
        key = Crypto.hmacSHA256(key: key, "aws4_request")
        return Hex.encode(Crypto.hmacSHA256(key: key, stringToSign))
    }

    struct CanonicalRequest: Equatable {
        var text: String
        /// Lowercase header names joined by `;`, as the Authorization header lists them.
        var signedHeaders: String
    }

    /// The canonical request: method, canonical URI, canonical query, the signed headers (with
    /// `host` taken from the URL unless given) and the payload hash, one per line.
    static func canonicalRequest(method: String, url: String, headers: [KeyValue], payloadHash: String)
        -> CanonicalRequest
    {
        let parts = URLParts(url)
        var values: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased().trimmingCharacters(in: .whitespaces)
            guard !unsignedHeaderNames.contains(name) else { continue }
            values[name, default: []].append(canonicalHeaderValue(header.value))
        }
        if values["host"] == nil { values["host"] = [parts.authority.lowercased()] }
        let names = values.keys.sorted()
        let headerLines = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [
            method.uppercased(), canonicalURI(parts.path), canonicalQuery(parts.query), headerLines, signedHeaders,
            payloadHash,
        ].joined(separator: "\n")
        return CanonicalRequest(text: text, signedHeaders: signedHeaders)
    }

    /// `AWS4-HMAC-SHA256`, the date, the scope and the hex SHA-256 of the canonical request.
    static func stringToSign(canonicalRequest: String, amzDate: String, scope: String) -> String {
        ["AWS4-HMAC-SHA256", amzDate, scope, Hex.encode(Crypto.sha256(canonicalRequest))].joined(separator: "\n")
    }

    /// S3's canonical URI: each path segment percent-decoded, then URI-encoded once; `/` kept.
    /// Decoding first means a URL that is already encoded (`test%24file.text`) and one that is not
    /// (`test$file.text`) sign the same, and nothing is encoded twice.
    static func canonicalURI(_ path: String) -> String {
        if path.isEmpty { return "/" }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { segment in uriEncode(percentDecode(String(segment)), encodeSlash: true) }
            .joined(separator: "/")
    }

    /// The query's name=value pairs, each URI-encoded, sorted by name then value; a bare name gets `=`.
    static func canonicalQuery(_ query: String) -> String {
        guard !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: true).map { item -> (String, String) in
            let pieces = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = uriEncode(percentDecode(String(pieces[0])), encodeSlash: true)
            let value = pieces.count > 1 ? uriEncode(percentDecode(String(pieces[1])), encodeSlash: true) : ""
            return (name, value)
        }
        return pairs.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// AWS's UriEncode: unreserved characters (`A-Z a-z 0-9 - . _ ~`) as they are, everything else
    /// as `%XX` of its UTF-8 bytes, uppercase; `/` kept unless `encodeSlash`.
    static func uriEncode(_ text: String, encodeSlash: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            case UInt8(ascii: "/") where !encodeSlash:
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `%XX` sequences to bytes; anything malformed stays as it is.
    static func percentDecode(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        let input = Array(text.utf8)
        var index = 0
        func value(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while index < input.count {
            if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
                let high = value(input[index + 1]), let low = value(input[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `20130524T000000Z`, in UTC.
    static func amzDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// Trimmed, with runs of spaces inside the value folded to one.
    private static func canonicalHeaderValue(_ value: String) -> String {
        var output = ""
        var lastWasSpace = false
        for character in value.trimmingCharacters(in: .whitespaces) {
            if character == " " || character == "\t" {
                if !lastWasSpace { output.append(" ") }
                lastWasSpace = true
            } else {
                output.append(character)
                lastWasSpace = false
            }
        }
        return output
    }

    /// Headers `sign` sets itself: a caller's own copies are dropped rather than signed twice.
    private static func isAmzSigningHeader(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower == "x-amz-date" || lower == "x-amz-content-sha256" || lower == "x-amz-security-token"
            || lower == "authorization"
    }
}

/// The pieces of an absolute URL that signing needs, split without re-encoding anything.
struct URLParts: Equatable {
    var scheme: String
    /// `host` or `host:port`, as written in the URL.
    var authority: String
    /// The path as written, `/` when empty.
    var path: String
    /// Everything after `?`, without it; the fragment dropped.
    var query: String
}

extension URLParts {
    init(_ url: String) {
        var rest = Substring(url)
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        if let separator = rest.range(of: "://") {
            scheme = rest[..<separator.lowerBound].lowercased()
            rest = rest[separator.upperBound...]
        } else {
            scheme = ""
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        authority = String(rest[..<authorityEnd])
        rest = rest[authorityEnd...]
        if let question = rest.firstIndex(of: "?") {
            path = String(rest[..<question])
            query = String(rest[rest.index(after: question)...])
        } else {
            path = String(rest)
            query = ""
        }
        if path.isEmpty { path = "/" }
    }
}
