import Testing

@testable import UploadDaemon

/// `ServerCounts` keeps a short list, then a dictionary: both must count alike.
@Suite struct ServerCountsTests {
    @Test(arguments: [1, ServerCounts.listed, ServerCounts.listed + 1, 3 * ServerCounts.listed])
    func countsAddsAndRemovesOfEachServer(servers: Int) {
        var counts = ServerCounts()
        let names = (0..<servers).map { "https://host-\($0).example:443" }
        for (index, name) in names.enumerated() {
            for _ in 0...index { counts.add(name) }
        }
        for (index, name) in names.enumerated() {
            // A copy made apart compares by its bytes, not by the string it came from.
            #expect(counts[String(decoding: Array(name.utf8), as: UTF8.self)] == index + 1)
        }
        #expect(counts["https://elsewhere"] == 0)
        #expect(counts.contains { $0 == names.last })

        for name in names { counts.remove(name) }
        #expect(counts[names[0]] == 0, "a count that reaches zero goes")
        #expect(!counts.contains { $0 == names[0] })
        if servers > 1 { #expect(counts[names[1]] == 1) }
        counts.remove("https://elsewhere")
        #expect(counts["https://elsewhere"] == 0, "removing what was never added changes nothing")
    }
}
