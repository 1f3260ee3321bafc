import Foundation

/// The scripted raw HTTP server (contrib/test/scripted_http.py) as servers.env names it: one
/// scenario per first path segment, which is the bucket for its S3 scenarios.
struct ScriptedServer: Sendable {
    /// `http://HOST:PORT`, no trailing slash: the S3 endpoint, and a scenario is `url/NAME/…`.
    var url: String
    /// Where it stores bodies: `directory/SCENARIO/PATH` (for S3, `directory/BUCKET/KEY`).
    var directory: String

    static func load() throws -> ScriptedServer {
        let values = TestServers.environment()
        let url = try TestServers.value("UPLOADD_TEST_SCRIPTED_URL", in: values)
        return ScriptedServer(
            url: url.hasSuffix("/") ? String(url.dropLast()) : url,
            directory: try TestServers.value("UPLOADD_TEST_SCRIPTED_DIR", in: values))
    }

    /// The stored file of `path` in `scenario`.
    func stored(_ scenario: String, _ path: String) -> String { "\(directory)/\(scenario)/\(path)" }
}

/// One server of the matrix (UPLOADD_TEST_MATRIX, contrib/test/servers.py), with only the keys
/// these tests read: where uploads go and where their bytes land.
struct MatrixServerEntry: Sendable, Decodable {
    var name: String
    var url: String
    var root: String?

    /// The entry named `name`.
    static func named(_ name: String) throws -> MatrixServerEntry {
        let path = try TestServers.value("UPLOADD_TEST_MATRIX", in: TestServers.environment())
        struct Matrix: Decodable { var servers: [MatrixServerEntry] }
        let matrix = try JSONDecoder().decode(Matrix.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        guard let entry = matrix.servers.first(where: { $0.name == name }) else {
            throw TestFailure("the matrix (\(path)) has no server \(name): start it with contrib/test/servers.py")
        }
        return entry
    }
}
