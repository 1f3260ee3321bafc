import Testing

@testable import UploadDaemon

@Suite("WebDAVCollections: the folders above a file, nearest first")
struct WebDAVCollectionsTests {
    @Test func ancestorsStopAboveTheServersRoot() {
        #expect(
            WebDAVCollections.ancestors(of: "https://h/dav/a/b/c.txt")
                == ["https://h/dav/a/b/", "https://h/dav/a/", "https://h/dav/"])
        #expect(WebDAVCollections.ancestors(of: "http://h:8080/c.txt") == [])
        #expect(
            WebDAVCollections.ancestors(of: "http://h/a/my%20dir/c.txt?sig=1") == [
                "http://h/a/my%20dir/", "http://h/a/",
            ])
    }
}
