import Foundation
import UploadWire

/// Why a transfer attempt failed, classified so the queue knows whether to try again.
///
/// Network errors, timeouts, stalls, 5xx, 408, 423 and 429 are worth retrying; other 4xx are the
/// request's fault and fail at once with the server's status and message.
public struct TransferFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var error: JobError
    public var retryable: Bool
    public var retryAfter: Duration?

    public init(_ error: JobError, retryable: Bool, retryAfter: Duration? = nil) {
        self.error = error
        self.retryable = retryable
        self.retryAfter = retryAfter
    }

    public var description: String { error.message }

    public static func network(_ message: String) -> TransferFailure {
        TransferFailure(JobError(code: "network", message: message), retryable: true)
    }

    public static func timeout(_ message: String) -> TransferFailure {
        TransferFailure(JobError(code: "timeout", message: message), retryable: true)
    }

    public static func stalled(seconds: Int) -> TransferFailure {
        TransferFailure(
            JobError(code: "stalled", message: "no bytes moved for \(seconds)s; the connection stalled"),
            retryable: true)
    }

    public static func tls(_ message: String) -> TransferFailure {
        TransferFailure(
            JobError(code: "tls", message: "\(message); if the server uses a private CA, set ca_file in its remote"),
            retryable: false)
    }

    /// The source file is missing, unreadable or changed: no retry will fix that.
    public static func source(_ message: String) -> TransferFailure {
        TransferFailure(JobError(code: "source", message: message), retryable: false)
    }

    public static func config(_ message: String) -> TransferFailure {
        TransferFailure(JobError(code: "config", message: message), retryable: false)
    }

    public static func protocolViolation(_ message: String) -> TransferFailure {
        TransferFailure(JobError(code: "protocol", message: message), retryable: false)
    }

    /// A local I/O error (the destination directory for `file://`, a read error).
    public static func io(_ message: String, retryable: Bool = false) -> TransferFailure {
        TransferFailure(JobError(code: "io", message: message), retryable: retryable)
    }

    /// A local write that failed: `no_space` when the disk was full, else `io`.
    public static func io(_ message: String, noSpace: Bool, retryable: Bool) -> TransferFailure {
        TransferFailure(JobError(code: noSpace ? "no_space" : "io", message: message), retryable: retryable)
    }

    /// The server answered with an error status. `body` is the start of its answer.
    /// `location`: the answer's Location header, named when the server redirects (uploads never
    /// follow a redirect: the file's bytes and the credentials would go where the user did not say).
    /// `hint`: what to do, in place of the status's usual one (a 413 to one chunk of a file is not
    /// about the file's size).
    public static func http(
        status: Int, method: String, url: String, body: String, retryAfter: Duration?, location: String? = nil,
        hint: String? = nil
    ) -> TransferFailure {
        let detail = Self.summarize(body)
        let reason = HTTPStatus.reason(status)
        var message = "\(method) \(url): HTTP \(status) \(reason)"
        if !detail.isEmpty { message += ": \(detail)" }
        switch status {
        case _ where hint != nil: message += " (\(hint ?? ""))"
        case 401, 403: message += " (check the user and password or token for this destination)"
        case 404 where method == "PUT": message += " (does the directory exist on the server?)"
        case 413: message += " (the server refuses a file this large)"
        case 300..<400 where location != nil:
            let target = Redaction.redactURL(String(location!.prefix(300)))
            message +=
                " (the server redirects to \(target); uploads do not follow redirects: use that as the destination)"
        default: break
        }
        return TransferFailure(
            JobError(code: "http", message: message, status: status),
            retryable: HTTPStatus.isRetryable(status), retryAfter: retryAfter)
    }

    /// One line of the server's answer, without markup, at most 200 characters.
    public static func summarize(_ body: String) -> String {
        var text = body
        if let title = text.range(of: "<title>"),
            let end = text.range(of: "</title>", range: title.upperBound..<text.endIndex)
        {
            text = String(text[title.upperBound..<end.lowerBound])
        }
        let oneLine = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        return oneLine.count > 200 ? String(oneLine.prefix(200)) + "…" : oneLine
    }
}

/// HTTP status helpers.
public enum HTTPStatus {
    public static func isSuccess(_ status: Int) -> Bool { (200..<300).contains(status) }

    /// 5xx, 408 Request Timeout, 423 Locked and 429 Too Many Requests are worth another try.
    public static func isRetryable(_ status: Int) -> Bool {
        status >= 500 || status == 408 || status == 423 || status == 429
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 423: return "Locked"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 507: return "Insufficient Storage"
        default: return ""
        }
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
    public static func parseRetryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now).rounded(.up)))
    }
}
