// uploadd-image: prepares one image for upload, for uploadd, in a process of its own.
//
//   uploadd-image max=2048 quality=75 format=jpeg|webp|keep max-bytes=N metadata=keep|strip-gps|strip
//                 max-pixels=N untrusted-loaders=0|1   < image > prepared
//
// stdin is the image, stdout gets the prepared image. On success the last line on stderr is a
// JSON object: {"image": false} when stdin is not an image this build reads (nothing written), else
// its sizes and format; both say what sandbox it ran in ("sandbox"). On failure stderr says why
// and the exit status is 2 (the image), 3 (its output could not be written: a full disk) or 64
// (the arguments).
//
// Before it reads a byte of the image it enters its sandbox (CImagePrep.h has each part): user
// and network namespaces of its own, no supplementary groups where the kernel lets it shed them;
// a seccomp allow-list (no network, no programs, nothing aimed at another process); once libvips
// has started, Landlock: reading only library and data folders, writing only in $TMPDIR, the
// private folder uploadd made for this run (none without TMPDIR), no signal to uploadd. uploadd
// started it under memory and CPU limits: what a hostile image can do ends with this process.
//
// For tests only, the probe mode: with any of probe-read=FILE, probe-read-folder=FOLDER,
// probe-write=FILE, probe-pid=PID (uploadd's), probe-address=N (in PID's memory), it enters the
// same sandbox, then tries each thing a hostile image's code could want and prints one line each,
// "probe NAME: ok" or "probe NAME: EPERM" (probes.c), then "groups: ..." and "namespaces: ...",
// and exits 0 without reading stdin.
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

var probeRead: String?
var probeReadFolder: String?
var probeWrite: String?
var probePID: pid_t?
var probeAddress: UInt64 = 0
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
    case "probe-read": probeRead = value
    case "probe-read-folder": probeReadFolder = value
    case "probe-write": probeWrite = value
    case "probe-pid": probePID = pid_t(number(1...Int64(Int32.max)))
    case "probe-address": probeAddress = UInt64(number(0...Int64.max))
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

let probing = probeRead != nil || probeReadFolder != nil || probeWrite != nil || probePID != nil

// First, while the process has one thread (unshare refuses a user namespace to a threaded one).
var isolation = UploaddIsolation()
uploadd_image_isolate(&isolation)
if uploadd_image_restrict_syscalls() != 0 {
    fail(
        "cannot restrict its system calls (seccomp): \(String(cString: strerror(errno))); "
            + "uploadd-image needs a kernel with seccomp filters (CONFIG_SECCOMP_FILTER)", status: 70)
}
// libvips loads its dynamic format modules (HEIF, JPEG XL, PDF, OpenSlide, ImageMagick) when it
// starts. Only HEIF (an ISO-BMFF file: "ftyp" at byte 4) is a photo format among them: for any
// other file none is loaded (VIPSHOME, libvips's install prefix, pointed where there are none).
// 23 ms less per photo, and ImageMagick, poppler and OpenSlide never in the process that reads
// a stranger's bytes.
var head = [UInt8](repeating: 0, count: 12)
let headLength = probing ? 0 : head.withUnsafeMutableBytes { pread(0, $0.baseAddress, 12, 0) }
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
// libvips's temporary files (a big image turned upright) and ORC's code buffer go where GLib puts
// them: $TMPDIR, a private folder uploadd made for this run. Without one, nowhere (not /tmp,
// which every process of the user shares).
let temporaryFolder = getenv("TMPDIR").map { String(cString: $0) }
let landlock = uploadd_image_confine(temporaryFolder)
if landlock == -2 {
    fail(
        "libvips started threads before Landlock could bind them (a newer libvips than this uploadd-image knows); "
            + "uploadd-image must apply Landlock earlier for it", status: 70)
}
if landlock < 0 {
    let folder = temporaryFolder ?? "no folder"
    fail(
        "cannot confine its files to \(folder) (Landlock): \(String(cString: strerror(errno))); "
            + "TMPDIR must name an existing folder", status: 70)
}

/// What the sandbox came to, for uploadd's debug log: the parts the kernel may refuse.
var sandbox: String {
    var parts = [landlock > 0 ? "Landlock ABI \(landlock)" : "no Landlock (kernel)"]
    if isolation.namespaces == 0 {
        parts.append(
            "no namespaces of its own (unshare: \(String(cString: uploadd_image_errno_name(isolation.unshare_errno))))")
    } else if isolation.map_errno != 0 {
        parts.append("own namespaces, IDs unmapped (\(String(cString: uploadd_image_errno_name(isolation.map_errno))))")
    } else {
        parts.append("own user and network namespaces")
    }
    parts.append(isolation.groups_dropped != 0 ? "supplementary groups dropped" : "supplementary groups kept")
    return parts.joined(separator: ", ")
}

if probing {
    printToStderr("sandbox: \(sandbox)")
    // What it runs as, before the probes (setgroups and unshare among them) could change it.
    var groups = [gid_t](repeating: 0, count: 256)
    let count = getgroups(Int32(groups.count), &groups)
    printToStderr("groups: \(groups.prefix(Int(max(count, 0))).map(String.init).joined(separator: " "))")
    // Inode numbers, which stat gives under Landlock too.
    func namespace(_ kind: String) -> String {
        var info = stat()
        return stat("/proc/self/ns/\(kind)", &info) == 0 ? "\(info.st_ino)" : "?"
    }
    printToStderr("namespaces: user \(namespace("user")) net \(namespace("net"))")
    func probe(_ name: String, path: String? = nil, as label: String? = nil) {
        let code = uploadd_image_probe(name, path, probePID ?? 0, probeAddress)
        printToStderr("probe \(label ?? name): \(String(cString: uploadd_image_errno_name(code)))")
    }
    if let probeRead { probe("read-file", path: probeRead) }
    if let probeReadFolder { probe("read-folder", path: probeReadFolder) }
    if let probeWrite { probe("write-file", path: probeWrite) }
    if let temporaryFolder { probe("write-file", path: temporaryFolder + "/uploadd-probe", as: "write-temporary") }
    if probePID != nil {
        for name in ["kill", "prlimit", "setpriority", "sched_setaffinity", "ioprio_set", "process_vm_readv", "ptrace"]
        {
            probe(name)
        }
    }
    for name in ["socket", "connect", "io_uring_setup", "setgroups", "unshare"] { probe(name) }
    probe("execve")  // last: where it is let through, this process becomes /bin/true
    exit(0)
}
var result = UploaddImageResult()
switch uploadd_image_prepare(0, 1, &options, &result, &message, message.count) {
case 0: break
case -2: fail(messageText, status: 3)
default: fail(messageText, status: 2)
}

if result.is_image == 0 {
    printToStderr("{\"image\": false, \"sandbox\": \"\(sandbox)\"}")
} else {
    printToStderr(
        "{\"image\": true, \"width\": \(result.width), \"height\": \(result.height), "
            + "\"original_width\": \(result.original_width), \"original_height\": \(result.original_height), "
            + "\"quality\": \(result.quality), \"format\": \"\(text(result.format))\", "
            + "\"extension\": \"\(text(result.extension))\", \"mime\": \"\(text(result.mime))\", "
            + "\"loader\": \"\(text(result.loader))\", \"size\": \(result.size), \"sandbox\": \"\(sandbox)\"}")
}
exit(0)
