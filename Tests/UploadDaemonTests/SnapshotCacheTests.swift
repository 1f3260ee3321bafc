import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

@Suite("SnapshotCache: protecting a job's bytes")
struct SnapshotCacheTests {
    let directory: TemporaryDirectory
    let cache: SnapshotCache
    let content: [UInt8]

    init() throws {
        directory = try TemporaryDirectory()
        cache = SnapshotCache(cacheDirectory: directory.path + "/cache")
        try cache.prepare()
        var random = SystemRandomNumberGenerator()
        content = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    func source(_ name: String = "video.mp4") throws -> String {
        try directory.write("src/" + name, bytes: content)
    }

    func failure(_ path: String, mode: SnapshotMode = .auto) -> TransferFailure? {
        let error = #expect(throws: TransferFailure.self) { try cache.snapshot(source: path, id: JobID(9), mode: mode) }
        #expect(error?.error.code == "source")
        #expect(error?.retryable == false)
        #expect(cacheFiles().isEmpty, "a failed snapshot leaves nothing in the cache")
        return error
    }

    func cacheFiles() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: cache.directory)) ?? [] }

    @Test(arguments: [SnapshotMode.auto, .copy])
    func autoAndCopyTakeACopyInTheCache(mode: SnapshotMode) throws {
        let path = try source()
        let snapshot = try cache.snapshot(source: path, id: JobID(5), mode: mode)
        #expect(snapshot.kind == .copy || snapshot.kind == .reflink)
        #expect(snapshot.isCached)
        #expect(snapshot.path == cache.directory + "/5")
        #expect(snapshot.size == Int64(content.count))
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: snapshot.path))) == content)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(snapshot.inode == UInt64(info.st_ino), "the identity is the original's")

        // The original changes; the snapshot does not.
        try directory.write("src/video.mp4", "changed")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: snapshot.path))) == content)

        cache.discard(snapshot, of: JobID(1))
        cache.waitForRemovals()
        #expect(!FileManager.default.fileExists(atPath: snapshot.path))
    }

    // MARK: Files whose size is not their length (issue 47, finding 4)

    /// A sysfs file says 4,096 bytes and holds a few: the copy, its room taken ahead, must not
    /// become those bytes and then zeros. A procfs file says 0 and holds text: not an empty copy.
    static let pseudoFiles = ["/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/status"].filter {
        FileManager.default.isReadableFile(atPath: $0)
    }

    @Test(arguments: pseudoFiles)
    func aCopyOfAFileWhoseSizeIsNotItsLengthIsRefused(path: String) throws {
        let error = failure(path, mode: .copy)
        #expect(
            error?.error.message.contains("ended after") == true
                || error?.error.message.contains("holds more than") == true, "\(String(describing: error))")
    }

    @Test(arguments: pseudoFiles)
    func aPackedCopyOfAFileWhoseSizeIsNotItsLengthIsRefused(path: String) throws {
        var info = stat()
        #expect(stat(path, &info) == 0)
        let normal = try source("normal.bin")
        let results = try #require(
            cache.pack([
                (path, Int64(info.st_size), JobID(1), .copy, nil), (normal, Int64(content.count), JobID(2), .copy, nil),
            ]))
        let error = #expect(throws: TransferFailure.self) { try results[0].get() }
        #expect(error?.error.code == "source")
        let kept = try results[1].get()
        #expect(kept.packOffset == 0, "the refused file left nothing in the pack")
    }

    @Test(arguments: pseudoFiles)
    func theAddCheckRefusesPseudoFilesSayingWhatToDo(path: String) throws {
        let error = #expect(throws: TransferFailure.self) { try cache.original(of: path) }
        #expect(
            error?.error.message.contains("copy it first (cat \(path) > FILE)") == true, "\(String(describing: error))")
    }

    @Test func aFileOtherThanTheOneCheckedIsRefused() throws {
        let checked = try source("checked.bin")
        let other = try source("other.bin")
        let identity = try #require(SourceIdentity.of(other, followingSymlink: false))
        for mode in [SnapshotMode.copy, .none] {
            let error = #expect(throws: TransferFailure.self) {
                try cache.snapshot(source: checked, id: JobID(3), mode: mode, expecting: identity)
            }
            #expect(error?.error.message.contains("is not the file that was checked") == true)
        }
        #expect(throws: TransferFailure.self) { try cache.original(of: checked, expecting: identity) }
        #expect(try cache.original(of: other, expecting: identity).size == Int64(content.count))
        #expect(cacheFiles().isEmpty)
    }

    /// Linux refuses copy_file_range between file systems (tmpfs to ext4): the copy must still happen.
    @Test(
        .enabled(
            if: FileManager.default.isWritableFile(atPath: "/dev/shm"),
            "needs a writable /dev/shm (a tmpfs, there on every systemd machine) for a file system other than the cache's"
        ))
    func aSourceOnAnotherFileSystemIsCopied() throws {
        let path = "/dev/shm/uploadd-snapshot-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).bin"
        _ = FileManager.default.createFile(atPath: path, contents: Data(content))
        defer { unlink(path) }
        var sourceInfo = stat()
        var cacheInfo = stat()
        stat(path, &sourceInfo)
        stat(cache.directory, &cacheInfo)
        let snapshot = try cache.snapshot(source: path, id: JobID(6), mode: .copy)
        #expect(snapshot.kind == .copy || snapshot.kind == .reflink)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: snapshot.path))) == content)
        if sourceInfo.st_dev == cacheInfo.st_dev {
            Issue.record("the cache is on the same file system; this proves nothing")
        }
    }

    /// A daemon that died while a helper ran left its temporary folder: the next start removes
    /// it, with what the helper wrote and made unreadable, and nothing it did not make.
    @Test func startingRemovesTheTemporaryFoldersHelpersLeft() throws {
        let left = try FileOps.makeTemporaryDirectory(in: cache.helperTemporaryDirectory, prefix: "run")
        try FileOps.makeDirectory(left + "/deeper")
        _ = FileManager.default.createFile(atPath: left + "/deeper/vips-0.v", contents: Data(count: 1000))
        _ = FileManager.default.createFile(atPath: left + "/orcexec.a1b2c3", contents: nil)
        chmod(left + "/deeper", 0)
        symlink(directory.path + "/src", left + "/link")
        let kept = try directory.write("src/kept", "not the helper's")
        let stranger = cache.helperTemporaryDirectory + "/not-a-run"
        _ = FileManager.default.createFile(atPath: stranger, contents: nil)
        try cache.prepare()
        #expect(!FileManager.default.fileExists(atPath: left))
        #expect(FileManager.default.fileExists(atPath: stranger), "only run-XXXXXX folders are removed")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "not the helper's", "no symlink followed")
    }

    @Test func noneUsesTheOriginalWithItsIdentity() throws {
        let path = try source()
        let snapshot = try cache.snapshot(source: path, id: JobID(5), mode: .none)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(snapshot.kind == .original)
        #expect(snapshot.path == path)
        #expect(!snapshot.isCached)
        #expect(snapshot.size == Int64(content.count))
        #expect(snapshot.inode == UInt64(info.st_ino))
        #expect(snapshot.device == UInt64(info.st_dev))
        #expect(
            snapshot.modificationTimeNanoseconds == Int64(info.st_mtim.tv_sec) * 1_000_000_000
                + Int64(info.st_mtim.tv_nsec))
        #expect(cacheFiles().isEmpty)
        cache.discard(snapshot, of: JobID(1))
        cache.waitForRemovals()
        #expect(FileManager.default.fileExists(atPath: path), "discard never deletes the user's file")
    }

    /// How `job.add` of many files works: every copy made first, then each synced by its name.
    @Test func aCopySyncedLaterHasItsBytesAndItsIdentity() throws {
        let snapshot = try cache.snapshot(source: try source(), id: JobID(7), mode: .copy, syncNow: false)
        try cache.makeDurable(snapshot)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: snapshot.path))) == content)
        var info = stat()
        #expect(stat(snapshot.path, &info) == 0)
        #expect(snapshot.cachedCopy?.inode == UInt64(info.st_ino))

        let original = try cache.snapshot(source: try source("photo.jpeg"), id: JobID(8), mode: .none, syncNow: false)
        try cache.makeDurable(original)  // nothing owed: the user's file is not the cache's to sync
    }

    /// The cache folder is uploadd's alone, but a name that has become a link is not followed.
    @Test func aCopyReplacedByALinkIsNotSyncedThroughIt() throws {
        let snapshot = try cache.snapshot(source: try source(), id: JobID(7), mode: .copy, syncNow: false)
        unlink(snapshot.path)
        #expect(symlink(try source("elsewhere"), snapshot.path) == 0)
        let error = #expect(throws: SystemError.self) { try cache.makeDurable(snapshot) }
        #expect(error?.errno == ELOOP)
        unlink(snapshot.path)
        #expect(throws: SystemError.self) { try cache.makeDurable(snapshot) }
    }

    @Test func anEarlierFileWithTheSameIDIsReplaced() throws {
        try directory.write("cache/snapshots/5", "stale")
        let snapshot = try cache.snapshot(source: try source(), id: JobID(5), mode: .copy)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: snapshot.path))) == content)
    }

    @Test func withoutACacheDirectoryAutoFallsBackAndCopyFails() throws {
        let path = try source()
        let missing = SnapshotCache(cacheDirectory: directory.path + "/no-cache")
        #expect(try missing.snapshot(source: path, id: JobID(1), mode: .auto).kind == .original)
        let error = #expect(throws: TransferFailure.self) {
            try missing.snapshot(source: path, id: JobID(1), mode: .copy)
        }
        #expect(error?.error.code == "io")
        #expect(error?.error.message.contains(missing.directory) == true)
    }

    @Test func aDirectoryIsRefused() throws {
        try FileManager.default.createDirectory(atPath: directory.path + "/photos", withIntermediateDirectories: true)
        let message = failure(directory.path + "/photos")?.error.message ?? ""
        #expect(message.contains("\(directory.path)/photos is a directory"))
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let path = directory.path + "/pipe"
        #expect(mkfifo(path, 0o600) == 0)
        let message = failure(path)?.error.message ?? ""
        #expect(message.contains("\(path) is a FIFO"))
    }

    @Test(arguments: [SnapshotMode.auto, .copy, .none])
    func aMissingFileIsRefused(mode: SnapshotMode) {
        let path = directory.path + "/gone.mp4"
        #expect(failure(path, mode: mode)?.error.message == "\(path) does not exist")
    }

    /// As root (CI), chmod 000 does not stop reading: the check runs with CAP_DAC_OVERRIDE and
    /// CAP_DAC_READ_SEARCH out of this thread's effective set, so the mode applies as to anyone.
    @Test func anUnreadableFileIsRefused() throws {
        let path = try source("secret.bin")
        #expect(chmod(path, 0) == 0)
        let message = try ThreadCapabilities.withoutFileCapabilities { failure(path)?.error.message ?? "" }
        #expect(message == "cannot read \(path): Permission denied")
    }

    @Test func removeOrphansKeepsTheFilesJobsUse() throws {
        let keep = try cache.snapshot(source: try source(), id: JobID(1), mode: .copy)
        let orphan = try cache.snapshot(source: try source(), id: JobID(2), mode: .copy)
        cache.removeOrphans(keeping: [keep.path])
        #expect(cacheFiles() == ["1"])
        #expect(!FileManager.default.fileExists(atPath: orphan.path))
    }

    @Test func discardIgnoresPathsOutsideTheCache() throws {
        let path = try source()
        let foreign = SourceSnapshot(
            kind: .copy, path: path, size: 1, device: 0, inode: 0, modificationTimeNanoseconds: 0)
        cache.discard(foreign, of: JobID(1))
        cache.waitForRemovals()
        #expect(FileManager.default.fileExists(atPath: path))
    }
}

/// The calling thread's capabilities. Linux keeps them per thread and capset(2) changes only the
/// calling thread's, so a test can give up one for a moment without touching the tests that run
/// on other threads.
private enum ThreadCapabilities {
    struct CapabilityError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private typealias Call = @convention(c) (UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Int32
    /// _LINUX_CAPABILITY_VERSION_3: 64-bit sets, as two 32-bit words each.
    private static let version: UInt32 = 0x2008_0522
    /// CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2), in the low word.
    private static let fileCapabilities: UInt32 = 1 << 1 | 1 << 2

    /// glibc's capget and capset (declared in no header Swift imports); the raw system calls.
    private static func call(_ name: String) throws -> Call {
        guard let symbol = dlsym(nil, name) else { throw CapabilityError("\(name) is not in the C library") }
        return unsafeBitCast(symbol, to: Call.self)
    }

    /// Effective, permitted, inheritable (low words), then the same (high words).
    private static func get() throws -> [UInt32] {
        var header: [UInt32] = [version, 0]  // pid 0: this thread
        var data = [UInt32](repeating: 0, count: 6)
        guard try call("capget")(&header, &data) == 0 else {
            throw CapabilityError("capget: \(String(cString: strerror(errno)))")
        }
        return data
    }

    private static func set(_ data: [UInt32]) throws {
        var header: [UInt32] = [version, 0]
        var data = data
        guard try call("capset")(&header, &data) == 0 else {
            throw CapabilityError("capset: \(String(cString: strerror(errno)))")
        }
    }

    /// Runs `body` (synchronous, so it stays on this thread) without CAP_DAC_OVERRIDE and
    /// CAP_DAC_READ_SEARCH in this thread's effective set, and puts them back after.
    static func withoutFileCapabilities<T>(_ body: () throws -> T) throws -> T {
        let saved = try get()
        var reduced = saved
        reduced[0] &= ~fileCapabilities
        try set(reduced)
        defer { try? set(saved) }
        guard try get()[0] & fileCapabilities == 0 else {
            throw CapabilityError("the file capabilities are still effective")
        }
        return try body()
    }
}
