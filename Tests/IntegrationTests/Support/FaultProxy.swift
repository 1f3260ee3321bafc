import Foundation
import Glibc

/// contrib/test/faultproxy.py, started by a test in front of one real server and stopped with it:
/// a TCP proxy on 127.0.0.1 that injects one fault per new connection, following a plan.
final class FaultProxy: @unchecked Sendable {
    // Invariant: used from one test at a time (the suite is serialized).
    let port: Int
    let controlPort: Int
    let upstreamPort: Int
    private var process: ChildProcess?

    /// `http://127.0.0.1:PORT`: the proxy's address, to use in place of the server's.
    var url: String { "http://127.0.0.1:\(port)" }

    /// What a connection gets; see contrib/test/faultproxy.py for the details.
    enum Fault: Sendable {
        case pass
        /// Forward `bytes` from the client, then reset both sides.
        case resetAfter(bytes: Int)
        /// Forward `after` bytes, then drop what the client sends and send nothing for `seconds`.
        case stall(seconds: Double, after: Int = 0)
        /// Forward at `rate` bytes/s ("up", "down" or "both").
        case trickle(rate: Int, direction: String = "up")
        /// Answer `status` (with `Retry-After` when given) once the request's headers are in.
        case respond(status: Int, retryAfter: String? = nil)
        /// Close once `bytes` of the server's answers reached the client.
        case truncate(bytes: Int)
        /// Close `bodyBytes` into the body of the connection's `answer`-th answer (from 1, 1xx not counted).
        case truncateBody(answer: Int, bodyBytes: Int)
        /// Close inside the head of the connection's `answer`-th answer, just before its header `name`.
        case truncateHead(answer: Int, beforeHeader: String)
        /// Close at once.
        case drop
        /// Forward `after` bytes, then reset every connection and refuse new ones for `seconds`.
        case down(after: Int, seconds: Double)

        var json: [String: Any] {
            switch self {
            case .pass: return ["kind": "pass"]
            case .resetAfter(let bytes): return ["kind": "reset_after", "bytes": bytes]
            case .stall(let seconds, let after): return ["kind": "stall", "seconds": seconds, "after": after]
            case .trickle(let rate, let direction): return ["kind": "trickle", "rate": rate, "direction": direction]
            case .respond(let status, let retryAfter):
                var fault: [String: Any] = ["kind": "respond", "status": status]
                if let retryAfter { fault["retry_after"] = retryAfter }
                return fault
            case .truncate(let bytes): return ["kind": "truncate", "bytes": bytes]
            case .truncateBody(let answer, let bodyBytes):
                return ["kind": "truncate", "response": answer, "body_bytes": bodyBytes]
            case .truncateHead(let answer, let name):
                return ["kind": "truncate", "response": answer, "before_header": name]
            case .drop: return ["kind": "drop"]
            case .down(let after, let seconds): return ["kind": "down", "after": after, "seconds": seconds]
            }
        }
    }

    /// Starts the proxy in front of the server at `upstream` (a URL or `host:port` on 127.0.0.1).
    init(upstream: String) throws {
        guard let components = URLComponents(string: upstream.contains("://") ? upstream : "tcp://\(upstream)"),
            components.host == "127.0.0.1", let upstreamPort = components.port
        else { throw TestFailure("the fault proxy only fronts 127.0.0.1:PORT, not \(upstream)") }
        self.upstreamPort = upstreamPort
        let directory = try TestPaths.scratch("faultproxy")
        let output = directory.appendingPathComponent("proxy.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            TestPaths.repository.appendingPathComponent("contrib/test/faultproxy.py").path,
            "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(upstreamPort)", "--control", "127.0.0.1:0",
        ]
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        var ports: (Int, Int)?
        _ = eventually(timeout: 10) {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            let words = text.split(whereSeparator: \.isWhitespace)
            if let at = words.firstIndex(of: "listening"), words.count >= at + 6, let proxy = Int(words[at + 2]),
                let control = Int(words[at + 5])
            {
                ports = (proxy, control)
            }
            return ports != nil || !process.isRunning
        }
        guard let ports else {
            if process.isRunning { process.terminate() }
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw TestFailure("faultproxy.py did not start:\n\(text)")
        }
        (port, controlPort) = ports
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

    /// The faults for the next new connections, in order; then `otherwise` for every later one
    /// (nil: pass-through).
    func plan(_ faults: [Fault], otherwise: Fault? = nil) throws {
        var body: [String: Any] = ["faults": faults.map(\.json)]
        body["default"] = otherwise?.json ?? NSNull()
        _ = try control("POST", "/plan", body)
    }

    /// A server restart: every open connection is reset and new ones are refused for `seconds`.
    func down(seconds: Double) throws { _ = try control("POST", "/down", ["seconds": seconds]) }

    func stats() throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: Data(try control("GET", "/stats", nil).utf8))
    }

    private func control(_ method: String, _ path: String, _ body: [String: Any]?) throws -> String {
        var arguments = ["-s", "-S", "--max-time", "10", "-X", method, "http://127.0.0.1:\(controlPort)\(path)"]
        if let body {
            let data = try JSONSerialization.data(withJSONObject: body)
            arguments += [
                "-H", "Content-Type: application/json", "--data-binary", String(decoding: data, as: UTF8.self),
            ]
        }
        let result = try Command.run("/usr/bin/curl", arguments + ["-w", "\n%{http_code}"], timeout: 15)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard result.status == 0, lines.last == "200" else {
            throw TestFailure("fault proxy control \(method) \(path) failed: \(result)")
        }
        return lines.dropLast().joined(separator: "\n")
    }

    /// GET /stats: counters and what happened on every connection. Times are Unix seconds.
    struct Stats: Decodable {
        var connections: Int
        var active: Int
        var bytesUp: Int
        var bytesDown: Int
        var refusing: Bool
        var downs: [Down]
        var conns: [Connection]
        var requests: [Request]
        var responses: [Response]

        struct Down: Decodable {
            var start: Double
            var end: Double?
        }

        struct Connection: Decodable {
            var id: Int
            var opened: Double
            var closed: Double?
            var up: Int
            var down: Int
            var lastUp: Double?
            var faultAt: Double?
            var closedBy: String?
            enum CodingKeys: String, CodingKey {
                case id, opened, closed, up, down
                case lastUp = "last_up"
                case faultAt = "fault_at"
                case closedBy = "closed_by"
            }
        }

        struct Request: Decodable {
            var t: Double
            var conn: Int
            var method: String
            var path: String
        }

        struct Response: Decodable {
            var t: Double
            var conn: Int
            var status: Int
            var injected: Bool
        }

        enum CodingKeys: String, CodingKey {
            case connections, active, refusing, downs, conns, requests, responses
            case bytesUp = "bytes_up"
            case bytesDown = "bytes_down"
        }

        /// For each injected answer followed by another request: seconds from the answer to that request.
        var gapsAfterInjectedAnswers: [Double] {
            responses.filter(\.injected).compactMap { answer in
                requests.first(where: { $0.t > answer.t })?.t.advanced(by: -answer.t)
            }
        }
    }
}

/// The TLS nginx contrib/test/servers.py started (a private CA, a certificate for 127.0.0.1, and one
/// for another name), read from the environment or from `.build/test-servers/servers.env`.
struct TLSTestServer: Sendable {
    var url: String
    /// The same files, served by a server that offers HTTP/2.
    var http2URL: String
    var root: String
    var caFile: String
    var wrongNameURL: String
    /// nginx's log of every request, with its protocol (`"PUT /dav/x HTTP/2.0"`).
    var accessLog: String

    static func load() throws -> TLSTestServer {
        let values = TestServers.environment()
        func value(_ key: String) throws -> String { try TestServers.value(key, in: values) }
        return TLSTestServer(
            url: try value("UPLOADD_TEST_TLS_URL"), http2URL: try value("UPLOADD_TEST_TLS_H2_URL"),
            root: try value("UPLOADD_TEST_TLS_ROOT"), caFile: try value("UPLOADD_TEST_TLS_CA"),
            wrongNameURL: try value("UPLOADD_TEST_TLS_WRONG_NAME_URL"),
            accessLog: try value("UPLOADD_TEST_TLS_ACCESS_LOG"))
    }
}
