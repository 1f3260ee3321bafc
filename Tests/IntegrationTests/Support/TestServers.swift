import Foundation

/// The real servers the test command started (contrib/test/servers.py), read from the environment
/// or from `.build/test-servers/servers.env`.
struct TestServers: Sendable {
    var nginxURL: String
    var nginxRoot: String
    var user: String
    var password: String
    var receiverURL: String
    var receiverDirectory: String
    /// The token the reference receiver requires on every request (servers.py makes a fresh one per start).
    var receiverToken: String
    /// The tus creation endpoint (tuspyserver) and where it keeps upload data, named by upload ID.
    var tusURL: String
    var tusDirectory: String
    /// SeaweedFS's S3 gateway, when the test command started it.
    var s3: S3TestServer?
    /// The second WebDAV server (WsgiDAV, not nginx), when the test command started it.
    var dav2: SecondDAV?

    struct Missing: Error, CustomStringConvertible {
        var key: String
        var description: String {
            "\(key) is not set: start the test servers first (make test does; by hand: python3 contrib/test/servers.py start)"
        }
    }

    /// The environment, with what servers.env says for the keys it does not set.
    static func environment() -> [String: String] {
        var values = ProcessInfo.processInfo.environment
        let file = TestPaths.repository.appendingPathComponent(".build/test-servers/servers.env")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                let key = String(line[..<equals])
                if values[key] == nil { values[key] = String(line[line.index(after: equals)...]) }
            }
        }
        return values
    }

    /// The value of `key`, or an error saying how to start the servers.
    static func value(_ key: String, in values: [String: String]) throws -> String {
        guard let value = values[key], !value.isEmpty else { throw Missing(key: key) }
        return value
    }

    static func load() throws -> TestServers {
        let values = environment()
        func value(_ key: String) throws -> String { try Self.value(key, in: values) }
        var servers = TestServers(
            nginxURL: try value("UPLOADD_TEST_NGINX_URL"), nginxRoot: try value("UPLOADD_TEST_NGINX_ROOT"),
            user: try value("UPLOADD_TEST_AUTH_USER"), password: try value("UPLOADD_TEST_AUTH_PASSWORD"),
            receiverURL: try value("UPLOADD_TEST_RECEIVER_URL"),
            receiverDirectory: try value("UPLOADD_TEST_RECEIVER_DIR"),
            receiverToken: try value("UPLOADD_TEST_RECEIVER_TOKEN"),
            tusURL: try value("UPLOADD_TEST_TUS_URL"), tusDirectory: try value("UPLOADD_TEST_TUS_DIR"))
        servers.s3 = S3TestServer(values)
        servers.dav2 = SecondDAV(values)
        return servers
    }

    /// uploadctl options that give the receiver its token as the `token` field (the chunked protocol's).
    var receiverTokenField: [String] { ["--field", "token=\(receiverToken)"] }
    /// The receiver's token as a header, for curl `-H` and uploadctl `--header` (how POST /form takes it).
    var receiverAuthorization: String { "Authorization: Bearer \(receiverToken)" }
}

/// The second WebDAV server (WsgiDAV under cheroot, contrib/test/dav2_app.py): RFC 4918 rules, so a PUT
/// into a missing folder gets 409 and MKCOL makes one folder at a time. Basic auth on both shares.
struct SecondDAV: Sendable {
    /// A writable share (no trailing slash); its files are under `root`.
    var url: String
    var root: String
    var user: String
    var password: String
    /// A share that answers MKCOL with 403 but takes PUTs into folders that exist (make them under
    /// `noMkcolRoot`, its files on disk).
    var noMkcolURL: String
    var noMkcolRoot: String

    /// Nil unless every UPLOADD_TEST_DAV2_* value is set.
    init?(_ values: [String: String]) {
        func value(_ key: String) -> String? { values[key].flatMap { $0.isEmpty ? nil : $0 } }
        guard let url = value("UPLOADD_TEST_DAV2_URL"), let root = value("UPLOADD_TEST_DAV2_ROOT"),
            let user = value("UPLOADD_TEST_DAV2_USER"), let password = value("UPLOADD_TEST_DAV2_PASSWORD"),
            let noMkcolURL = value("UPLOADD_TEST_DAV2_NOMKCOL_URL"),
            let noMkcolRoot = value("UPLOADD_TEST_DAV2_NOMKCOL_ROOT")
        else { return nil }
        self.url = url
        self.root = root
        self.user = user
        self.password = password
        self.noMkcolURL = noMkcolURL
        self.noMkcolRoot = noMkcolRoot
    }
}

/// Where the binaries and the scratch space are.
enum TestPaths {
    /// The directory holding the test bundle, uploadd and uploadctl (or UPLOADD_BIN_DIR).
    static var binaries: URL {
        if let directory = ProcessInfo.processInfo.environment["UPLOADD_BIN_DIR"] {
            return URL(fileURLWithPath: directory)
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("uploadd").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug")
    }

    /// The repository root (the directory with Package.swift above the binaries).
    static var repository: URL {
        var url = binaries
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }

    /// A fresh directory under .build/itest (not /tmp: the systemd tests mount their own /tmp).
    static func scratch(_ name: String) throws -> URL {
        let url = repository.appendingPathComponent(".build/itest/\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
