import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("SnapshotPack: small copies of one add in one file")
struct SnapshotPackTests {
    let directory: TemporaryDirectory
    let cache: SnapshotCache

    init() throws {
        directory = try TemporaryDirectory()
        cache = SnapshotCache(cacheDirectory: directory.path + "/cache")
        try cache.prepare()
    }

    func bytes(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7) ^ seed } }

    func cacheFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cache.directory)) ?? []).sorted()
    }

    /// `count` source files of `size` bytes each, for jobs 1..., to be copied (`--snapshot copy`).
    func copies(_ count: Int, size: Int, firstID: UInt64 = 1) throws -> [(
        String, Int64, JobID, SnapshotMode, SourceIdentity?
    )] {
        try (0..<count).map { index in
            let id = firstID + UInt64(index)
            let path = try directory.write("src/\(id)", bytes: bytes(size, seed: UInt8(truncatingIfNeeded: id)))
            return (path, Int64(size), JobID(id), .copy, nil)
        }
    }

    /// Everything a transfer reads of a snapshot, by SourceFile, in pieces that run past its end.
    func readAll(_ snapshot: SourceSnapshot) throws -> [UInt8] {
        let file = try SourceFile(snapshot: snapshot, displayPath: snapshot.path)
        var read: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 7_000)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                file.read(into: $0.baseAddress!, count: $0.count, at: Int64(read.count))
            }
            #expect(count >= 0)
            if count <= 0 { break }
            read += buffer[0..<count]
        }
        return read
    }

    @Test func eachJobReadsItsOwnBytesAndNothingOfItsNeighbours() throws {
        let contents = [bytes(65_536, seed: 1), [], bytes(10, seed: 2), bytes(200_001, seed: 3)]
        let files = try contents.enumerated().map {
            index, content -> (String, Int64, JobID, SnapshotMode, SourceIdentity?) in
            (
                try directory.write("src/\(index)", bytes: content), Int64(content.count), JobID(UInt64(10 + index)),
                .auto, nil
            )
        }
        let results = try #require(cache.pack(files))
        let snapshots = try results.map { try $0.get() }
        #expect(cacheFiles() == ["pack-10"])
        #expect(snapshots.map(\.packOffset) == [0, 65_536, 65_536, 65_546])
        for (snapshot, content) in zip(snapshots, contents) {
            #expect(snapshot.kind == .copy && snapshot.isCached && snapshot.isPacked)
            #expect(snapshot.path == cache.directory + "/pack-10")
            #expect(snapshot.size == Int64(content.count))
            #expect(try readAll(snapshot) == content)
            let file = try SourceFile(snapshot: snapshot, displayPath: "x")
            let digest = MessageDigest.sha256()
            content.withUnsafeBytes { digest.update($0) }
            #expect(try file.sha256Hex() == Hex.encode(digest.finish()))
        }
        // The snapshot's identity is the original's; the pack's is its own.
        var info = stat()
        #expect(stat(files[0].0, &info) == 0)
        #expect(snapshots[0].inode == UInt64(info.st_ino))
        #expect(stat(snapshots[0].path, &info) == 0)
        #expect(snapshots.allSatisfy { $0.cachedCopy?.inode == UInt64(info.st_ino) })
    }

    @Test func aFileThatCannotBeReadFailsAloneAndTakesNoRoom() throws {
        let first = try directory.write("src/a", bytes: bytes(100, seed: 4))
        let last = try directory.write("src/c", bytes: bytes(50, seed: 5))
        let results = try #require(
            cache.pack([
                (first, 100, JobID(1), .copy, nil), (directory.path + "/src/gone", 70, JobID(2), .copy, nil),
                (directory.path + "/src", 0, JobID(3), .auto, nil), (last, 50, JobID(4), .copy, nil),
            ]))
        #expect(try results[0].get().packOffset == 0)
        #expect(throws: TransferFailure.self) { try results[1].get() }
        #expect(throws: TransferFailure.self) { try results[2].get() }
        let lastSnapshot = try results[3].get()
        #expect(lastSnapshot.packOffset == 100)
        #expect(try readAll(lastSnapshot) == bytes(50, seed: 5))
    }

    @Test func noFileReadableLeavesNoPack() throws {
        let results = try #require(
            cache.pack([("/nonexistent/a", 1, JobID(1), .copy, nil), ("/nonexistent/b", 1, JobID(2), .auto, nil)]))
        #expect(results.allSatisfy { (try? $0.get()) == nil })
        #expect(cacheFiles().isEmpty)
    }

    @Test func thePackGoesWhenTheLastJobLetsGo() throws {
        let files = try copies(3, size: 1_000)
        let snapshots = try #require(cache.pack(files)).map { try $0.get() }
        cache.packs.hold(snapshots[0].path, for: [JobID(1), JobID(2), JobID(3)])
        cache.discard(snapshots[1], of: JobID(2))
        cache.discard(snapshots[1], of: JobID(2))  // twice: still only job 2 let go
        cache.discard(snapshots[0], of: JobID(1))
        cache.waitForRemovals()
        #expect(cacheFiles() == ["pack-1"])
        #expect(try readAll(snapshots[2]) == bytes(1_000, seed: 3))
        cache.discard(snapshots[2], of: JobID(3))
        cache.waitForRemovals()
        #expect(cacheFiles().isEmpty)
    }

    @Test func aPackChangedOrCutShortIsRefused() throws {
        let files = try copies(2, size: 4_096)
        let snapshots = try #require(cache.pack(files)).map { try $0.get() }
        let path = snapshots[0].path
        // Cut short: the second job's bytes are not all there; the first job's still are.
        #expect(truncate(path, 6_000) == 0)
        let error = #expect(throws: TransferFailure.self) { try SourceFile(snapshot: snapshots[1], displayPath: "2") }
        #expect(error?.error.code == "source")
        // Any change to the pack changes its mtime: every job in it refuses it.
        var times = [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 1_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(throws: TransferFailure.self) { try SourceFile(snapshot: snapshots[0], displayPath: "1") }
    }

    @Test func orphanedPacksGoAndPacksJobsNeedStay() throws {
        let files = try copies(2, size: 10)
        let kept = try #require(cache.pack(files))[0].get()
        let orphan = try #require(cache.pack(files.map { ($0.0, $0.1, JobID($0.2.rawValue + 10), $0.3, $0.4) }))[0]
            .get()
        _ = try directory.write("cache/snapshots/pack-notanid", "not ours")
        cache.removeOrphans(keeping: [kept.path])
        #expect(cacheFiles() == ["pack-1", "pack-notanid"])
        #expect(!FileManager.default.fileExists(atPath: orphan.path))
    }

    /// What `add` packs: small files to be copied, at least two, none with a preparation step.
    @Test func addPacksOnlySmallCopiesWithoutSteps() async throws {
        func request(_ name: String, size: Int, mode: SnapshotMode, image: Bool = false, id: UInt64)
            throws -> SnapshotCache.SnapshotRequest
        {
            let path = try directory.write("src/" + name, bytes: bytes(size, seed: UInt8(id)))
            var spec = JobSpec(source: path, destination: "file:///tmp/x/")
            spec.snapshot = mode
            if image { spec.preparation = [PreparationRequest(step: "image", options: "max=10")] }
            return (spec, try cache.original(of: path), JobID(id))
        }
        let requests = [
            try request("a", size: 100, mode: .auto, id: 1),
            try request("b", size: 2 << 20, mode: .auto, id: 2),
            try request("c", size: 100, mode: .none, id: 3),
            try request("d", size: 100, mode: .copy, image: true, id: 4),
            try request("e", size: 300, mode: .copy, id: 5),
        ]
        let snapshots = try await cache.takeSnapshots(requests).map { try $0.get().snapshot }
        #expect(snapshots.map(\.packOffset) == [0, nil, nil, nil, 100])
        #expect(snapshots.map(\.kind) == [.copy, snapshots[1].kind, .original, snapshots[3].kind, .copy])
        #expect(cache.packs.holding(cache.directory + "/pack-1") == [JobID(1), JobID(5)])
        #expect(Set(cacheFiles()) == ["pack-1", "2", "4"])

        // One small copy alone is copied as before.
        let alone = await cache.takeSnapshots([try request("f", size: 10, mode: .auto, id: 6)])
        #expect(try alone[0].get().snapshot.isPacked == false)
    }
}
