/// Removes secrets from text that is shown or logged.
public enum Redaction {
    /// Drops `user:password@` from a URL, and its query string when it looks presigned.
    public static func redactURL(_ url: String) -> String {
        // Nothing to redact without a user part or a query: most URLs, on every event and every
        // upload's end. One pass over the bytes (`utf8.contains`, twice, showed in the profile).
        if !mayHoldSecret(url) { return url }
        var text = url
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            let hostEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
            if let at = rest[..<hostEnd].lastIndex(of: "@") {
                text.replaceSubrange(scheme.upperBound...at, with: "")
            }
        }
        if let query = text.firstIndex(of: "?") {
            let lower = text[query...].lowercased()
            let secretKeys = ["signature", "x-amz-", "token", "key=", "sig="]
            if secretKeys.contains(where: { lower.contains($0) }) {
                text = String(text[..<query]) + "?REDACTED"
            }
        }
        return text
    }

    /// Whether `url` has an `@` or a `?`, the only places `redactURL` looks for secrets.
    private static func mayHoldSecret(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { $0.contains { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") } }
    }
}
