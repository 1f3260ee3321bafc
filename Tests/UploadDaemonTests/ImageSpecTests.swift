import Testing

@testable import UploadDaemon
@testable import UploadPlatform

@Suite("image SPEC parsing and the names prepared images get")
struct ImageSpecTests {
    @Test func everyWordIsRead() throws {
        let spec = try ImageSpec.parse(
            "max=2048,quality=80,format=webp,max-bytes=300K,strip-gps,on-error=original,max-pixels=50,untrusted-loaders"
        )
        #expect(spec.maxSide == 2048)
        #expect(spec.quality == 80)
        #expect(spec.format == .webp)
        #expect(spec.maxBytes == 300 << 10)
        #expect(spec.metadata == .stripGPS)
        #expect(spec.onError == .original)
        #expect(spec.maxPixels == 50_000_000)
        #expect(spec.allowUntrusted)
        #expect(
            spec.helperArguments == [
                "max=2048", "quality=80", "format=webp", "max-bytes=307200", "metadata=strip-gps",
                "max-pixels=50000000", "untrusted-loaders=1",
            ])
    }

    @Test func theDefaultsAreTheMobileClientsOwn() throws {
        let spec = try ImageSpec.parse("")
        #expect(spec.maxSide == nil && spec.quality == 75 && spec.format == .jpeg && spec.metadata == .keep)
        #expect(spec.onError == .fail && !spec.allowUntrusted && spec.maxBytes == nil)
    }

    @Test(arguments: [
        ("max=0", "max takes a whole number from 16 to 65535"),
        ("max=abc", "max takes a whole number"),
        ("quality=101", "quality takes a whole number from 1 to 100"),
        ("format=gif", "format is jpeg, webp or keep"),
        ("max-bytes=lots", "max-bytes takes a size"),
        ("max-bytes=10", "at least 1K"),
        ("strip-gps=yes", "unknown 'strip-gps=yes'"),
        ("sharpen", "unknown 'sharpen'"),
        ("on-error=retry", "on-error is fail or original"),
    ])
    func mistakesAreNamed(text: String, message: String) {
        do {
            _ = try ImageSpec.parse(text)
            Issue.record("'\(text)' was accepted")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
            #expect(error.description.contains("it takes max=PIXELS"), "the message lists the words")
        }
    }

    @Test func aNewFormatChangesTheExtensionAndOnlyThen() {
        #expect(ImageStep.fileName("IMG_0001.HEIC", extension: "jpg") == "IMG_0001.jpg")
        #expect(ImageStep.fileName("scan.png", extension: "jpg") == "scan.jpg")
        #expect(ImageStep.fileName("IMG_0001.JPG", extension: "jpg") == nil)
        #expect(ImageStep.fileName("photo.jpeg", extension: "jpg") == nil)
        #expect(ImageStep.fileName("photo.heif", extension: "heic") == nil)
        #expect(ImageStep.fileName("no-extension", extension: "webp") == "no-extension.webp")
        #expect(ImageStep.fileName("a.b.tiff", extension: "jpg") == "a.b.jpg")
    }

    @Test func theHelpersWordsAreKeptAndLibvipsWarningsDropped() {
        let failure = HelperProcess.Failure.exited(
            status: 2,
            message:
                "(process:1): VIPS-WARNING **: error in tile 0 x 8\nuploadd-image: cannot decode the image: VipsJpeg: Premature end of input file"
        )
        #expect(ImageStep.message(of: failure) == "cannot decode the image: VipsJpeg: Premature end of input file")
        #expect(ImageStep.message(of: .timedOut(.seconds(300))).contains("took longer than 300 s"))
        #expect(
            ImageStep.message(of: .couldNotStart("/opt/uploadd-image: No such file or directory"))
                .contains("installed next to uploadd"))
    }
}
