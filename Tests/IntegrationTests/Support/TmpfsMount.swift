import Foundation
import Glibc
import Testing

/// A small tmpfs mounted for one test, to run a directory out of space on purpose. Needs root
/// (CI runs as root); `isPermitted` says whether mounting is allowed here.
final class TmpfsMount: @unchecked Sendable {
    // Invariant: used from one test at a time (the suites are serialized).
    let path: String
    private var mounted = false

    /// Mounts a tmpfs of `size` (mount's syntax: `1m`, `5g`) on `path`, creating the directory.
    init(at path: String, size: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw MountError(errno: errno, path: path)
        }
        mounted = true
    }

    deinit { unmount() }

    /// Unmounts; lazily when something still holds a file open there, so a failed test never
    /// leaves the mount behind.
    func unmount() {
        guard mounted else { return }
        if Glibc.umount(path) != 0 { _ = umount2(path, Int32(MNT_DETACH)) }
        mounted = false
    }

    var availableBytes: Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Writes zeros into `name` until the file system says ENOSPC; returns the filler's path.
    @discardableResult
    func fill(name: String = "filler") throws -> String {
        let filler = path + "/" + name
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("cannot create \(filler): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let block = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written > 0 { continue }
            if written < 0 && errno == EINTR { continue }
            if written < 0 && errno == ENOSPC { break }
            throw TestFailure("filling \(filler) stopped without ENOSPC: \(String(cString: strerror(errno)))")
        }
        guard availableBytes == 0 else {
            throw TestFailure("\(path) is not full after filling: \(availableBytes) bytes free")
        }
        return filler
    }

    /// A failed mount(2), with its errno.
    struct MountError: Error, CustomStringConvertible {
        var errno: Int32
        var path: String
        var description: String { "cannot mount a tmpfs on \(path): \(String(cString: strerror(errno)))" }
    }

    /// A probe mount, tried once: nil when it worked, else why not.
    private static let probe: (any Error)? = {
        do {
            let scratch = try TestPaths.scratch("tmpfs-probe")
            defer { try? FileManager.default.removeItem(at: scratch) }
            try TmpfsMount(at: scratch.path, size: "64k").unmount()
            return nil
        } catch {
            return error
        }
    }()

    /// False only when the kernel refused the probe mount with EPERM (not root, or no
    /// CAP_SYS_ADMIN in this namespace). Any other error is no reason to skip: `requirePermitted`
    /// throws it, and the test fails.
    static var isPermitted: Bool { (probe as? MountError)?.errno != EPERM }

    /// Why mounting is not permitted here, as the kernel said it.
    static var notPermittedReason: Comment {
        guard !isPermitted else { return "mounting a tmpfs is permitted" }
        if geteuid() != 0 {
            return Comment(
                rawValue: "mounting a tmpfs needs root (uid \(geteuid()) got EPERM); CI runs these tests as root")
        }
        return Comment(
            rawValue: "mount(2) of a tmpfs got EPERM even as root: this namespace has no CAP_SYS_ADMIN (a container?)")
    }

    /// Throws unless a tmpfs can be mounted here: the probe's error, or, when mounting is not
    /// permitted and UPLOADD_REQUIRE_PRIVILEGED=1, that as a failure.
    static func requirePermitted() throws {
        guard let probe else { return }
        if isPermitted { throw probe }
        try Privileges.unavailable(notPermittedReason.rawValue)
    }
}

extension Trait where Self == ConditionTrait {
    /// For tests that mount tmpfs file systems: skipped (with the reason) where mounting is not
    /// permitted, unless UPLOADD_REQUIRE_PRIVILEGED=1, which makes them run and fail. Such a test
    /// (or its suite's init) calls `TmpfsMount.requirePermitted()` first.
    static var mountsTmpfs: Self {
        .enabled(if: TmpfsMount.isPermitted || Privileges.required, TmpfsMount.notPermittedReason)
    }
}
