import Foundation
import UploadCore
import UploadWire

/// An HTTP request as the transfers describe it; the HTTP layer turns it into a libcurl handle.
struct HTTPRequest: Sendable {
    var method: String
    var url: String
    var headers: [KeyValue] = []
    var body: HTTPBody = .none
    /// Sent up front as Basic auth, never waiting for a challenge.
    var credentials: BasicCredentials?
    /// A CA bundle for servers with a private CA. Verification is never turned off.
    var caFile: String?
    /// Whether HTTP/2 may be used when the server offers it (over TLS); else HTTP/1.1. Off by
    /// default: an upload over HTTP/2 moves at most the server's flow-control window per round trip
    /// (nginx as a reverse proxy that streams bodies on opens it 16-64 KiB at a time with its
    /// default buffers: 1.2 MiB/s at 50 ms), and even on loopback a 1 GiB file went 13-47% slower and
    /// small files ~23% slower over it (bench scenario 15).
    var http2 = false
    /// Seconds without a byte moving before the transfer counts as stalled.
    var stallTimeout = 60
    var connectTimeout = 20
    /// Seconds the answer may take once the request is sent: a server that trickles an endless
    /// answer must not hold an upload slot forever (the stall timeout sees its bytes moving).
    var responseTimeout = 300
    /// The transfer's own limit, shared by all its requests; nil is unlimited.
    var sendRate: TransferRate?
    /// A body sent slower than this (bytes per second) for `minSpeedTime` seconds is too slow
    /// (`CurlRequest.isTooSlow`); 0 turns the rule off.
    var minSpeed: Int64 = 0
    var minSpeedTime = 120
    /// The start of the answer kept for results and error messages.
    var maxResponseBytes = 64 << 10
    /// The answer's status line and headers are all that is wanted: the transfer ends at the
    /// body's first byte (an `auto` probe, `remotes --test`: a server whose answer never ends
    /// cannot hold them).
    var headersOnly = false

    init(method: String, url: String, headers: [KeyValue] = [], body: HTTPBody = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

struct BasicCredentials: Sendable, Equatable {
    var user: String
    var password: String
}

/// What a request sends.
enum HTTPBody: Sendable {
    case none
    case bytes([UInt8])
    /// A range of the source file, streamed with pread.
    case file(FileRegion)
    /// multipart/form-data, its file parts streamed.
    case multipart([MultipartPart])

    var length: Int64 {
        switch self {
        case .none: return 0
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(let region): return region.length
        case .multipart: return -1
        }
    }

    /// About how many bytes the body sends: its length, or for a multipart body (whose exact length
    /// is libcurl's to work out) its parts plus room for their framing. 0: no body.
    var sizeHint: Int64 {
        guard case .multipart(let parts) = self else { return length }
        return parts.reduce(Int64(1024)) { total, part in
            switch part {
            case .field(let name, let value): total + Int64(name.utf8.count + value.utf8.count + 128)
            case .file(let name, let fileName, _, let region):
                total + region.length + Int64(name.utf8.count + fileName.utf8.count + 256)
            }
        }
    }
}

/// A byte range of an open source file.
struct FileRegion: Sendable {
    var file: SourceFile
    var offset: Int64
    var length: Int64
}

enum MultipartPart: Sendable {
    case field(name: String, value: String)
    case file(name: String, fileName: String, contentType: String, region: FileRegion)
}

/// The server's answer: the final status, its headers (names lowercased) and the start of the body.
struct HTTPResponse: Sendable {
    var status: Int
    var headers: [KeyValue]
    var body: [UInt8]
    /// The status lines as received, interim answers (100 Continue) before the final one.
    var statusLines: [String] = []
    /// The URL that gave this answer, when same-origin redirects were followed to it (`HTTPSemantics`).
    var redirectedURL: String?

    /// The final answer's reason phrase as the server wrote it ("" when it wrote none).
    var reason: String {
        guard let line = statusLines.last else { return "" }
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        return parts.count > 2 ? parts[2].trimmingCharacters(in: .whitespaces) : ""
    }

    /// Whether an interim `100 Continue` came before the final answer.
    var continued: Bool {
        statusLines.dropLast().contains { line in
            line.split(separator: " ", maxSplits: 2).dropFirst().first == "100"
        }
    }

    func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last(where: { $0.name == lower })?.value
    }

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    var retryAfter: Duration? { header("retry-after").flatMap { HTTPStatus.parseRetryAfter($0) } }

    /// The uploaded file's URL the answer names (`ResultURL`). A Location that is a relative
    /// reference is resolved against `answeredURL`, the URL whose answer this is (RFC 9110
    /// §10.2.2): `/files/x` alone names no server, and hooks, `delete` and `show` need one.
    func resultURL(pointer: String?, answeredURL: String? = nil) -> String? {
        let location = header("location").map { location in
            answeredURL.flatMap { URL(string: location, relativeTo: URL(string: $0))?.absoluteString } ?? location
        }
        return ResultURL.find(body: body, location: location, pointer: pointer)
    }
}
