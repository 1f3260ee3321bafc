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
            journalDamage: "12 bytes set aside", configWarnings: ["w"], configErrors: ["e"], bandwidthLimit: 5,
            conditions: DaemonConditions(metered: true, onBattery: nil, waiting: ["network": 2]))
        status.folderProblems = ["[folder shots] /home/u/shots does not exist"]
        let fields = Mirror(reflecting: status).children.count
        let full = try JSONSerialization.jsonObject(with: JSONEncoder().encode(status)) as? [String: Any]
        #expect(full?.count == fields, "\(full?.keys.sorted() ?? [])")

        status.bandwidthLimit = nil
        let text = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
        #expect(text.contains("\"bandwidth_limit\":null"), "\(text)")
        #expect(text.contains("\"on_battery\":null"), "a value not known is there as null: \(text)")
        let decoded = try JSONDecoder().decode(DaemonStatus.self, from: Data(text.utf8))
        #expect(decoded.conditions == status.conditions)
        #expect(decoded.folderProblems == status.folderProblems)
        status.folderProblems = nil
        #expect(!String(decoding: try JSONEncoder().encode(status), as: UTF8.self).contains("folder_problems"))
    }

    /// An older daemon has no `conditions`: uploadctl still reads its status.
    @Test func aStatusWithoutConditionsStillDecodes() throws {
        let old = #"""
            {"version":"1.0","pid":1,"uptime":2,"jobs":{},"speed":0,"max_transfers":4,"state_directory":"/s",
            "cache_directory":"/c","socket":"/x","journal_bytes":0,"config_warnings":[]}
            """#
        let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(old.utf8))
        #expect(status.conditions == nil)
    }
}
