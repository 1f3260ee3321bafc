import Foundation
import UploadCore
import UploadWire

/// An HTTP request as the transfers describe it; the HTTP layer turns it into a libcurl handle.
package struct HTTPRequest: Sendable {
    package var method: String
    package var url: String
    package var headers: [KeyValue] = []
    package var body: HTTPBody = .none
    /// Sent up front as Basic auth, never waiting for a challenge.
    package var credentials: BasicCredentials?
    /// A CA bundle for servers with a private CA. Verification is never turned off.
    package var caFile: String?
    /// Whether HTTP/2 may be used when the server offers it (over TLS); else HTTP/1.1. Off by
    /// default: an upload over HTTP/2 moves at most the server's flow-control window per round trip
    /// (nginx as a reverse proxy that streams bodies on opens it 16-64 KiB at a time with its
    /// default buffers: 1.2 MiB/s at 50 ms), and even on loopback a 1 GiB file went 13-47% slower and
    /// small files ~23% slower over it (bench scenario 15).
    package var http2 = false
    /// Seconds without a byte moving before the transfer counts as stalled.
    package var stallTimeout = 60
    package var connectTimeout = 20
    /// Seconds the answer may take once the request is sent: a server that trickles an endless
    /// answer must not hold an upload slot forever (the stall timeout sees its bytes moving).
    package var responseTimeout = 300
    /// The transfer's own limit, shared by all its requests; nil is unlimited.
    package var sendRate: TransferRate?
    /// A body sent slower than this (bytes per second) for `minSpeedTime` seconds is too slow
    /// (`CurlRequest.isTooSlow`); 0 turns the rule off.
    package var minSpeed: Int64 = 0
    package var minSpeedTime = 120
    /// The start of the answer kept for results and error messages.
    package var maxResponseBytes = 64 << 10
    /// The answer's status line and headers are all that is wanted: the transfer ends at the
    /// body's first byte (an `auto` probe, `remotes --test`: a server whose answer never ends
    /// cannot hold them).
    package var headersOnly = false

    package init(method: String, url: String, headers: [KeyValue] = [], body: HTTPBody = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

package struct BasicCredentials: Sendable, Equatable {
    package var user: String
    package var password: String

    package init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// What a request sends.
package enum HTTPBody: Sendable {
    case none
    case bytes([UInt8])
    /// A range of the source file, streamed with pread.
    case file(FileRegion)
    /// multipart/form-data, its file parts streamed.
    case multipart([MultipartPart])

    package var length: Int64 {
        switch self {
        case .none: return 0
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(let region): return region.length
        case .multipart: return -1
        }
    }

    /// About how many bytes the body sends: its length, or for a multipart body (whose exact length
    /// is libcurl's to work out) its parts plus room for their framing. 0: no body.
    package var sizeHint: Int64 {
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

/// A file a request body is read from (the daemon's `SourceFile`), with pread at an offset; it may
/// be a copy still being made, whose bytes become ready as it grows.
package protocol BodyFile: AnyObject, Sendable {
    /// The path the user named, for messages.
    var displayPath: String { get }
    /// Whether its bytes come from a copy still being made (`isReady`, `wake`), so that the body
    /// cannot be read whole ahead of sending.
    var isBeingCopied: Bool { get }
    /// Up to `count` bytes at `offset` of the body's bytes; 0 at the end, -1 on an error (errno).
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int
    /// Whether the bytes at `offset` may be read now.
    func isReady(at offset: Int64) -> Bool
    /// Calls `waker` once the bytes at `offset` are ready.
    func wake(whenReadyAt offset: Int64, _ waker: @escaping @Sendable () -> Void)
    /// Throws when the file changed since it was checked (after the last byte was read).
    func verifyUnchanged() throws(TransferFailure)
    /// The bytes of a region, in pieces.
    func forEachPiece(offset: Int64, length: Int64, _ body: (UnsafeRawBufferPointer) -> Void) throws(TransferFailure)
}

/// A byte range of an open source file.
package struct FileRegion: Sendable {
    package var file: any BodyFile
    package var offset: Int64
    package var length: Int64

    package init(file: any BodyFile, offset: Int64, length: Int64) {
        self.file = file
        self.offset = offset
        self.length = length
    }
}

package enum MultipartPart: Sendable {
    case field(name: String, value: String)
    case file(name: String, fileName: String, contentType: String, region: FileRegion)
}

/// The server's answer: the final status, its headers (names lowercased) and the start of the body.
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: [KeyValue]
    package var body: [UInt8]
    /// The status lines as received, interim answers (100 Continue) before the final one.
    package var statusLines: [String] = []
    /// The URL that gave this answer, when same-origin redirects were followed to it (`HTTPSemantics`).
    package var redirectedURL: String?

    /// The final answer's reason phrase as the server wrote it ("" when it wrote none).
    package var reason: String {
        guard let line = statusLines.last else { return "" }
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        return parts.count > 2 ? parts[2].trimmingCharacters(in: .whitespaces) : ""
    }

    /// Whether an interim `100 Continue` came before the final answer.
    package var continued: Bool {
        statusLines.dropLast().contains { line in
            line.split(separator: " ", maxSplits: 2).dropFirst().first == "100"
        }
    }

    package func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last(where: { $0.name == lower })?.value
    }

    package var bodyText: String { String(decoding: body, as: UTF8.self) }

    package var retryAfter: Duration? { header("retry-after").flatMap { HTTPStatus.parseRetryAfter($0) } }

    /// The uploaded file's URL the answer names (`ResultURL`). A Location that is a relative
    /// reference is resolved against `answeredURL`, the URL whose answer this is (RFC 9110
    /// §10.2.2): `/files/x` alone names no server, and hooks, `delete` and `show` need one.
    package func resultURL(pointer: String?, answeredURL: String? = nil) -> String? {
        let location = header("location").map { location in
            answeredURL.flatMap { URL(string: location, relativeTo: URL(string: $0))?.absoluteString } ?? location
        }
        return ResultURL.find(body: body, location: location, pointer: pointer)
    }
}
