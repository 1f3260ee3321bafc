import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("FileTransfer: the final name only ever holds the whole, unchanged file")
struct FileTransferTests {
    @Test func aFileChangedDuringTheCopyNeverGetsTheFinalName() async throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("a.txt", "0123456789")
        let snapshot = try SnapshotCache(cacheDirectory: directory.path + "/cache").snapshot(
            source: path, id: JobID(1), mode: .none)
        let source = try SourceFile(snapshot: snapshot, displayPath: path)
        // Changed after the attempt opened it, as a write during the copy would change it.
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let destination = directory.path + "/out/a.txt"
        let context = TransferContext(
            job: Job(
                id: JobID(1), spec: JobSpec(source: path, destination: "file://\(directory.path)/out/"),
                createdAt: Date()),
            target: ResolvedTarget(uploadProtocol: .file, url: "file://\(destination)", fileName: "a.txt"),
            source: source, meter: ProgressMeter(), commit: { _, _, _ in })
        let error = await #expect(throws: TransferFailure.self) { try await FileTransfer().upload(context) }
        #expect(error?.error.code == "source")
        #expect(error?.error.message.contains("\(path) changed since it was added") == true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path + "/out").isEmpty,
            "no final name, no temp file")
    }
}
