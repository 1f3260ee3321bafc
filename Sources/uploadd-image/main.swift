// uploadd-image: prepares one image for upload, for uploadd, in a process of its own.
//
//   uploadd-image max=2048 quality=75 format=jpeg|webp|keep max-bytes=N metadata=keep|strip-gps|strip
//                 max-pixels=N untrusted-loaders=0|1   < image > prepared
//
// stdin is the image, stdout gets the prepared image. On success the last line on stderr is a
// JSON object: {"image": false} when stdin is not an image this build reads (nothing written), else
// its sizes and format. On failure stderr says why and the exit status is 2 (the image), 3 (its
// output could not be written: a full disk) or 64 (the arguments). Before it reads a byte it gives
// up the network and the right to run programs (seccomp), and the right to write files anywhere
// but the temporary folder and to signal uploadd (Landlock, where the kernel has it); uploadd
// started it under memory and CPU limits: what a hostile image can do ends with this process.
//
// For tests only: probe-write=PATH and probe-signal=PID try, once confined, to create PATH and to
// signal PID (signal 0), print {"landlock": ABI, "write": "...", "signal": "..."} and exit.
import CImagePrep
import Glibc

func printToStderr(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

func fail(_ message: String, status: Int32) -> Never {
    printToStderr("uploadd-image: \(message)")
    exit(status)
}

func text<T>(_ field: T) -> String {
    withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

var probeWrite: String?
var probeSignal: pid_t?
var options = UploaddImageOptions(
    max_side: 0, quality: 75, format: UPLOADD_FORMAT_JPEG, max_bytes: 0, metadata: UPLOADD_METADATA_KEEP,
    max_pixels: 200_000_000, allow_untrusted: 0)
for argument in CommandLine.arguments.dropFirst() {
    let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2 else { fail("'\(argument)' is not NAME=VALUE", status: 64) }
    let (name, value) = (parts[0], parts[1])
    func number(_ range: ClosedRange<Int64>) -> Int64 {
        guard let number = Int64(value), range.contains(number) else { fail("bad \(name): \(value)", status: 64) }
        return number
    }
    switch name {
    case "max": options.max_side = Int32(number(0...65_535))
    case "quality": options.quality = Int32(number(1...100))
    case "max-bytes": options.max_bytes = number(0...Int64.max)
    case "max-pixels": options.max_pixels = number(1...Int64.max)
    case "untrusted-loaders": options.allow_untrusted = Int32(number(0...1))
    case "probe-write": probeWrite = value
    case "probe-signal": probeSignal = pid_t(number(1...Int64(Int32.max)))
    case "format":
        switch value {
        case "jpeg": options.format = UPLOADD_FORMAT_JPEG
        case "webp": options.format = UPLOADD_FORMAT_WEBP
        case "keep": options.format = UPLOADD_FORMAT_KEEP
        default: fail("bad format: \(value)", status: 64)
        }
    case "metadata":
        switch value {
        case "keep": options.metadata = UPLOADD_METADATA_KEEP
        case "strip-gps": options.metadata = UPLOADD_METADATA_STRIP_GPS
        case "strip": options.metadata = UPLOADD_METADATA_STRIP
        default: fail("bad metadata: \(value)", status: 64)
        }
    default: fail("unknown option \(name)", status: 64)
    }
}

if uploadd_image_forbid_network() != 0 {
    fail("cannot give up the network (seccomp): errno \(errno)", status: 70)
}
// libvips loads its dynamic format modules (HEIF, JPEG XL, PDF, OpenSlide, ImageMagick) when it
// starts. Only HEIF (an ISO-BMFF file: "ftyp" at byte 4) is a photo format among them: for any
// other file none is loaded (VIPSHOME, libvips's install prefix, pointed where there are none).
// 23 ms less per photo, and ImageMagick, poppler and OpenSlide never in the process that reads
// a stranger's bytes.
var head = [UInt8](repeating: 0, count: 12)
let headLength = head.withUnsafeMutableBytes { pread(0, $0.baseAddress, 12, 0) }
let isHEIF = headLength >= 8 && head[4..<8].elementsEqual("ftyp".utf8)
if !isHEIF && options.allow_untrusted == 0 {
    setenv("VIPSHOME", "/nonexistent/uploadd-image-without-modules", 1)
}

var message = [CChar](repeating: 0, count: 1024)
var messageText: String { String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
// One worker thread: uploadd runs one helper per CPU at once (max_preparations).
if uploadd_image_start(CommandLine.arguments[0], 1, options.allow_untrusted, &message, message.count) != 0 {
    fail(messageText, status: 70)
}
// libvips's temporary files (a big image turned upright) go where GLib puts them.
let temporaryFolder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
let landlock = uploadd_image_confine(temporaryFolder)
if landlock < 0 { fail("cannot confine writes to \(temporaryFolder) (Landlock): errno \(errno)", status: 70) }

if probeWrite != nil || probeSignal != nil {
    func outcome(_ result: Int32) -> String { result >= 0 ? "ok" : String(cString: strerror(errno)) }
    let wrote = probeWrite.map { path -> String in
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
        return outcome(fd)
    }
    let signaled = probeSignal.map { outcome(kill($0, 0)) }
    printToStderr(
        "{\"landlock\": \(landlock), \"write\": \"\(wrote ?? "-")\", \"signal\": \"\(signaled ?? "-")\"}")
    exit(0)
}
var result = UploaddImageResult()
switch uploadd_image_prepare(0, 1, &options, &result, &message, message.count) {
case 0: break
case -2: fail(messageText, status: 3)
default: fail(messageText, status: 2)
}

if result.is_image == 0 {
    printToStderr("{\"image\": false}")
} else {
    printToStderr(
        "{\"image\": true, \"width\": \(result.width), \"height\": \(result.height), "
            + "\"original_width\": \(result.original_width), \"original_height\": \(result.original_height), "
            + "\"quality\": \(result.quality), \"format\": \"\(text(result.format))\", "
            + "\"extension\": \"\(text(result.extension))\", \"mime\": \"\(text(result.mime))\", "
            + "\"loader\": \"\(text(result.loader))\", \"size\": \(result.size)}")
}
exit(0)
