import Foundation
import Glibc

/// Helpers for the crash-safety tests: fast random files, raw uploadd runs, file identity.
enum CrashSupport {
    /// A file of `size` bytes from /dev/urandom (much faster than generating them in a debug build).
    static func randomFile(at path: String, size: Int) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? output.close() }
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        defer { try? input.close() }
        var remaining = size
        while remaining > 0 {
            let data = try input.read(upToCount: min(remaining, 1 << 20)) ?? Data()
            guard !data.isEmpty else { throw TestFailure("/dev/urandom ran dry") }
            try output.write(contentsOf: data)
            remaining -= data.count
        }
    }

    /// Runs uploadd in the foreground on the directories of `daemon` (for start-ups expected to
    /// fail: it returns when uploadd exits, or kills it after `timeout`). `wrapper` is put in front
    /// of the command line, for example setpriv to drop capabilities.
    static func runUploadd(_ daemon: DaemonProcess, wrapper: [String] = [], timeout: Double = 15) throws
        -> CommandResult
    {
        let binary = TestPaths.binaries.appendingPathComponent("uploadd").path
        let arguments = [
            "--state-dir", daemon.stateDirectory, "--cache-dir", daemon.cacheDirectory, "--socket", daemon.socket,
            "--config", daemon.configPath, "--log-level", "debug",
        ]
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        if wrapper.isEmpty {
            return try Command.run(binary, arguments, environment: environment, timeout: timeout)
        }
        return try Command.run(
            wrapper[0], Array(wrapper.dropFirst()) + [binary] + arguments, environment: environment, timeout: timeout)
    }

    /// Sends one JSON-RPC request line on the control socket and returns the answer line, with
    /// nothing in between (no uploadctl process), so that a test can act the instant it is answered.
    static func rpc(socket path: String, _ request: String, timeout: Int = 20) throws -> String {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw TestFailure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in pathBytes.enumerated() { buffer[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw TestFailure("connect \(path): \(String(cString: strerror(errno)))") }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let line = Array((request + "\n").utf8)
        guard line.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else {
            throw TestFailure("send: \(String(cString: strerror(errno)))")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                throw TestFailure("no answer on \(path): \(String(decoding: answer, as: UTF8.self))")
            }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// The bytes of a file, or nil when it cannot be read.
    static func bytes(_ path: String) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Inode, size, mode and modification time: what a rewrite, truncation or chmod would change.
    static func identity(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return "ino=\(info.st_ino) size=\(info.st_size) mode=\(String(info.st_mode, radix: 8)) "
            + "mtime=\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// The HTTP status of a tus HEAD.
    static func tusHead(_ url: String) throws -> Int {
        let result = try Command.run(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-I", "-H", "Tus-Resumable: 1.0.0", "--max-time", "20",
                url,
            ])
        return Int(result.stdout) ?? 0
    }

    /// Upload IDs (file names without `.info`) of the tus server's uploads whose metadata names `fileName`.
    static func tusUploads(named fileName: String, in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".info") }.compactMap {
            file in
            guard let info = try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8),
                info.contains(fileName)
            else { return nil }
            return String(file.dropLast(".info".count))
        }
    }
}
