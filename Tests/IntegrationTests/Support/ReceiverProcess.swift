import Foundation
import Glibc

/// contrib/receiver/receiver.py (the chunked and multipart reference receiver) for one suite
/// instance or test: its own directory, a fresh random token, 127.0.0.1 and a free port; stopped
/// with it. Unlike the shared receiver of contrib/test/servers.py, nothing else sends to it, so its
/// counters (GET /stats) are this test's alone.
final class ReceiverProcess: @unchecked Sendable {
    // Invariant: used from one test at a time; stop() may run more than once.
    /// Holds `files/` (what the receiver stores), `token`, `receiver.out` and `receiver.err`.
    let directory: URL
    /// `http://127.0.0.1:PORT`.
    let url: String
    /// The token every request needs: the `token` field or `Authorization: Bearer`.
    let token: String
    private var process: ChildProcess?

    /// uploadctl options that send the token as the chunked protocol's `token` field.
    var tokenField: [String] { ["--field", "token=\(token)"] }
    /// The header that carries the token, for curl `-H` and uploadctl `--header`.
    var authorization: String { "Authorization: Bearer \(token)" }
    var filesDirectory: URL { directory.appendingPathComponent("files") }
    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// Starts a receiver in a fresh scratch directory named after `name`.
    convenience init(name: String) throws {
        try self.init(directory: try TestPaths.scratch(name))
    }

    init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let outPath = directory.appendingPathComponent("receiver.out").path
        let errPath = directory.appendingPathComponent("receiver.err").path
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        token = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let tokenPath = directory.appendingPathComponent("token").path
        guard
            FileManager.default.createFile(
                atPath: tokenPath, contents: Data("\(token)\n".utf8), attributes: [.posixPermissions: 0o600])
        else { throw TestFailure("cannot write \(tokenPath)") }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            TestPaths.repository.appendingPathComponent("contrib/receiver/receiver.py").path,
            "--host", "127.0.0.1", "--port", "0", "--dir", directory.appendingPathComponent("files").path,
            "--token-file", tokenPath, "--quiet",
        ]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        var url: String?
        _ = eventually(timeout: 15) {
            let text = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
            url = text.split(separator: "\n").first { $0.hasPrefix("listening on ") }.map { String($0.dropFirst(13)) }
            return url != nil || !process.isRunning
        }
        guard let url else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            throw TestFailure("the reference receiver did not start: \(errors)")
        }
        self.url = url
    }

    deinit { stop() }

    /// SIGKILL: children of Process start with SIGTERM blocked, and the receiver keeps nothing in memory.
    func stop() {
        guard let process else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    /// The receiver's counters (GET /stats): requests, blocks_received, block_bytes_received,
    /// duplicate_blocks, ...; throws unless the answer is 200 with a JSON object of numbers.
    func stats() throws -> [String: Int] {
        let result = try request("GET", "/stats")
        guard let object = try? JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any] else {
            throw TestFailure("GET \(url)/stats: not a JSON object: \(result)")
        }
        let numbers = object.compactMapValues { $0 as? Int }
        guard numbers.count == object.count else { throw TestFailure("GET \(url)/stats: not all numbers: \(result)") }
        return numbers
    }

    /// POST /stats/reset.
    func resetStats() throws { _ = try request("POST", "/stats/reset") }

    /// Where a finished upload is stored, from the job's result URL (…/files/NAME).
    func storedFile(resultURL: String) -> String {
        filesDirectory.appendingPathComponent((resultURL as NSString).lastPathComponent).path
    }

    /// One request with the token; its body, or an error unless the status is 200.
    private func request(_ method: String, _ path: String) throws -> String {
        let result = try Command.run(
            "/usr/bin/curl",
            ["-sS", "--max-time", "10", "-X", method, "-H", authorization, "-w", "\n%{http_code}", "\(url)\(path)"],
            timeout: 20)
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard result.status == 0, lines.last == "200" else { throw TestFailure("\(method) \(url)\(path): \(result)") }
        lines.removeLast()
        return lines.joined(separator: "\n")
    }
}
