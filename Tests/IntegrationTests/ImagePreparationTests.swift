import Foundation
import Testing
import UploadCore
import UploadWire

/// `--image`: libvips in the uploadd-image helper, against images made for the test, through a
/// real daemon to real servers.
@Suite(.serialized)
final class ImagePreparationTests {
    let servers: TestServers
    let daemon: DaemonProcess
    let files: URL
    let out: URL

    init() throws {
        servers = try TestServers.load()
        files = try TestPaths.scratch("image-files")
        out = try TestPaths.scratch("image-out")
        var config = "[daemon]\ntransfers = 2\nretry_base_delay = 100\n\n"
        if let s3 = servers.s3 {
            let secret = files.appendingPathComponent("s3-secret").path
            try "\(s3.secretKey)\n".write(toFile: secret, atomically: true, encoding: .utf8)
            config += """
                [remote photos-s3]
                protocol = s3
                url = s3://\(s3.bucket)/images/
                endpoint = \(s3.endpoint)
                region = \(s3.region)
                access_key_id = \(s3.accessKey)
                secret_access_key_file = \(secret)
                image = max=800

                """
        }
        daemon = try DaemonProcess(name: "images", config: config)
        try daemon.start()
    }

    deinit { daemon.stop() }

    func path(_ name: String) -> String { files.appendingPathComponent(name).path }

    /// Adds `source` to the file:// destination with `--image spec`, and waits for its end.
    func prepare(_ source: String, _ spec: String) throws -> JobInfo {
        let id = try daemon.add([source], to: out.absoluteString + "/", ["--image", spec])[0]
        return try daemon.waitFor(id, timeout: 180)
    }

    /// The helper runs in a sandbox as far as the kernel allows (ImageSandboxTests probes it
    /// from inside) and says which: the daemon logs that. Its private temporary folder is in the
    /// cache, and gone after the job. A photo turned upright at full size past libvips's disc
    /// threshold does use it (a temporary image there), which Landlock must allow.
    @Test func theHelperRunsSandboxedWithATemporaryFolderRemovedAfterIt() throws {
        let kernel = try Command.run(
            "/usr/bin/python3",
            ["-c", "import ctypes; print(max(0, ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)))"])
        let abi = try #require(Int(kernel.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(kernel)")
        let photo = path("turned-full.jpg")
        // 7000x5000: 105 MB of pixels, past the 100 MB libvips keeps in memory.
        try TestImages.phonePhoto(at: photo, width: 7000, height: 5000)
        let job = try prepare(photo, "quality=80")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.prepared?.details["width"] == "5000", "turned upright: \(String(describing: job.prepared))")
        let temporary = daemon.cacheDirectory + "/helper-tmp"
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "nothing left in \(temporary)")
        let logged = daemon.log(tail: 400).split(separator: "\n").last { $0.contains("image helper's sandbox:") }
        let line = try #require(logged, "the daemon logs the helper's sandbox (debug)")
        print("Landlock ABI \(abi) here; \(line)")
        #expect(line.contains(abi > 0 ? "Landlock ABI \(abi)" : "no Landlock"), "\(line)")
    }

    @Test func aTurnedPhotoWithAPositionComesOutUprightCappedAndWithoutIt() throws {
        let photo = path("IMG_0001.JPG")
        try TestImages.phonePhoto(at: photo)
        let job = try prepare(photo, "max=2048,strip-gps")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        let sent = out.appendingPathComponent("IMG_0001.JPG").path
        let size = try #require(try TestImages.dimensions(sent))
        #expect(size.width == 1536 && size.height == 2048, "turned upright, longest side 2048: \(size)")
        let tags = try TestImages.tags(sent)
        #expect(tags["GPSLatitude"] == nil && tags["GPSLongitude"] == nil, "the position is gone: \(tags)")
        #expect(tags["DateTimeOriginal"] == "2024:05:01 12:34:56", "the capture time is kept")
        #expect(tags["Make"] == "TestCam" && tags["Model"] == "Phone 1", "the camera is kept")
        #expect(tags["Orientation"] == nil || tags["Orientation"] == "1", "no turn left to apply: \(tags)")
        let prepared = try #require(job.prepared)
        #expect(job.bytesTotal == prepared.size)
        #expect(prepared.originalSize == Int64(try FileManager.default.attributesOfItem(atPath: photo)[.size] as! Int))
        #expect(prepared.details["width"] == "1536" && prepared.details["original_width"] == "4000")
        #expect(try Command.sha256(sent) == prepared.sha256)
        print(
            "measured: phone photo 4000x3000 q95 \(prepared.originalSize) bytes -> 1536x2048 q75 \(prepared.size) bytes"
        )

        // Without strip-gps, EXIF keeps the position too.
        let again = path("IMG_0002.jpg")
        try FileManager.default.copyItem(atPath: photo, toPath: again)
        #expect(try prepare(again, "max=1024").state == .completed)
        #expect(try TestImages.tags(out.appendingPathComponent("IMG_0002.jpg").path)["GPSLatitude"] == "48.8583")
    }

    @Test func stripRemovesAllMetadata() throws {
        let photo = path("private.jpg")
        try TestImages.phonePhoto(at: photo, width: 1200, height: 900)
        let job = try prepare(photo, "max=600,strip")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        let tags = try TestImages.tags(out.appendingPathComponent("private.jpg").path)
        #expect(tags["Make"] == nil && tags["DateTimeOriginal"] == nil && tags["GPSLatitude"] == nil, "\(tags)")
        let size = try #require(try TestImages.dimensions(out.appendingPathComponent("private.jpg").path))
        #expect(size.width == 450 && size.height == 600, "still turned upright: \(size)")
    }

    /// libvips's shrink-on-load path keeps the helper small whatever the photo's size.
    @Test func aFiftyMegapixelPhotoIsPreparedInUnder150MiB() throws {
        let photo = path("fifty.jpg")
        try TestImages.noisyJPEG(at: photo, width: 8660, height: 5774, sigma: 30)
        let job = try prepare(photo, "max=2048,quality=75")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        let kib = try #require(job.prepared?.details["helper_max_rss_kib"].flatMap { Int($0) })
        #expect(kib < 150 << 10, "the helper's peak RSS: \(kib) KiB")
        print(
            "measured: 50-megapixel JPEG to max=2048: helper peak RSS \(kib / 1024) MiB, \(job.prepared?.details["helper_cpu_ms"] ?? "?") ms CPU"
        )
    }

    @Test func aSizeGoalIsMetOnANoisy24MegapixelPhoto() throws {
        let photo = path("noisy24.jpg")
        try TestImages.noisyJPEG(at: photo, width: 6000, height: 4000)
        let job = try prepare(photo, "max-bytes=300K")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        let prepared = try #require(job.prepared)
        #expect(prepared.size <= 300 << 10, "\(prepared.size) bytes")
        #expect(try Command.sha256(out.appendingPathComponent("noisy24.jpg").path) == prepared.sha256)
        print(
            "measured: noisy 6000x4000 q95 \(prepared.originalSize) bytes -> \(prepared.details["width"] ?? "?")x\(prepared.details["height"] ?? "?") quality \(prepared.details["quality"] ?? "?"): \(prepared.size) bytes (goal 307200)"
        )
        // A goal the image cannot meet is reported, with what the smallest try gave: sharp noise that
        // stays noise down to the smallest size tried (256 pixels).
        let sharp = path("sharp.jpg")
        try TestImages.noisyJPEG(at: sharp, width: 300, height: 300, sigma: 90)
        let tiny = try prepare(sharp, "max-bytes=1K")
        #expect(tiny.state == .failed)
        #expect(
            tiny.error?.message.contains("cannot make the image fit in 1024 bytes") == true,
            "\(String(describing: tiny.error))")
    }

    @Test func aPNGWithAlphaBecomesAJPEGFlattenedOnWhite() throws {
        let png = path("logo.png")
        try TestImages.translucentPNG(at: png)
        let job = try prepare(png, "quality=90")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.prepared?.fileName == "logo.jpg")
        let sent = out.appendingPathComponent("logo.jpg").path
        let header = try TestImages.header(sent)
        #expect(header.contains("3 bands, srgb, jpegload"), "\(header)")
        let pixel = try TestImages.pixel(sent, x: 100, y: 100)
        // 30% red over white: (255, 178, 178), give or take JPEG's rounding.
        #expect(
            pixel.count == 3 && abs(pixel[0] - 255) <= 3 && abs(pixel[1] - 178) <= 4 && abs(pixel[2] - 178) <= 4,
            "\(pixel)")
    }

    @Test func aHEICPhotoBecomesAJPEGNamedSo() throws {
        let heic = path("IMG_0003.HEIC")
        try TestImages.heic(at: heic)
        let job = try prepare(heic, "max=1000")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.destination.hasSuffix("/"))
        #expect(job.result?.url?.hasSuffix("/IMG_0003.jpg") == true, "\(String(describing: job.result))")
        let sent = out.appendingPathComponent("IMG_0003.jpg").path
        let header = try TestImages.header(sent)
        #expect(header.contains("1000x750"), "\(header)")
        #expect(job.prepared?.details["format"] == "jpeg")
        #expect(job.prepared?.contentType == "image/jpeg")
    }

    @Test func whatIsNotAnImageGoesByteForByte() throws {
        let data = path("notes.pdf")
        try makeRandomFile(at: data, size: 300_000)
        let job = try prepare(data, "max=100")
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(try Command.sha256(out.appendingPathComponent("notes.pdf").path) == Command.sha256(data))
        #expect(job.prepared?.details["image"]?.contains("not an image") == true)
        #expect(job.bytesTotal == 300_000)
    }

    @Test func aTruncatedJPEGFailsClearlyOrGoesAsItIsWhenAsked() throws {
        let photo = path("whole.jpg")
        try TestImages.noisyJPEG(at: photo, width: 1600, height: 1200)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let cut = path("cut.jpg")
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: cut))
        let job = try prepare(cut, "max=800")
        #expect(job.state == .failed)
        #expect(job.error?.code == "source")
        #expect(
            job.error?.message.hasPrefix("image preparation of \(cut): cannot ") == true
                && job.error?.message.hasSuffix("VipsJpeg: Premature end of input file") == true,
            "\(String(describing: job.error))")
        let original = path("cut-original.jpg")
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: original))
        let kept = try prepare(original, "max=800,on-error=original")
        #expect(kept.state == .completed, "\(String(describing: kept.error))")
        #expect(try Command.sha256(out.appendingPathComponent("cut-original.jpg").path) == Command.sha256(original))
        #expect(kept.prepared?.details["image_error"]?.contains("Premature end") == true)
    }

    @Test func aDecompressionBombFailsWithinItsLimitsWhileAnotherJobUploads() throws {
        let big = path("steady.bin")
        try makeRandomFile(at: big, size: 24 << 20)
        let slow = try DaemonProcess(name: "images-bomb", config: "[daemon]\ntransfers = 2\nrate_limit = 8M\n")
        try slow.start()
        defer { slow.stop() }
        let steady = try slow.add([big], to: "\(servers.nginxURL)/dav/images/", ["--protocol", "put"])[0]
        #expect(eventually(timeout: 20) { ((try? slow.job(steady))?.bytesSent ?? 0) > 0 })
        let bomb = path("bomb.png")
        try TestImages.bombPNG(at: bomb)
        let started = Date()
        let refused = try slow.add([bomb], to: out.absoluteString + "/", ["--image", "max=1024"])[0]
        let job = try slow.waitFor(refused, timeout: 60)
        #expect(job.state == .failed)
        #expect(
            job.error?.message.contains("declares 100000x100000 pixels") == true, "\(String(describing: job.error))")
        #expect(Date().timeIntervalSince(started) < 10, "refused before decoding")
        // (What the helper's memory, CPU and time limits do to a decoder that gets past this check
        // is HelperProcessTests' part: a crash, a busy loop, a hang, an allocation over the limit.)
        #expect(try slow.job(steady).state != .failed)
        #expect(try slow.waitFor(steady, timeout: 120).state == .completed, "the other upload went on")
        #expect(try slow.ctl(["status"]).status == 0, "the daemon still answers")
    }

    @Test func aKilledDaemonResumesAPreparedImageWithTheSameBytes() throws {
        let photo = path("resume-\(UUID().uuidString.prefix(6)).jpg")
        try TestImages.noisyJPEG(at: photo, width: 4000, height: 3000)
        let slow = try DaemonProcess(name: "images-resume", config: "[daemon]\ntransfers = 1\nrate_limit = 2M\n")
        try slow.start()
        defer { slow.stop() }
        // quality=95 at full size: a prepared file of several MB, several seconds on the wire.
        let id = try slow.add(
            [photo], to: servers.tusURL, ["--protocol", "tus", "--chunk-size", "1M", "--image", "quality=95"])[0]
        #expect(eventually(timeout: 60) { ((try? slow.job(id))?.bytesAcked ?? 0) >= Int64(2 << 20) })
        let before = try #require(try slow.job(id).prepared)
        slow.crash()
        try slow.start()
        let job = try slow.waitFor(id, timeout: 180)
        #expect(job.state == .completed, "\(String(describing: job.error))")
        #expect(job.prepared == before, "the journaled file was sent, not a new one")
        #expect(job.history?.filter { $0.message.hasPrefix("prepared:") }.count == 1)
        let url = try #require(job.result?.url)
        let stored = "\(servers.tusDirectory)/\((url as NSString).lastPathComponent)"
        #expect(try Command.sha256(stored) == before.sha256, "the server has exactly the prepared bytes")
        print(
            "measured: prepared \(before.originalSize) -> \(before.size) bytes, resumed after a kill at 2 MiB acknowledged"
        )
    }

    enum Carrier: String, CaseIterable, Sendable {
        case put, post, tus, s3, chunked, file
    }

    @Test(arguments: Carrier.allCases)
    func everyProtocolCarriesAPreparedImage(_ carrier: Carrier) throws {
        let name = "carried-\(carrier.rawValue)-\(UUID().uuidString.prefix(6)).png"
        let source = path(name)
        try TestImages.translucentPNG(at: source)
        let sentName = (name as NSString).deletingPathExtension + ".jpg"
        let image = ["--image", "max=200"]
        let id: JobID
        var receiver: ReceiverProcess?
        defer { receiver?.stop() }
        switch carrier {
        case .put:
            id = try daemon.add([source], to: "\(servers.nginxURL)/dav/images/", ["--protocol", "put"] + image)[0]
        case .post:
            id = try daemon.add(
                [source], to: "\(servers.receiverURL)/form",
                ["--protocol", "post", "--header", servers.receiverAuthorization] + image)[0]
        case .tus:
            id = try daemon.add([source], to: servers.tusURL, ["--protocol", "tus"] + image)[0]
        case .s3:
            guard servers.s3 != nil else { throw TestServers.Missing(key: "UPLOADD_TEST_S3_ENDPOINT") }
            // The remote's own `image = max=800` applies: no --image here.
            id = try daemon.add([source], to: "photos-s3:")[0]
        case .chunked:
            let own = try ReceiverProcess(name: "image-chunked")
            receiver = own
            id = try daemon.add([source], to: "\(own.url)/upload", ["--protocol", "chunked"] + own.tokenField + image)[
                0]
        case .file:
            id = try daemon.add([source], to: out.absoluteString + "/", image)[0]
        }
        let job = try daemon.waitFor(id, timeout: 120)
        #expect(job.state == .completed, "\(carrier): \(String(describing: job.error))")
        let prepared = try #require(job.prepared, "\(carrier)")
        #expect(prepared.fileName == sentName)
        let stored: String
        switch carrier {
        case .put: stored = "\(servers.nginxRoot)/dav/images/\(sentName)"
        case .post: stored = "\(servers.receiverDirectory)/\(sentName)"
        case .tus: stored = "\(servers.tusDirectory)/\(((job.result?.url ?? "") as NSString).lastPathComponent)"
        case .chunked: stored = receiver!.storedFile(resultURL: job.result?.url ?? "")
        case .file: stored = out.appendingPathComponent(sentName).path
        case .s3:
            #expect(try servers.s3?.sha256(of: "images/\(sentName)") == prepared.sha256)
            #expect(prepared.details["width"] == "400", "the remote's max=800 does not upscale")
            return
        }
        #expect(try Command.sha256(stored) == prepared.sha256, "\(carrier): \(stored)")
        if carrier == .post {
            let answer = try JSONSerialization.jsonObject(with: Data((job.result?.body ?? "").utf8)) as? [String: Any]
            #expect(answer?["content_type"] as? String == "image/jpeg", "the part's type follows the format")
        }
    }
}
