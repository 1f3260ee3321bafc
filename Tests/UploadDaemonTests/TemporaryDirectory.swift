import Foundation
import Glibc
import UploadCore
import UploadWire

@testable import UploadDaemon

/// A fresh directory under the system temp dir, removed when the test drops it.
final class TemporaryDirectory: Sendable {
    let path: String

    init(_ label: String = "uploadd-test") throws {
        var template = Array((NSTemporaryDirectory() + "/\(label)-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { throw SystemError("mkdtemp", path: label) }
        path = String(cString: made)
    }

    deinit {
        // chmod back first, so unreadable test files do not stop the cleanup.
        _ = try? FileManager.default.subpathsOfDirectory(atPath: path).forEach { chmod(path + "/" + $0, 0o700) }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `contents` to `name` in this directory and returns its absolute path.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        try write(name, bytes: Array(contents.utf8))
    }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)))
    }

    func contents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
func eventually(within seconds: Double = 20, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
