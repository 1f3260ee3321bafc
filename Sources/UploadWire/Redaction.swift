/// Removes secrets from text that is shown or logged.
public enum Redaction {
    /// What a secret query value is shown as.
    public static let placeholder = "REDACTED"

    /// Drops `user:password@` from a URL, and replaces the value of every query parameter with
    /// `placeholder`, but for the few known to be harmless (`harmlessQueryKeys`).
    ///
    /// Every value, not those whose names look secret: `password=`, `pass=`, `auth=`, `sig=`,
    /// `X-Amz-Signature=` and each server's own spelling cannot all be listed, the harmless ones
    /// can. An empty value stays empty, so that with a placeholder of one character the result
    /// is never longer than `url` (uploadctl writes it over its own arguments).
    public static func redactURL(_ url: String, placeholder: String = placeholder) -> String {
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
        guard let question = text.firstIndex(of: "?") else { return text }
        let queryStart = text.index(after: question)
        let queryEnd = text[queryStart...].firstIndex(of: "#") ?? text.endIndex
        let query = redactedQuery(text[queryStart..<queryEnd], placeholder: placeholder)
        return text[..<queryStart] + query + text[queryEnd...]
    }

    /// Query parameters whose values say how a request is made, never who may make it: S3's
    /// multipart and listing parameters, and the parts of a presigned URL that are not the
    /// signature. `X-Amz-Credential` is left out: it names the access key.
    public static let harmlessQueryKeys: Set<String> = [
        "uploadid", "partnumber", "uploads", "versionid", "prefix", "list-type", "x-amz-algorithm", "x-amz-date",
        "x-amz-expires", "x-amz-signedheaders",
    ]

    /// `query` (without its `?`) with each value replaced, and each bare word too (`?s3cr3t`),
    /// unless its key is harmless. Both `&` and `;` separate parameters, as some servers read them.
    private static func redactedQuery(_ query: Substring, placeholder: String) -> String {
        var result = ""
        result.reserveCapacity(query.utf8.count)
        var start = query.startIndex
        while true {
            let end = query[start...].firstIndex(where: { $0 == "&" || $0 == ";" }) ?? query.endIndex
            result += redactedParameter(query[start..<end], placeholder: placeholder)
            guard end < query.endIndex else { return result }
            result.append(query[end])
            start = query.index(after: end)
        }
    }

    private static func redactedParameter(_ parameter: Substring, placeholder: String) -> Substring {
        let equals = parameter.firstIndex(of: "=")
        let key = parameter[..<(equals ?? parameter.endIndex)]
        if harmlessQueryKeys.contains(key.lowercased()) { return parameter }
        guard let equals else { return parameter.isEmpty ? parameter : Substring(placeholder) }
        let value = parameter[parameter.index(after: equals)...]
        return value.isEmpty ? parameter : parameter[...equals] + placeholder
    }

    /// Whether `url` has an `@` or a `?`, the only places `redactURL` looks for secrets.
    private static func mayHoldSecret(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { $0.contains { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") } }
    }
}
