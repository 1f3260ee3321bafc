import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

@Suite("SourceFile: reading a job's bytes safely")
struct SourceFileTests {
    let directory: TemporaryDirectory
    let cache: SnapshotCache

    init() throws {
        directory = try TemporaryDirectory()
        cache = SnapshotCache(cacheDirectory: directory.path + "/cache")
        try cache.prepare()
    }

    func original(_ text: String = "0123456789") throws -> (path: String, snapshot: SourceSnapshot) {
        let path = try directory.write("a.txt", text)
        return (path, try cache.snapshot(source: path, id: JobID(1), mode: .none))
    }

    func expectChanged(_ body: () throws -> Void) {
        let error = #expect(throws: TransferFailure.self) { try body() }
        #expect(error?.error.code == "source")
        #expect(error?.error.message.contains("changed since it was added") == true)
        #expect(error?.retryable == false)
    }

    @Test func readsWithPread() throws {
        let (_, snapshot) = try original()
        let file = try SourceFile(snapshot: snapshot, displayPath: "/shown/a.txt")
        var buffer = [UInt8](repeating: 0, count: 4)
        let count = buffer.withUnsafeMutableBytes { file.read(into: $0.baseAddress!, count: 4, at: 3) }
        #expect(count == 4)
        #expect(buffer == Array("3456".utf8))
        #expect(file.size == 10)
        try file.verifyUnchanged()
    }

    @Test func growingTheOriginalIsNoticed() throws {
        let (path, snapshot) = try original()
        let file = try SourceFile(snapshot: snapshot, displayPath: "/shown/a.txt")
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("more".utf8))
        try handle.close()
        expectChanged { try file.verifyUnchanged() }
        let error = #expect(throws: TransferFailure.self) { try file.verifyUnchanged() }
        #expect(error?.error.message.contains("/shown/a.txt") == true)
        #expect(error?.error.message.contains("10 → 14") == true)
    }

    @Test func aNewModificationTimeIsNoticed() throws {
        let (path, snapshot) = try original()
        let file = try SourceFile(snapshot: snapshot, displayPath: path)
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        expectChanged { try file.verifyUnchanged() }
    }

    @Test func aReplacedFileIsNoticedWhenOpened() throws {
        let (path, snapshot) = try original()
        let replacement = try directory.write("b.txt", "abcdefghij")
        #expect(rename(replacement, path) == 0)
        expectChanged { _ = try SourceFile(snapshot: snapshot, displayPath: path) }
    }

    @Test func aDeletedOriginalSaysToAddItAgain() throws {
        let (path, snapshot) = try original()
        #expect(unlink(path) == 0)
        let error = #expect(throws: TransferFailure.self) { _ = try SourceFile(snapshot: snapshot, displayPath: path) }
        #expect(error?.error.message.contains("was deleted after it was added") == true)
    }

    @Test func anOriginalSwappedForAFIFOFailsWithoutBlocking() throws {
        let (path, snapshot) = try original()
        #expect(unlink(path) == 0)
        #expect(mkfifo(path, 0o600) == 0)
        expectChanged { _ = try SourceFile(snapshot: snapshot, displayPath: path) }
    }

    @Test func aBodyHandsOverItsLastBytesOnlyWhileTheFileIsUnchanged() throws {
        let (path, snapshot) = try original()
        let file = try SourceFile(snapshot: snapshot, displayPath: path)
        let reader = BodyReader(.file(FileRegion(file: file, offset: 0, length: 10)))
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(buffer.withUnsafeMutableBytes { reader.read(into: $0.baseAddress!, capacity: 6) } == 6)
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(buffer.withUnsafeMutableBytes { reader.read(into: $0.baseAddress!, capacity: 16) } == -1)
        #expect(reader.readError?.error.code == "source")
        #expect(reader.readError?.error.message.contains("\(path) changed since it was added") == true)
    }

    @Test func theEndOfAnUploadChecksAgainOnlyWhenSomethingWasReadSinceTheLastCheck() throws {
        let (path, snapshot) = try original()
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        // The body's last read was checked: the bytes sent were the added ones, whatever happens after.
        let checked = try SourceFile(snapshot: snapshot, displayPath: path)
        let reader = BodyReader(.file(FileRegion(file: checked, offset: 0, length: 10)))
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(buffer.withUnsafeMutableBytes { reader.read(into: $0.baseAddress!, capacity: 16) } == 10)
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        try checked.confirmUnchanged()
        expectChanged { try checked.verifyUnchanged() }

        // Read with no check after it: the end of the upload looks at the file.
        let otherPath = try directory.write("b.txt", "abcdefghij")
        let otherSnapshot = try cache.snapshot(source: otherPath, id: JobID(2), mode: .none)
        let unchecked = try SourceFile(snapshot: otherSnapshot, displayPath: otherPath)
        #expect(buffer.withUnsafeMutableBytes { unchecked.read(into: $0.baseAddress!, count: 4, at: 0) } == 4)
        try unchecked.confirmUnchanged()  // unchanged: passes, and counts as the check after that read
        #expect(buffer.withUnsafeMutableBytes { unchecked.read(into: $0.baseAddress!, count: 4, at: 4) } == 4)
        #expect(utimensat(AT_FDCWD, otherPath, &times, 0) == 0)
        expectChanged { try unchecked.confirmUnchanged() }
    }

    @Test func aCopyIsCheckedByItsOwnIdentityNotTheOriginals() throws {
        let path = try directory.write("c.txt", "0123456789")
        let snapshot = try cache.snapshot(source: path, id: JobID(2), mode: .copy)
        #expect(snapshot.cachedCopy != nil)
        try directory.write("c.txt", "the original may change: the copy is what we send")
        let file = try SourceFile(snapshot: snapshot, displayPath: path)
        try file.verifyUnchanged()
        #expect(truncate(snapshot.path, 3) == 0)
        let error = #expect(throws: TransferFailure.self) { try file.verifyUnchanged() }
        #expect(error?.error.message.contains("was replaced or changed") == true)
    }

    /// Someone who could write to the cache puts a file of the same size in the copy's place: it
    /// is not uploaded.
    @Test func aCopyReplacedByAnotherFileOfTheSameSizeIsRefused() throws {
        let path = try directory.write("d.txt", "0123456789")
        let snapshot = try cache.snapshot(source: path, id: JobID(3), mode: .copy)
        let impostor = try directory.write("impostor", "9876543210")
        // The copy lives in a private folder only the user and root can write, so the check is
        // the durable mtime (inodes change across remounts on FUSE): an impostor written in the
        // same clock tick by the user's own uid is out of reach and out of scope.
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, impostor, &times, 0) == 0)
        #expect(rename(impostor, snapshot.path) == 0)
        let error = #expect(throws: TransferFailure.self) { try SourceFile(snapshot: snapshot, displayPath: path) }
        #expect(error?.error.message.contains("was replaced or changed") == true)
    }

    @Test func aSymlinkInPlaceOfACopyIsNeverFollowed() throws {
        let path = try directory.write("e.txt", "0123456789")
        let snapshot = try cache.snapshot(source: path, id: JobID(4), mode: .copy)
        #expect(unlink(snapshot.path) == 0)
        #expect(symlink(path, snapshot.path) == 0)
        #expect(throws: TransferFailure.self) { try SourceFile(snapshot: snapshot, displayPath: path) }
    }
}
