import Testing
import UploadWire

@testable import UploadCore

/// What a queued job costs in memory: a million of them are a queue users have (issue 51). A job
/// is one heap object, its fields behind a 16-byte header, in malloc's 16-byte steps with 8 of
/// its own: fields of up to 232 bytes take a 256-byte block, and one byte more takes 272.
@Suite struct JobLayoutTests {
    @Test func aJobsFieldsFitA256ByteBlock() {
        #expect(MemoryLayout<Job.Fields>.size <= 232, "declare new fields where they pack, or out of line")
        #expect(MemoryLayout<JobSpec>.size <= 44)
        #expect(MemoryLayout<SourceSnapshot?>.size <= 81)
    }

    @Test func aJobWithOneEventHasNoArrayOfThem() {
        var job = Job(id: JobID(1), spec: JobSpec(source: "/f", destination: "file:///o/"), createdAt: .now)
        job.record("added", at: .now)
        guard case .one = job.storage.fields.history else {
            Issue.record("one event is kept inline, got \(job.storage.fields.history)")
            return
        }
        job.record("started", at: .now)
        #expect(job.history.map(\.message) == ["added", "started"])
        for index in 0..<30 { job.record("event \(index)", at: .now) }
        #expect(job.history.count == Job.historyLimit && job.lastEvent?.message == "event 29")
    }

    @Test func theJobsOfAnAddShareTheirOptions() {
        var sharer = AddOptionsSharer()
        var first = JobSpec(source: "/a", destination: "file:///o/", headers: [KeyValue(name: "X", value: "1")])
        var second = JobSpec(source: "/b", destination: "file:///o/", headers: [KeyValue(name: "X", value: "1")])
        sharer.share(&first)
        sharer.share(&second)
        #expect(first.options.box != nil && first.options.box === second.options.box)
        second.user = "me"
        #expect(first.user == nil && second.user == "me" && second.headers == first.headers)
        #expect(JobSpec(source: "/c", destination: "file:///o/").options.box == nil)
    }

    /// The token names one job, so it is kept out of line; a priority is two bytes.
    @Test func aClientTokenAndAPriorityReadBackAsSet() {
        var spec = JobSpec(source: "/a", destination: "file:///o/", priority: -1000, clientToken: "t-1")
        #expect(spec.clientToken == "t-1" && spec.priority == -1000)
        spec.clientToken = nil
        spec.priority = 1000
        #expect(spec.clientToken == nil && spec.options.box == nil && spec.priority == 1000)
        spec.priority = .max
        #expect(spec.priority == Int(Int16.max), "clamped: job.add takes -1000 to 1000")
    }
}
