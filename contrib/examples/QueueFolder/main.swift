// Queues every file of a folder with uploadd and prints progress until the batch has ended:
// the Swift client library (`UploadClient`) in 60 lines.
//
//     swift run uploadd-example-queue-folder ~/Pictures/trip nas:2026/
//
// Exit status 0 when every file was uploaded, 1 otherwise.
import Foundation
import UploadClient
import UploadWire

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let folder = arguments.first, let destination = arguments.last else {
    FileHandle.standardError.write(Data("usage: uploadd-example-queue-folder FOLDER DESTINATION/\n".utf8))
    exit(64)
}

// The files, with their folders kept under the destination (hidden ones and symlinks skipped).
// Each goes with the identity its lstat found: if someone renames a symlink (to a private file of
// yours) over it before uploadd opens it, uploadd refuses it instead of uploading that file.
let root = URL(fileURLWithPath: folder).standardizedFileURL
var files: [AddParams] = []
let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
while let url = walk?.nextObject() as? URL {
    var info = stat()
    guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
    let inside = url.deletingLastPathComponent().path.dropFirst(root.deletingLastPathComponent().path.count + 1)
    let encoded = inside.split(separator: "/").map {
        String($0).addingPercentEncoding(
            withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#"))) ?? String($0)
    }
    var params = AddParams(source: url.path, destination: destination + encoded.joined(separator: "/") + "/")
    params.sourceIdentity = SourceIdentity(info)
    params.metadata = ["queued-by": "uploadd-example-queue-folder"]
    files.append(params)
}
files.sort { $0.source < $1.source }

let client = UploaddClient()
do {
    let (jobs, errors) = try await client.add(files)
    for error in errors { print("not added: \(error.source ?? "?"): \(error.message)") }
    guard let batch = jobs.first?.batch else {
        print("nothing to upload")
        exit(errors.isEmpty ? 0 : 1)
    }
    print("batch \(batch): \(jobs.count) files queued")
    var pending = Set(jobs.map(\.id))
    var failed = 0
    for try await event in client.events(SubscribeParams(batch: batch, snapshot: true)) {
        switch event {
        case .progress(let progress):
            let percent = progress.bytesTotal > 0 ? 100 * progress.bytesAcked / progress.bytesTotal : 100
            print("  job \(progress.id): \(percent)% at \(Int(progress.speed / 1024)) KiB/s")
        case .state(let job) where job.state.isTerminal && pending.remove(job.id) != nil:
            if job.state != .completed { failed += 1 }
            let outcome =
                job.state == .completed ? (job.result?.url ?? "done") : (job.error?.message ?? job.state.rawValue)
            print("\(job.state.rawValue) \((job.source as NSString).lastPathComponent): \(outcome)")
        case .removed(let id):
            pending.remove(id)
        default:
            break
        }
        if pending.isEmpty { break }
    }
    print("\(jobs.count - failed) of \(jobs.count) uploaded")
    exit(failed == 0 && errors.isEmpty ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("uploadd-example-queue-folder: \(error)\n".utf8))
    exit(69)
}
