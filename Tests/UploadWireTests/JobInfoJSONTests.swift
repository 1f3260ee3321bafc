import Foundation
import TestSupport
import Testing

@testable import UploadWire

/// The hand-written JSON of jobs (`JobInfo.jsonBytes`) against JSONCoding.encoder: the same bytes.
@Suite struct JobInfoJSONTests {
    static let awkward = [
        "", "plain", "quote \" and \\ backslash", "slash / and url http://h/a?b=c#d", "tab\tnew\nline\r",
        "\u{0}\u{1}\u{8}\u{c}\u{1f}\u{7f}", "é ü 日本 😀", "\u{2028}\u{2029}", "%20%C3%A9",
    ]

    static func randomJob(_ random: inout SeededRandom) -> JobInfo {
        func text() -> String { awkward.randomElement(using: &random)! + String(random.next() % 1000) }
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
        func date() -> Date {
            Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000) + Double(random.next() % 1000) / 1000)
        }
        let doubles: [Double] = [
            0, 1, 1.5, 0.1, 1e20, 2.5e-7, 123456.789, 1.0 / 3, 1e16, 12_345_678_901_234_568, .leastNonzeroMagnitude,
        ]
        var job = JobInfo(
            id: JobID(random.next() % 1_000_000 + 1), state: JobState.allCases.randomElement(using: &random)!,
            source: text(), destination: text(), protocol: UploadProtocol.allCases.randomElement(using: &random)!,
            bytesTotal: Int64(random.next() % (1 << 40)), bytesSent: Int64(random.next() % 1000),
            bytesAcked: Int64(random.next() % 1000), speed: doubles.randomElement(using: &random)!,
            eta: maybe(doubles.randomElement(using: &random)!), attempts: Int(random.next() % 9),
            priority: Int(random.next() % 2001) - 1000,
            error: maybe(JobError(code: text(), message: text(), status: maybe(Int(random.next() % 600)))),
            result: maybe(JobResult(url: maybe(text()), status: maybe(201), body: maybe(text()))), createdAt: date(),
            updatedAt: date(), nextAttemptAt: maybe(date()), snapshot: maybe(text()), user: maybe(text()),
            history: maybe((0..<Int(random.next() % 4)).map { _ in JobEvent(at: date(), message: text()) }),
            waiting: maybe(text()), image: maybe(text()),
            prepared: maybe(
                PreparedInfo(
                    size: 5, originalSize: 9, sha256: text(), fileName: maybe(text()), contentType: maybe(text()),
                    details: [text(): text(), "width": "10"])),
            batch: maybe(JobID(random.next() % 100 + 1)), revision: random.next() % 10_000,
            clientToken: maybe(text()), metadata: maybe([text(): text(), text(): text(), "Z": "1", "a": "2"]))
        // From the ID, not from `random`: the other jobs stay the ones the seeds always made.
        job.activity = job.id.rawValue % 2 == 0 ? job.source : nil
        job.position = job.id.rawValue % 3 == 0 ? nil : Int(job.id.rawValue % 1000) + 1
        return job
    }

    @Test func theSameBytesAsJSONEncoderForThousandsOfRandomJobs() throws {
        var random = SeededRandom(seed: 42)
        for _ in 0..<3000 {
            let job = Self.randomJob(&random)
            let expected = [UInt8](try JSONCoding.encoder.encode(job))
            #expect(
                job.jsonBytes == expected,
                "\(String(decoding: job.jsonBytes, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
            if job.jsonBytes != expected { return }
        }
    }

    @Test func listsWithAndWithoutErrorsAndPages() throws {
        var random = SeededRandom(seed: 7)
        let jobs = (0..<5).map { _ in Self.randomJob(&random) }
        for list in [
            JobList(jobs: jobs), JobList(jobs: []),
            JobList(
                jobs: jobs,
                errors: [
                    JobFailure(id: JobID(3), error: RPCError(code: -32001, message: "no job 3")),
                    JobFailure(source: "/a \"b\"", error: RPCError(code: -32003, message: "gone")),
                ]),
            JobList(jobs: jobs, next: JobID(12)),
        ] {
            #expect(list.jsonBytes == [UInt8](try JSONCoding.encoder.encode(list)))
        }
    }

    /// The room reserved ahead for the jobs goes by the first job's bytes: a bulk command's many
    /// errors, written before the jobs, must not make it ask for gigabytes (review of 3d20375).
    @Test func theRoomReservedForTheJobsGoesByTheFirstJobAlone() throws {
        var random = SeededRandom(seed: 5)
        let jobs = [JobInfo](repeating: Self.randomJob(&random), count: 2_000)
        let errors = (0..<20_000).map {
            JobFailure(id: JobID(UInt64($0)), error: RPCError(code: -32001, message: "no job \($0)"))
        }
        let bytes = JobList(jobs: jobs, errors: errors).jsonBytes
        #expect(bytes.capacity < bytes.count * 3, "\(bytes.capacity) reserved for \(bytes.count) bytes")
        #expect(bytes == [UInt8](try JSONCoding.encoder.encode(JobList(jobs: jobs, errors: errors))))
    }

    @Test func onlyTheFieldsAskedForAndAStatusDecodesFromThemOrFromTheWholeJob() throws {
        var random = SeededRandom(seed: 11)
        let names = JobInfo.fieldNames.sorted()
        #expect(names.count == 30 && names.contains("updated_at") && names.contains("client_token"))
        #expect(JobFields.names == names)
        // Each key's bit is its name's: `bytesAcked` is "bytes_acked".
        let snakeCased = JobFields.Key.allCases.map { key in
            String(describing: key).reduce(into: "") { name, character in
                name += character.isUppercase ? "_" + character.lowercased() : String(character)
            }
        }
        #expect(snakeCased == names)
        #expect(JobFields(names: ["error", "nope"]) == nil)
        for round in 0..<500 {
            let job = Self.randomJob(&random)
            let fields = round == 0 ? Set(JobStatus.fields) : Set(names.filter { _ in random.next() % 3 == 0 })
            let only = try #require(JobFields(names: fields))
            let whole = try #require(try JSONSerialization.jsonObject(with: Data(job.jsonBytes)) as? NSDictionary)
            let narrowed = try #require(
                try JSONSerialization.jsonObject(with: Data(job.jsonBytes(only: only))) as? NSDictionary)
            let expected = NSDictionary(
                dictionary: Dictionary(
                    uniqueKeysWithValues: whole.compactMap { key, value in
                        fields.contains(key as! String) ? (key as! String, value) : nil
                    }))
            #expect(narrowed == expected, "\(fields.sorted())")
            // As the client reads it (dates to the millisecond).
            let read = JobStatus(try JSONCoding.decoder.decode(JobInfo.self, from: Data(job.jsonBytes)))
            if fields.isSuperset(of: JobStatus.fields) {
                #expect(try JSONCoding.decoder.decode(JobStatus.self, from: Data(job.jsonBytes(only: only))) == read)
                #expect(JobStatus(json: try JSONValue(parsing: job.jsonBytes(only: only))) == read)
            }
            #expect(try JSONCoding.decoder.decode(JobStatus.self, from: Data(job.jsonBytes)) == read)
            #expect(JobStatus(json: try JSONValue(parsing: job.jsonBytes)) == read)
        }
        let list = JobList(jobs: [Self.randomJob(&random)]).jsonBytes(only: JobFields(names: ["id", "state"]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(list)) as? [String: [[String: Any]]])
        #expect(object["jobs"]?.first?.keys.sorted() == ["id", "state"])
    }

    /// `JobStatus(json:)` reads what `init(from:)` reads and refuses what it refuses.
    @Test func aStatusReadByHandAgreesWithItsDecoder() throws {
        let base = #"{"id":7,"state":"failed","updated_at":"2026-12-01T11:37:42.814Z""#
        let cases = [
            base + "}", base + #","revision":3}"#, base + #","revision":null,"waiting":null,"error":null}"#,
            base + #","error":{"code":"http","message":"no","status":500},"waiting":"the network"}"#,
            base + #","next_attempt_at":"2026-12-01T11:37:43Z","size":12,"extra":[1,{"a":null}]}"#,
            base + #","revision":-1}"#, base + #","revision":1.5}"#, base + #","revision":"3"}"#,
            base + #","error":{"message":"no code"}}"#, base + #","error":"text"}"#, base + #","waiting":4}"#,
            base + #","next_attempt_at":"soon"}"#, base + #","next_attempt_at":12}"#,
            #"{"id":7,"state":"failed"}"#, #"{"id":0.5,"state":"failed","updated_at":"2026-12-01T11:37:42Z"}"#,
            #"{"id":7,"state":"sleeping","updated_at":"2026-12-01T11:37:42Z"}"#,
            #"{"id":"7","state":"failed","updated_at":"2026-12-01T11:37:42Z"}"#,
            #"{"id":7,"state":"failed","updated_at":"yesterday"}"#, "[1]", "null", #""job""#,
        ]
        var refused = 0
        for text in cases {
            let decoded = try? JSONCoding.decoder.decode(JobStatus.self, from: Data(text.utf8))
            #expect(JobStatus(json: try JSONValue(parsing: Array(text.utf8))) == decoded, "\(text)")
            if decoded == nil { refused += 1 }
        }
        #expect(refused == 16)
    }
}
