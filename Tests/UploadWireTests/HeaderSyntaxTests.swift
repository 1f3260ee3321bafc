import Testing

@testable import UploadWire

@Suite("Header and field syntax")
struct HeaderSyntaxTests {
    @Test(arguments: [
        ("X-Token: abc", "X-Token", "abc"), ("  Name :  value  ", "Name", "value"), ("Host: a:b", "Host", "a:b"),
        ("Empty:", "Empty", ""),
    ])
    func headers(text: String, name: String, value: String) {
        #expect(HeaderSyntax.parse(text) == KeyValue(name: name, value: value))
    }

    @Test(arguments: ["NoColon", ": v", "Bad Name: v", "Näme: v", "X: a\nb", "X: a\rb"])
    func badHeaders(text: String) {
        #expect(HeaderSyntax.parse(text) == nil)
    }

    /// "\r\n" is one Character in Swift, equal to neither "\r" nor "\n": a check per Character
    /// lets a CRLF through, and with it a second header of the caller's choosing.
    @Test(arguments: ["X: a\r\nEvil: 1", "X: a\r\n", "X: \r\nTransfer-Encoding: chunked"])
    func crlfInAValueIsRefused(text: String) {
        #expect(HeaderSyntax.parse(text) == nil)
    }

    @Test(arguments: [
        ("a=b", "a", "b"), ("a=", "a", ""), ("a=b=c", "a", "b=c"), ("title=Hello World", "title", "Hello World"),
    ])
    func fields(text: String, name: String, value: String) {
        #expect(FieldSyntax.parse(text) == KeyValue(name: name, value: value))
    }

    @Test(arguments: ["=b", "ab", ""])
    func badFields(text: String) {
        #expect(FieldSyntax.parse(text) == nil)
    }
}
