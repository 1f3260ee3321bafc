import Testing

@testable import UploadWire

@Suite("Redaction of secrets in URLs")
struct RedactionTests {
    @Test(arguments: [
        ("https://user:pass@host/x", "https://host/x"),
        ("https://bob@host/", "https://host/"),
        ("https://u:p@ss@host:8443/dir/f?a=1", "https://host:8443/dir/f?a=1"),
        ("http://u:p@host", "http://host"),
    ])
    func userInfoIsRemoved(url: String, expected: String) {
        #expect(Redaction.redactURL(url) == expected)
    }

    @Test(arguments: [
        "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Signature=abcdef",
        "https://host/f?token=abc",
        "https://host/f?sig=abc&se=2024",
        "https://host/f?api_key=abc",
        "https://host/f?Signature=abc&Expires=1",
    ])
    func presignedQueriesAreRedacted(url: String) {
        let redacted = Redaction.redactURL(url)
        #expect(redacted == url.split(separator: "?")[0] + "?REDACTED")
    }

    @Test(arguments: [
        "https://host/a/b?page=2", "https://host/p@th/x", "s3://bucket/key", "file:///tmp/x", "nas:dir/x",
    ])
    func harmlessURLsAreUnchanged(url: String) {
        #expect(Redaction.redactURL(url) == url)
    }

    @Test func bothAtOnce() {
        #expect(Redaction.redactURL("https://u:pw@h/x?token=t") == "https://h/x?REDACTED")
    }
}
