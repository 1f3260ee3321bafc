import Foundation
import Glibc

/// Small file-system operations the daemon needs, each with a clear error.
enum FileOps {
    /// Creates `path` and its parents with `mode` if missing.
    static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path, parent != "/" { try makeDirectory(parent, mode: mode) }
        if mkdir(path, mode) != 0 && errno != EEXIST { throw SystemError("create directory", path: path) }
    }

    /// fsync of a directory, so a rename or create in it survives a power loss.
    static func syncDirectory(_ path: String) throws {
        let fd = try syscall("open", path: path) { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try syscall("fsync", path: path) { fsync(fd) }
    }

    /// Writes all of `bytes` at the descriptor's position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = try syscall("write", path: path) { write(fd, bytes.baseAddress! + offset, bytes.count - offset) }
            offset += written
        }
    }

    /// Writes a small file atomically: temp file, fsync, rename, directory fsync.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let temp = path + ".tmp"
        let fd = try syscall("create", path: temp) { open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        do {
            try bytes.withUnsafeBytes { (buffer) in try writeAll(fd, buffer, path: temp) }
            try syscall("fsync", path: temp) { fsync(fd) }
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
        close(fd)
        try syscall("rename", path: temp) { rename(temp, path) }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Free bytes for an unprivileged user on the file system holding `path`.
    static func availableBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Reads a whole small file, as bytes.
    static func readFile(_ path: String) throws -> [UInt8] {
        let fd = try syscall("open", path: path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try chunk.withUnsafeMutableBytes { (buffer) in
                try syscall("read", path: path) { read(fd, buffer.baseAddress, buffer.count) }
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }
}
