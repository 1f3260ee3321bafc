import Foundation
import Glibc

/// The matrix of real servers in their default configurations (issue 48), as
/// `contrib/test/servers.py start` describes them in matrix.json (`UPLOADD_TEST_MATRIX`); the keys
/// are explained above `matrix_entry` in servers.py. Tests pick servers by name or by protocol:
///
///     let matrix = try ServerMatrix.load()
///     for server in matrix.servers(protocol: "put") { ... server.remoteSection(named: "s") ... }
struct ServerMatrix: Sendable {
    var servers: [Server]

    struct Server: Sendable, Decodable {
        var name: String
        var software: String
        var version: String
        /// put, post, tus or s3 (uploadctl add --protocol).
        var `protocol`: String
        /// Where uploads go: a folder URL ending in / (put, post), the tus endpoint, or s3://BUCKET/.
        var url: String
        /// Where uploaded files land on disk, when they are plain files there.
        var root: String?
        /// How a URL maps to a file under root: path, name, name-increment or upload-id.
        var layout: String
        /// basic, bearer (headers carry it), field (fields carry it), sigv4, sigv4-unchecked (any keys
        /// are taken) or none.
        var auth: String
        var user: String?
        var password: String?
        var headers: [String: String]
        var fields: [String: String]
        /// post: the form part that carries the file.
        var fileField: String?
        var s3: S3?
        /// What a PUT or POST into a missing folder gets (201: the server makes folders).
        var missingFolder: Int?
        var maxBody: Int64?
        var maxBodyStatus: Int?
        /// Whether it answers `Expect: 100-continue` with 100 Continue.
        var expect100: Bool
        var http: String
        var keepAlive: Bool
        /// Nil when a DELETE removes what an upload left; else why the server cannot.
        var cannotDelete: String?
        /// The server's own bugs in its default configuration, as {KEY: why} (servers.py lists the keys).
        var defects: [String: String]?
        var notes: String

        /// Whether a wrong password, token or secret is refused (auth other than none and
        /// sigv4-unchecked).
        var checksCredentials: Bool { !["none", "sigv4-unchecked"].contains(auth) }

        struct S3: Sendable, Decodable {
            var endpoint: String
            var bucket: String
            var region: String
            var accessKey: String
            var secretKey: String
            var pathStyle: Bool?

            enum CodingKeys: String, CodingKey {
                case endpoint, bucket, region
                case accessKey = "access_key"
                case secretKey = "secret_key"
                case pathStyle = "path_style"
            }
        }

        enum CodingKeys: String, CodingKey {
            case name, software, version, `protocol`, url, root, layout, auth, user, password, headers, fields, s3
            case http, notes, defects
            case fileField = "file_field"
            case cannotDelete = "cannot_delete"
            case missingFolder = "missing_folder"
            case maxBody = "max_body"
            case maxBodyStatus = "max_body_status"
            case expect100 = "expect_100"
            case keepAlive = "keep_alive"
        }

        /// An uploadd.conf `[remote NAME]` section that uploads to this server with its credentials
        /// (`password` replaces the right one, the S3 secret and a token in a header or a field too:
        /// a wrong password for the tests that want one). `passwordFile`: where the password or S3
        /// secret is written (uploadd reads secrets from files).
        func remoteSection(named remote: String, passwordFile: String, password: String? = nil) throws -> String {
            var lines = ["[remote \(remote)]", "protocol = \(self.protocol)", "url = \(url)"]
            func writeSecret(_ secret: String) throws {
                try (secret + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
                chmod(passwordFile, 0o600)
            }
            if let user {
                try writeSecret(password ?? self.password ?? "")
                lines += ["user = \(user)", "password_file = \(passwordFile)"]
            }
            if let s3 {
                try writeSecret(password ?? s3.secretKey)
                lines += [
                    "endpoint = \(s3.endpoint)", "region = \(s3.region)", "access_key_id = \(s3.accessKey)",
                    "secret_access_key_file = \(passwordFile)",
                ]
                if let pathStyle = s3.pathStyle { lines.append("path_style = \(pathStyle)") }
            }
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                lines.append("header = \(name): \(password.map { _ in "Bearer wrong" } ?? value)")
            }
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                lines.append("field = \(name)=\(auth == "field" ? password ?? value : value)")
            }
            if let fileField { lines.append("file_field = \(fileField)") }
            return lines.joined(separator: "\n") + "\n"
        }

        /// Where a file uploaded as `path` under `url` lands on disk, for layouts that say so.
        func storedPath(_ path: String) -> String? {
            guard let root else { return nil }
            switch layout {
            case "path": return root + "/" + path
            case "name": return root + "/" + (path as NSString).lastPathComponent
            default: return nil
            }
        }
    }

    /// The server named `name`, or an error saying the matrix lacks it.
    func server(_ name: String) throws -> Server {
        guard let server = servers.first(where: { $0.name == name }) else {
            throw TestServers.Missing(key: "\(name) in UPLOADD_TEST_MATRIX")
        }
        return server
    }

    func servers(protocol uploadProtocol: String) -> [Server] { servers.filter { $0.protocol == uploadProtocol } }

    static func load() throws -> ServerMatrix {
        let path = try TestServers.value("UPLOADD_TEST_MATRIX", in: TestServers.environment())
        struct File: Decodable { var servers: [Server] }
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        return ServerMatrix(servers: file.servers)
    }
}

/// contrib/test/scripted_http.py: one scenario per first path segment (its docstring lists them),
/// every request it answered logged as a JSON line.
struct ScriptedServer: Sendable {
    /// http://127.0.0.1:PORT, no trailing slash.
    var url: String
    /// The listener cross-307 sends clients to.
    var otherURL: String
    /// Where PUT and POST bodies land: `files/SCENARIO/PATH` is `directory/SCENARIO/PATH`.
    var directory: String
    var logPath: String

    static func load() throws -> ScriptedServer {
        let values = TestServers.environment()
        func value(_ key: String) throws -> String { try TestServers.value(key, in: values) }
        return ScriptedServer(
            url: try value("UPLOADD_TEST_SCRIPTED_URL"), otherURL: try value("UPLOADD_TEST_SCRIPTED_OTHER_URL"),
            directory: try value("UPLOADD_TEST_SCRIPTED_DIR"), logPath: try value("UPLOADD_TEST_SCRIPTED_LOG"))
    }

    /// The stored file of `path` in `scenario` (for S3 scenarios, the scenario is the bucket and
    /// `path` the key).
    func stored(_ scenario: String, _ path: String) -> String { "\(directory)/\(scenario)/\(path)" }

    /// One request the server answered.
    struct Request: Sendable, Decodable {
        var listener: String
        var scenario: String
        var method: String
        var target: String
        var headers: [[String]]
        var bodyLength: Int?
        var status: Int

        enum CodingKeys: String, CodingKey {
            case listener, scenario, method, target, headers, status
            case bodyLength = "body_length"
        }

        func header(_ name: String) -> String? {
            headers.first { $0.first?.lowercased() == name.lowercased() }.flatMap { $0.count > 1 ? $0[1] : nil }
        }
    }

    /// The requests logged so far whose target starts with `prefix` (a scenario and a path unique
    /// to the test).
    func requests(under prefix: String) throws -> [Request] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        let decoder = JSONDecoder()
        return text.split(separator: "\n").compactMap { line in
            try? decoder.decode(Request.self, from: Data(line.utf8))
        }.filter { $0.target.hasPrefix(prefix) }
    }
}
