import Foundation
import Glibc

/// contrib/test/hostile.py, started by a security test and stopped with it: an HTTP server on
/// 127.0.0.1 that lies (bad tus offsets, endless ListParts, escape sequences), points the client at
/// another origin, or never finishes an answer, and records every request it gets.
///
/// It listens on two ports: the main one (`url`, the destination to upload to) and the other one
/// (`otherURL`: the same host on another port, so another origin, where no credential may ever
/// arrive). `mode` is one of tus-bad-offset, tus-foreign-location, post-foreign-url, trickle,
/// s3-endless-parts, escape-body; `options` are that mode's command-line options, e.g.
/// `["--offset=-1", "--offset-on", "post,head,patch"]` (give a value that starts with "-" as
/// `--name=value`). See contrib/test/hostile.py for what each mode answers.
final class HostileServer: @unchecked Sendable {
    // Invariant: used from one test at a time (the suite is serialized).
    let mode: String
    let port: Int
    let otherPort: Int
    private var process: ChildProcess?

    /// `http://127.0.0.1:PORT`: the main origin, the one to upload to.
    var url: String { "http://127.0.0.1:\(port)" }

    /// `http://127.0.0.1:OTHER`: the other origin the hostile answers point at.
    var otherURL: String { "http://127.0.0.1:\(otherPort)" }

    init(mode: String, options: [String] = []) throws {
        self.mode = mode
        let directory = try TestPaths.scratch("hostile")
        let output = directory.appendingPathComponent("hostile.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [TestPaths.repository.appendingPathComponent("contrib/test/hostile.py").path, "--mode", mode] + options
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        // "listening on MAIN other on OTHER"
        var ports: (Int, Int)?
        _ = eventually(timeout: 10) {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            let words = text.split(whereSeparator: \.isWhitespace)
            if let at = words.firstIndex(of: "listening"), words.count >= at + 6, let main = Int(words[at + 2]),
                let other = Int(words[at + 5])
            {
                ports = (main, other)
            }
            return ports != nil || !process.isRunning
        }
        guard let ports else {
            if process.isRunning { process.terminate() }
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw TestFailure("hostile.py --mode \(mode) did not start:\n\(text)")
        }
        (port, otherPort) = ports
    }

    deinit { stop() }

    func stop() {
        guard let process else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if !eventually(timeout: 2, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        self.process = nil
    }

    /// Every request both ports received since the start (or the last `reset()`), oldest first.
    func requests() throws -> [Request] {
        try JSONDecoder().decode([Request].self, from: Data(try control("GET", "/__requests").utf8))
    }

    /// The requests that came in on one port.
    func requests(on role: Request.Role) throws -> [Request] {
        try requests().filter { $0.portRole == role }
    }

    /// Forgets the recorded requests (and the tus uploads the server holds).
    func reset() throws { _ = try control("POST", "/__reset") }

    private func control(_ method: String, _ path: String) throws -> String {
        let arguments = ["-s", "-S", "--max-time", "10", "-X", method, "http://127.0.0.1:\(port)\(path)"]
        let result = try Command.run("/usr/bin/curl", arguments + ["-w", "\n%{http_code}"], timeout: 15)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard result.status == 0, lines.last == "200" else {
            throw TestFailure("hostile server control \(method) \(path) failed: \(result)")
        }
        return lines.dropLast().joined(separator: "\n")
    }

    /// One recorded request. Times are Unix seconds.
    struct Request: Decodable, CustomStringConvertible {
        enum Role: String, Decodable {
            case main, other
        }

        var portRole: Role
        var port: Int
        var t: Double
        var method: String
        /// With the query, as the client sent it.
        var path: String
        /// Names as the client spelled them (use `header(_:)`); a repeated header's values joined with ", ".
        var headers: [String: String]
        var bodyBytes: Int
        /// trickle mode only: chunks sent so far, and when the client hung up (nil: not yet).
        var trickleChunks: Int?
        var clientGone: Double?

        enum CodingKeys: String, CodingKey {
            case port, t, method, path, headers
            case portRole = "port_role"
            case bodyBytes = "body_bytes"
            case trickleChunks = "trickle_chunks"
            case clientGone = "client_gone"
        }

        /// The header's value, its name compared case-insensitively.
        func header(_ name: String) -> String? {
            headers.first(where: { $0.key.lowercased() == name.lowercased() })?.value
        }

        var description: String { "\(portRole) \(method) \(path) (\(bodyBytes) bytes) \(headers)" }
    }
}
