import Foundation
import Glibc
import Testing
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

/// The locks that keep a second daemon off a state or cache directory already in use. flock
/// belongs to an open file description, so a second acquire in this process is refused just as
/// another process's would be.
@Suite("DirectoryLock")
struct DirectoryLockTests {
    @Test func aSecondLockOfTheSameCacheDirectoryIsRefusedWithWhatToDo() throws {
        let directory = try TemporaryDirectory()
        let first = try DirectoryLock.acquire(directory: directory.path, for: .cache)
        let error = #expect(throws: DirectoryLock.HeldError.self) {
            try DirectoryLock.acquire(directory: directory.path, for: .cache)
        }
        #expect(
            error?.description
                == "another uploadd (pid \(getpid())) uses the cache directory \(directory.path); stop it first, or give this one its own with --cache-dir"
        )
        withExtendedLifetime(first) {}
    }

    @Test func theCacheLockIsFreeAgainOnceItsHolderLetsGo() throws {
        let directory = try TemporaryDirectory()
        _ = try DirectoryLock.acquire(directory: directory.path, for: .cache)
        _ = try DirectoryLock.acquire(directory: directory.path, for: .cache)
    }

    /// `--state-dir X --cache-dir X`: one directory locked for both uses.
    @Test func oneDirectoryCanBeBothTheStateAndTheCache() throws {
        let directory = try TemporaryDirectory()
        let state = try DirectoryLock.acquire(directory: directory.path, for: .state)
        let cache = try DirectoryLock.acquire(directory: directory.path, for: .cache)
        #expect(throws: DirectoryLock.HeldError.self) {
            try DirectoryLock.acquire(directory: directory.path, for: .state)
        }
        withExtendedLifetime((state, cache)) {}
    }

    @Test func theLockFileIsPrivateAndNotFollowedIfALink() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = try directory.write("elsewhere", "")
        #expect(symlink(elsewhere, directory.path + "/cache.lock") == 0)
        #expect(throws: (any Error).self) { try DirectoryLock.acquire(directory: directory.path, for: .cache) }
        unlink(directory.path + "/cache.lock")
        let lock = try DirectoryLock.acquire(directory: directory.path, for: .cache)
        var info = stat()
        #expect(stat(directory.path + "/cache.lock", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        withExtendedLifetime(lock) {}
    }
}
