import Foundation
import Glibc

/// The outcome of running a program.
struct CommandResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

enum Command {
    /// Runs a program to completion (killing it after `timeout` seconds) and collects its output.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Double = 120
    )
        throws -> CommandResult
    {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let outURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "uploadd-test-\(UUID().uuidString).out")
        let errURL = outURL.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            // SIGKILL: children of a test thread inherit its blocked signals, so SIGTERM may never land.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return CommandResult(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }

    /// SHA-256 of a file, with coreutils' sha256sum.
    static func sha256(_ path: String) throws -> String {
        let result = try run("/usr/bin/sha256sum", [path])
        guard result.status == 0, let hash = result.stdout.split(separator: " ").first else {
            throw TestFailure("sha256sum \(path) failed: \(result)")
        }
        return String(hash)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Makes a file of `size` random bytes (written in 1 MiB pieces, so big files cost no memory).
func makeRandomFile(at path: String, size: Int) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    var generator = SystemRandomNumberGenerator()
    var remaining = size
    var block = [UInt8](repeating: 0, count: 1 << 20)
    while remaining > 0 {
        let count = min(remaining, block.count)
        for index in stride(from: 0, to: count, by: 8) {
            let value = generator.next() as UInt64
            withUnsafeBytes(of: value) { bytes in
                for offset in 0..<min(8, count - index) { block[index + offset] = bytes[offset] }
            }
        }
        try handle.write(contentsOf: block[0..<count])
        remaining -= count
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}
