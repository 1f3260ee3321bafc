import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// Image shrinking (`--image SPEC`): libvips in the `uploadd-image` helper, one process per image,
/// under limits, with no network. What is not an image is sent as it is.
struct ImageStep: PreparationStep {
    let name = "image"
    /// The helper: next to uploadd's own executable (where `make install` puts both).
    var helper = ImageStep.helperNextToExecutable
    /// Address space for the helper: libvips's thumbnail path needs far less (under 150 MiB for a
    /// 50-megapixel JPEG); a decoder that wants more fails its job.
    var memoryLimit: Int64 = 1 << 30
    var cpuSeconds = 120
    var timeout: Duration = .seconds(300)

    static var helperNextToExecutable: String {
        let executable = FileOps.linkTarget("/proc/self/exe").flatMap { $0.isEmpty ? nil : $0 } ?? "uploadd"
        return (executable as NSString).deletingLastPathComponent + "/uploadd-image"
    }

    func validate(options: String) throws(PreparationFailure) {
        do {
            try ImageSpec.checkNew(options)
            _ = try ImageSpec.parse(options)
        } catch {
            throw PreparationFailure(error.description)
        }
    }

    /// What the helper reports on its last line of stderr.
    struct Report: Decodable {
        var image: Bool
        var width: Int?
        var height: Int?
        var original_width: Int?
        var original_height: Int?
        var quality: Int?
        var format: String?
        var `extension`: String?
        var mime: String?
        /// What its sandbox came to where the kernel has a say ("Landlock ABI 7, own user and
        /// network namespaces, supplementary groups kept").
        var sandbox: String?
    }

    /// The helper as every image runs it: its limits, its private temporary folder beneath
    /// `temporaryRoot`; the sandbox is its own doing (uploadd-image/main.swift).
    func helperProcess(arguments: [String], temporaryRoot: String) -> HelperProcess {
        var process = HelperProcess(
            executable: helper, arguments: arguments, memoryLimit: memoryLimit, cpuSeconds: cpuSeconds,
            timeout: timeout)
        process.temporaryRoot = temporaryRoot
        return process
    }

    /// The sandbox the helper last reported, logged (debug) when it changes: once per daemon,
    /// and again if the kernel's answer changes (a sysctl turned user namespaces off).
    private static let lastSandbox = Mutex<String?>(nil)

    private static func noteSandbox(_ sandbox: String?) {
        guard let sandbox else { return }
        let changed = lastSandbox.withLock { last in
            defer { last = sandbox }
            return last != sandbox
        }
        if changed { Log.debug("image helper's sandbox: \(sandbox)") }
    }

    func prepare(_ input: PreparationInput, into output: Int32, options: String) async throws -> PreparationOutcome {
        let spec: ImageSpec
        do { spec = try ImageSpec.parse(options) } catch { throw PreparationFailure(error.description) }
        lseek(input.fd, 0, SEEK_SET)  // the helper reads its stdin from the start
        let process = helperProcess(arguments: spec.helperArguments, temporaryRoot: input.temporaryRoot)
        let report: Report
        var usage: [KeyValue] = []
        do {
            let outcome = try await process.run(input: input.fd, output: output)
            let said = outcome.stderr
            usage = [
                KeyValue(name: "helper_max_rss_kib", value: "\(outcome.maxResidentKiB)"),
                KeyValue(name: "helper_cpu_ms", value: "\(Int(outcome.cpuSeconds * 1000))"),
            ]
            guard let line = said.split(separator: "\n").last,
                let decoded = try? JSONDecoder().decode(Report.self, from: Data(line.utf8))
            else { throw PreparationFailure("image: the helper gave no report (\(said.suffix(200)))") }
            report = decoded
            Self.noteSandbox(decoded.sandbox)
        } catch let failure as HelperProcess.Failure {
            let message = Self.message(of: failure)
            // Its output could not be written (a full cache): not the image's fault, so never the
            // original instead (`on-error=original` would send it unshrunk, GPS and all), but a
            // retry once there is room.
            if case .exited(status: Self.outputNotWritten, _) = failure {
                let noSpace = message.contains(String(cString: strerror(ENOSPC)))
                throw TransferFailure.io("image preparation: \(message)", noSpace: noSpace, retryable: true)
            }
            // Its temporary folder is in the cache too: there a full disk fails the helper in
            // other ways, libvips's temporary image cut short, or SIGBUS where ORC's code buffer
            // (a file mapped in TMPDIR) found no room. Whatever it said then, the disk is why.
            if Self.isFull(input.temporaryRoot) {
                throw TransferFailure.io(
                    "image preparation: no room left in the cache for the helper's temporary files (it said: \(message))",
                    noSpace: true, retryable: true)
            }
            guard spec.onError == .original else { throw PreparationFailure(message) }
            return PreparationOutcome(details: [KeyValue(name: "image_error", value: message)], unchanged: true)
        }
        guard report.image, let width = report.width, let height = report.height else {
            return PreparationOutcome(
                details: [KeyValue(name: "image", value: "not an image; sent as it is")] + usage, unchanged: true)
        }
        let resized = report.original_width.map { $0 != width } ?? false
        if spec.asksOnlyToKeepFormat, !resized, let larger = Self.largerThanInput(output, input.fd) {
            return PreparationOutcome(
                details: [KeyValue(name: "image", value: "sent as it is: \(larger)")] + usage, unchanged: true)
        }
        var details = [
            KeyValue(name: "width", value: "\(width)"), KeyValue(name: "height", value: "\(height)"),
        ]
        if let originalWidth = report.original_width, let originalHeight = report.original_height {
            details.append(KeyValue(name: "original_width", value: "\(originalWidth)"))
            details.append(KeyValue(name: "original_height", value: "\(originalHeight)"))
        }
        if let format = report.format { details.append(KeyValue(name: "format", value: format)) }
        if let quality = report.quality { details.append(KeyValue(name: "quality", value: "\(quality)")) }
        details += usage
        return PreparationOutcome(
            fileName: Self.fileName(input.fileName, extension: report.extension), contentType: report.mime,
            details: details)
    }

    /// What to say when the prepared file `output` is larger than the source `input`, or nil.
    static func largerThanInput(_ output: Int32, _ input: Int32) -> String? {
        var prepared = stat()
        var original = stat()
        guard fstat(output, &prepared) == 0, fstat(input, &original) == 0, prepared.st_size > original.st_size
        else { return nil }
        return "written again it was larger (\(ByteSize.format(Int64(prepared.st_size)))"
            + " > \(ByteSize.format(Int64(original.st_size))))"
    }

    /// Whether the file system under `path` has no room left (under 64 KiB, as the helper counts
    /// for its output).
    static func isFull(_ path: String) -> Bool {
        guard let available = FileOps.availableBytes(at: path) else { return false }
        return available < 64 << 10
    }

    /// `IMG_0001.HEIC` → `IMG_0001.jpg`; a name that already says the format keeps its spelling.
    static func fileName(_ name: String, extension newExtension: String?) -> String? {
        guard let newExtension, !newExtension.isEmpty else { return nil }
        let current = (name as NSString).pathExtension.lowercased()
        let same: Set<String> =
            switch newExtension {
            case "jpg": ["jpg", "jpeg", "jpe"]
            case "tif": ["tif", "tiff"]
            case "heic": ["heic", "heif"]
            default: [newExtension]
            }
        if same.contains(current) { return nil }
        let base = current.isEmpty ? name : (name as NSString).deletingPathExtension
        return "\(base).\(newExtension)"
    }

    /// The helper's own words ("uploadd-image: cannot decode the image: …") without libvips's
    /// warnings around them; a crash or a limit as HelperProcess says it.
    /// The helper's exit status when its output could not be written (`uploadd-image/main.swift`).
    static let outputNotWritten: Int32 = 3

    static func message(of failure: HelperProcess.Failure) -> String {
        if case .couldNotStart(let why) = failure {
            return "the image helper could not start (\(why)); it is installed next to uploadd (make install)"
        }
        if case .exited(_, let text) = failure,
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("uploadd-image: ") })
        {
            return String(line.dropFirst("uploadd-image: ".count))
        }
        return "\(failure)"
    }
}
