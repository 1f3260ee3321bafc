import Foundation
import Testing
import UploadWire

/// One client's adds in flight at once take their IDs in the order their lines were sent, however
/// the daemon's tasks happen to run (issue 49, item 5).
@Suite(.serialized)
final class AddOrderTests {
    let daemon: DaemonProcess
    let files: URL

    init() throws {
        daemon = try DaemonProcess(name: "add-order")
        files = try TestPaths.scratch("add-order-files")
        try daemon.start()
    }

    deinit { daemon.stop() }

    /// A big batch of adds, then two small ones, sent in one write: the small ones are read in a
    /// moment and used to reach the queue first, taking the lower IDs. Their IDs must come after
    /// the big batch's, as the lines came.
    @Test func smallAddsSentAfterABigOneTakeTheLaterIDs() throws {
        let folder = files.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let paths = try (0..<1_502).map { index in
            let path = folder.appendingPathComponent("f\(index).txt").path
            try "file \(index)\n".write(toFile: path, atomically: false, encoding: .utf8)
            return path
        }
        let destination = "file://\(files.path)/out/"
        for round in 0..<3 {
            let raw = try RawClient(daemon.socket)
            let lines = [Array(paths[0..<1_500]), [paths[1_500]], [paths[1_501]]].enumerated().map { line, sources in
                Self.addBatch(sources, to: destination, firstID: (round * 10 + line) * 10_000)
            }
            #expect(raw.send(Array(lines.joined(separator: "\n").utf8) + [UInt8(ascii: "\n")]))
            var idsByLine: [Int: [UInt64]] = [:]
            for _ in lines {
                guard case .line(let bytes) = raw.readLine(timeout: 60) else {
                    Issue.record("an answer did not come")
                    return
                }
                let answers = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [[String: Any]])
                for answer in answers {
                    let requestID = try #require(answer["id"] as? Int)
                    let job = try #require(answer["result"] as? [String: Any], "\(answer)")
                    let jobID = try #require((job["id"] as? NSNumber)?.uint64Value)
                    idsByLine[requestID / 10_000 % 10, default: []].append(jobID)
                }
            }
            let big = idsByLine[0] ?? []
            let (second, third) = (idsByLine[1] ?? [], idsByLine[2] ?? [])
            #expect(big.count == 1_500 && second.count == 1 && third.count == 1, "round \(round): \(idsByLine)")
            #expect(big == big.sorted(), "round \(round)")
            #expect(
                big.allSatisfy { $0 < second[0] } && second[0] < third[0],
                "round \(round): the big batch got \(big.min() ?? 0)–\(big.max() ?? 0), then \(second) and \(third)")
        }
    }

    /// A JSON-RPC batch of `job.add`s, numbered from `firstID`.
    static func addBatch(_ sources: [String], to destination: String, firstID: Int) -> String {
        let requests = sources.enumerated().map { index, source in
            let params: [String: Any] = ["source": source, "destination": destination, "job_fields": ["id"]]
            let object: [String: Any] = [
                "jsonrpc": "2.0", "id": firstID + index, "method": "job.add", "params": params,
            ]
            return String(
                decoding: try! JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]),
                as: UTF8.self)
        }
        return "[" + requests.joined(separator: ",") + "]"
    }
}
