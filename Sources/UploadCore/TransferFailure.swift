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
    /// `location`: the answer's Location header, named when the server redirects to another origin
    /// (the file's bytes and the credentials would go where the user did not say).
    /// `hint`: what to do, in place of the status's usual one (a 413 to one chunk of a file is not
    /// about the file's size).
    /// `reasonPhrase`: the status line's own text, which some servers (Python's http.server) fill
    /// with what went wrong.
    public static func http(
        status: Int, method: String, url: String, body: String, retryAfter: Duration?, location: String? = nil,
        hint: String? = nil, reasonPhrase: String? = nil
    ) -> TransferFailure {
        let detail = Self.summarize(body, reasonPhrase: reasonPhrase)
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

    /// One line of the server's answer, without markup, at most 200 characters: the reason phrase
    /// when the server wrote its own (not the standard one), and the body's text. An HTML page
    /// gives its title, or when the title says no more than the status ("Error response", "400
    /// Bad Request"), the text of its body without the lines that only repeat the status.
    public static func summarize(_ body: String, reasonPhrase: String? = nil) -> String {
        let phrase = reasonPhrase.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap {
            $0.isEmpty || isGeneric($0) ? nil : $0
        }
        var text = body
        if let title = text.range(of: "<title>", options: .caseInsensitive),
            let end = text.range(of: "</title>", options: .caseInsensitive, range: title.upperBound..<text.endIndex)
        {
            let titleText = decodeEntities(String(text[title.upperBound..<end.lowerBound]))
            let own = isGeneric(titleText) ? ownText(ofPage: body, title: titleText) : []
            text = own.isEmpty ? titleText : own.joined(separator: " ")
        }
        var oneLine = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        if let phrase {
            if oneLine.isEmpty || isGeneric(oneLine) || oneLine.contains(phrase) {
                oneLine = phrase
            } else {
                oneLine = phrase + "; " + oneLine
            }
        }
        return oneLine.count > 200 ? String(oneLine.prefix(200)) + "…" : oneLine
    }

    /// The lines of an HTML page's body that say more than its status: no head, comments,
    /// scripts, markup, nor the server's signature after the first `<hr>`.
    static func ownText(ofPage page: String, title: String) -> [String] {
        var html = page
        for (open, close) in [("<head", "</head>"), ("<!--", "-->"), ("<script", "</script>"), ("<style", "</style>")] {
            while let start = html.range(of: open, options: .caseInsensitive),
                let end = html.range(of: close, options: .caseInsensitive, range: start.upperBound..<html.endIndex)
            {
                html.removeSubrange(start.lowerBound..<end.upperBound)
            }
        }
        if let rule = html.range(of: "<hr", options: .caseInsensitive) { html = String(html[..<rule.lowerBound]) }
        var lines: [String] = []
        var inTag = false
        var line = ""
        for character in html {
            if character == "<" {
                inTag = true
                lines.append(line)
                line = ""
            } else if character == ">" {
                inTag = false
            } else if !inTag {
                if character.isNewline {
                    lines.append(line)
                    line = ""
                } else {
                    line.append(character)
                }
            }
        }
        lines.append(line)
        return lines.map { decodeEntities($0).trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty && $0 != title && !isGeneric($0) && !$0.lowercased().hasPrefix("error code explanation:")
        }
    }

    /// Whether a text says no more than an HTTP status does: a standard reason phrase, a status
    /// number, "Error response", "Error code: 400" or a mix of those.
    static func isGeneric(_ text: String) -> Bool {
        let words = text.lowercased().unicodeScalars.map { CharacterSet.letters.contains($0) ? Character($0) : " " }
        let letters = String(words).split(separator: " ").joined(separator: " ")
        if letters.isEmpty { return true }
        if ["error response", "error code", "error", "http error"].contains(letters) { return true }
        return genericPhrases.contains(letters)
    }

    /// Standard reason phrases (RFC 9110 and the older names servers still send), lowercased.
    private static let genericPhrases: Set<String> = [
        "continue", "ok", "created", "accepted", "no content", "multi status", "moved permanently", "found",
        "see other", "not modified", "temporary redirect", "permanent redirect", "bad request", "unauthorized",
        "payment required", "forbidden", "not found", "method not allowed", "not acceptable", "request timeout",
        "conflict", "gone", "length required", "precondition failed", "content too large", "payload too large",
        "request entity too large", "uri too long", "request uri too long", "unsupported media type",
        "range not satisfiable", "requested range not satisfiable", "expectation failed",
        "unprocessable entity", "unprocessable content", "locked", "failed dependency", "too many requests",
        "internal server error", "not implemented", "bad gateway", "service unavailable", "gateway timeout",
        "http version not supported", "insufficient storage",
    ]

    private static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&#x27;", with: "'").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&nbsp;", with: " ")
            .replacingOccurrences(of: "&amp;", with: "&")
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
