import Testing

@testable import UploadWire

@Suite("Redaction of secrets in URLs")
struct RedactionTests {
    @Test(arguments: [
        ("https://user:pass@host/x", "https://host/x"),
        ("https://bob@host/", "https://host/"),
        ("https://u:p@ss@host:8443/dir/f?uploadId=1", "https://host:8443/dir/f?uploadId=1"),
        ("http://u:p@host", "http://host"),
    ])
    func userInfoIsRemoved(url: String, expected: String) {
        #expect(Redaction.redactURL(url) == expected)
    }

    /// Every value is a secret unless its key is known to be harmless: a list of secret-looking
    /// names would miss `password=`, `pass=`, `auth=` and every server's own spelling.
    @Test(arguments: [
        ("https://host/f?token=abc", "https://host/f?token=REDACTED"),
        ("https://host/f?password=hunter2", "https://host/f?password=REDACTED"),
        ("https://host/f?pass=hunter2&user=bob", "https://host/f?pass=REDACTED&user=REDACTED"),
        ("https://host/f?auth=x;sig=y", "https://host/f?auth=REDACTED;sig=REDACTED"),
        ("https://host/a/b?page=2", "https://host/a/b?page=REDACTED"),
        ("https://host/f?s3cr3t", "https://host/f?REDACTED"),
        ("https://host/f?a=1&&b=&c", "https://host/f?a=REDACTED&&b=&REDACTED"),
        ("https://host/f?code=abc#frag", "https://host/f?code=REDACTED#frag"),
        ("https://host/f?", "https://host/f?"),
    ])
    func everyQueryValueIsRedacted(url: String, expected: String) {
        #expect(Redaction.redactURL(url) == expected)
    }

    /// A presigned S3 URL keeps what says how it was signed and loses the signature and the key.
    @Test func presignedS3URLsKeepOnlyTheHarmlessParameters() {
        let url =
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20240101&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=abcdef"
        #expect(
            Redaction.redactURL(url)
                == "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=REDACTED"
        )
        #expect(
            Redaction.redactURL("https://h/k?partNumber=3&uploadId=xyz&uploads")
                == "https://h/k?partNumber=3&uploadId=xyz&uploads")
    }

    @Test(arguments: ["https://host/p@th/x", "s3://bucket/key", "file:///tmp/x", "nas:dir/x", "https://host/a#b=c"])
    func harmlessURLsAreUnchanged(url: String) {
        #expect(Redaction.redactURL(url) == url)
    }

    @Test func bothAtOnce() {
        #expect(Redaction.redactURL("https://u:pw@h/x?token=t") == "https://h/x?token=REDACTED")
    }

    /// uploadctl writes the redacted URL over its own argument, which it cannot lengthen.
    @Test(arguments: ["https://u:p@h/x?a=1&b=&c;d=22", "http://h/?t", "http://a@h?x=y", "https://h/x?uploadId=1&k=v"])
    func aOneCharacterPlaceholderNeverLengthens(url: String) {
        let redacted = Redaction.redactURL(url, placeholder: "*")
        #expect(redacted.utf8.count <= url.utf8.count, "\(redacted)")
    }
}
