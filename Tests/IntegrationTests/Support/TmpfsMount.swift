import Foundation
import Glibc
import Testing

/// A small tmpfs mounted for one test, to run a directory out of space on purpose. Needs root
/// (CI runs as root); `isPermitted` says whether mounting works here.
final class TmpfsMount: @unchecked Sendable {
    // Invariant: used from one test at a time (the suites are serialized).
    let path: String
    private var mounted = false

    /// Mounts a tmpfs of `size` (mount's syntax: `1m`, `5g`) on `path`, creating the directory.
    init(at path: String, size: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw TestFailure("cannot mount a tmpfs on \(path): \(String(cString: strerror(errno)))")
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

    /// Whether this process may mount a tmpfs (root, or a namespace that allows it), tried once.
    static let isPermitted: Bool = {
        guard geteuid() == 0, let scratch = try? TestPaths.scratch("tmpfs-probe") else { return false }
        defer { try? FileManager.default.removeItem(at: scratch) }
        guard let probe = try? TmpfsMount(at: scratch.path, size: "64k") else { return false }
        probe.unmount()
        return true
    }()

    static let notPermittedReason: Comment =
        "mounting a tmpfs needs root (CI runs the integration tests as root); run them as root to test full disks"
}
