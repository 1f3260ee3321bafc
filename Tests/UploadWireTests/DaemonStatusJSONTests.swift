import Foundation
import Testing

@testable import UploadWire

/// `DaemonStatus` is encoded by hand (so that `bandwidth_limit` is there even when null): a
/// field added to the struct but not to `encode(to:)` would vanish from `daemon.status`.
struct DaemonStatusJSONTests {
    @Test func everyFieldIsEncodedAndTheLimitIsNullWhenNone() throws {
        var status = DaemonStatus(
            version: "1.2", pid: 99, uptime: 7, jobs: ["queued": 1], speed: 3, maxTransfers: 4,
            stateDirectory: "/state", cacheDirectory: "/cache", socket: "/run/s.sock", journalBytes: 12,
            journalDamage: "12 bytes set aside", configWarnings: ["w"], configErrors: ["e"], bandwidthLimit: 5)
        let fields = Mirror(reflecting: status).children.count
        let full = try JSONSerialization.jsonObject(with: JSONEncoder().encode(status)) as? [String: Any]
        #expect(full?.count == fields, "\(full?.keys.sorted() ?? [])")

        status.bandwidthLimit = nil
        let text = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
        #expect(text.contains("\"bandwidth_limit\":null"), "\(text)")
    }
}
