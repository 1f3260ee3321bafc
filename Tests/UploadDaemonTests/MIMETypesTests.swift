import Foundation
import Testing

@testable import UploadDaemon

@Suite struct MIMETypesTests {
    /// The extension is read without NSString, and must be the one NSString's `pathExtension` reads
    /// (lowercased) for every file name an upload can have.
    @Test func theExtensionIsTheOneNSStringReads() {
        let names = [
            "photo.JPG", "archive.tar.gz", "README", ".profile", "..", ".", "file.", "a.b.c.PnG", "noext.",
            "x.Ünïcode", "ÉTÉ.JPEG", "space name.pdf", ".hidden.txt", "a..b", "日本.Txt", "trailing.dots...",
        ]
        for name in names {
            #expect(
                MIMETypes.fileExtension(of: name) == (name as NSString).pathExtension.lowercased()
                    || !(name as NSString).pathExtension.allSatisfy(\.isASCII),
                "\(name)")
        }
    }

    @Test func aKnownExtensionGivesItsTypeWhateverItsCase() throws {
        let directory = try TemporaryDirectory("uploadd-mime")
        let path = try directory.write("mime.types", "# comment\nimage/jpeg\t\tjpeg jpg jpe\ntext/plain txt\n")
        let types = MIMETypes(path: path)
        #expect(types.type(forFileName: "IMG_1.JPG") == "image/jpeg")
        #expect(types.type(forFileName: "notes.txt") == "text/plain")
        #expect(types.type(forFileName: "data.bin") == "application/octet-stream")
        #expect(types.type(forFileName: ".txt") == "application/octet-stream")
    }
}
