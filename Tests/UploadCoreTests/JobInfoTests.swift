import Foundation
import Testing
import UploadWire

@testable import UploadCore

@Suite("JobInfo: the job object clients see")
struct JobInfoTests {
    func object(_ info: JobInfo) throws -> [String: Any] {
        let data = try JSONCoding.encoder.encode(info)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func usesTheSnakeCaseKeysOfTheContract() throws {
        var job = Fixtures.job(3)
        job.destination(set: "https://alice:pw@h/up/")
        let json = try object(JobInfo(job: job))
        let required = [
            "id", "state", "source", "destination", "protocol", "bytes_total", "bytes_sent", "bytes_acked", "speed",
            "eta",
            "attempts", "error", "result", "created_at", "updated_at",
        ]
        for key in required { #expect(json.keys.contains(key), "missing \(key)") }
        let camelCase = json.keys.filter { $0.contains { $0.isUppercase } }
        #expect(camelCase.isEmpty)
        #expect(json["eta"] is NSNull)
        #expect(json["error"] is NSNull)
        #expect(json["result"] is NSNull)
        #expect(json["id"] as? Int == 3)
        #expect(json["state"] as? String == "queued")
        #expect(json["protocol"] as? String == "put")
        #expect(json["bytes_total"] as? Int == 80_000_000)
        #expect(json["bytes_acked"] as? Int == 3000)
        #expect(json["created_at"] as? String == "2023-11-14T22:13:20.000Z", "ISO 8601 in UTC with milliseconds")
        #expect(json["destination"] as? String == "https://h/up/", "no password in the job object")
        #expect(json["user"] as? String == "alice")
        #expect(json["history"] == nil)
    }

    @Test func errorAndResultAreObjects() throws {
        var job = Fixtures.job(1, state: .failed)
        job.error = JobError(code: "http", message: "boom", status: 500)
        job.result = JobResult(url: "https://h/f", status: 201, body: "ok")
        let json = try object(JobInfo(job: job, includeHistory: true))
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["code"] as? String == "http")
        #expect(error["message"] as? String == "boom")
        let result = try #require(json["result"] as? [String: Any])
        #expect(result["url"] as? String == "https://h/f")
        #expect(result["status"] as? Int == 201)
        #expect((json["history"] as? [Any])?.count == 1)
    }

    @Test func etaOnlyWhileRunningWithSpeed() {
        var job = Fixtures.job(1, state: .running)
        job.bytesTotal = 1000
        job.bytesAcked = 400
        #expect(
            JobInfo(job: job, bytesSent: 500, speed: 100).eta == 5, "what reached the wire counts, acknowledged or not")
        #expect(JobInfo(job: job, bytesSent: 0, speed: 100).eta == 6)
        #expect(JobInfo(job: job, speed: 0).eta == nil)
        // A PUT acknowledges nothing until its end: its ETA still falls to 0.
        job.bytesAcked = 0
        #expect(JobInfo(job: job, bytesSent: 1000, speed: 100).eta == 0)
        #expect(JobInfo(job: job, bytesSent: 5000, speed: 100).bytesSent == 1000, "never more than the file")
        job.state = .paused
        #expect(JobInfo(job: job, speed: 100).eta == nil)
    }

    @Test func aCompletedJobReportsEveryByteSent() {
        var job = Fixtures.job(1, state: .completed)
        job.bytesTotal = 1234
        #expect(JobInfo(job: job).bytesSent == 1234)
    }

    @Test func resolvedProtocolIsShown() {
        var job = Fixtures.job(1)
        job.spec.uploadProtocol = .auto
        #expect(JobInfo(job: job).protocol == .auto)
        job.resolvedProtocol = .tus
        #expect(JobInfo(job: job).protocol == .tus)
    }

    @Test func progressEventKeys() throws {
        let event = JobProgressEvent(id: JobID(2), bytesTotal: 10, bytesSent: 5, bytesAcked: 4, speed: 1, eta: nil)
        let json = try #require(
            try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(event)) as? [String: Any])
        #expect(Set(json.keys) == ["id", "bytes_total", "bytes_sent", "bytes_acked", "speed", "eta", "revision"])
    }

    @Test func decodesWhatItEncodes() throws {
        var job = Fixtures.job(5, state: .completed)
        job.result = JobResult(url: "u", status: 200)
        let info = JobInfo(job: job, includeHistory: true)
        let decoded = try JSONCoding.decoder.decode(JobInfo.self, from: JSONCoding.encoder.encode(info))
        #expect(decoded == info)
    }

    /// Upload protocols are an open set: a newer daemon's job or remote with a protocol this client
    /// does not know still decodes, shows the name, and encodes it back unchanged.
    @Test func aProtocolThisClientDoesNotKnowIsKeptByName() throws {
        let info = JobInfo(job: Fixtures.job(6))
        var json = try object(info)
        json["protocol"] = "webtransport"
        let decoded = try JSONCoding.decoder.decode(JobInfo.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(decoded.protocolName == "webtransport" && decoded.protocol == nil)
        #expect(try object(decoded)["protocol"] as? String == "webtransport")
        let remote = try JSONCoding.decoder.decode(
            RemoteInfo.self, from: Data(#"{"name":"box","protocol":"webtransport","url":"https://h/"}"#.utf8))
        #expect(remote.protocolName == "webtransport" && remote.protocol == nil)
        #expect(RemoteInfo(name: "n", protocol: .tus, url: "u", user: nil, secretSource: nil).protocol == .tus)
    }

    @Test func datesKeepTheirMilliseconds() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let text = String(decoding: try JSONCoding.encoder.encode([date]), as: UTF8.self)
        #expect(text == #"["2023-11-14T22:13:20.250Z"]"#)
        #expect(try JSONCoding.decoder.decode([Date].self, from: Data(text.utf8)) == [date])
    }

    /// Clients and older daemons write whole-second dates; the decoder must still read them.
    @Test func wholeSecondDatesAreAccepted() throws {
        let dates = try JSONCoding.decoder.decode([Date].self, from: Data(#"["2023-11-14T22:13:20Z"]"#.utf8))
        #expect(dates == [Date(timeIntervalSince1970: 1_700_000_000)])
    }

    @Test func aDateThatIsNotISO8601IsRefused() {
        #expect(throws: DecodingError.self) {
            try JSONCoding.decoder.decode([Date].self, from: Data(#"["yesterday"]"#.utf8))
        }
    }
}

extension Job {
    fileprivate mutating func destination(set value: String) { spec.destination = value }
}
