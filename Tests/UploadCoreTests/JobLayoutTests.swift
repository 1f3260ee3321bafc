import Testing
import UploadWire

@testable import UploadCore

/// What a queued job costs in memory: a million of them are a queue users have (issue 51). A job
/// is one heap object, its fields behind a 16-byte header, in malloc's 16-byte steps with 8 of
/// its own: fields of up to 216 bytes take a 240-byte block, and one byte more takes 256.
@Suite struct JobLayoutTests {
    @Test func aJobsFieldsFitA256ByteBlock() {
        #expect(MemoryLayout<Job.Fields>.size <= 216, "declare new fields where they pack, or out of line")
        #expect(MemoryLayout<JobSpec>.size <= 28)
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
        #expect(first.source == "/a" && second.source == "/b" && second.destination == "file:///o/")
    }

    /// A source is kept as its folder, shared with the other jobs of the add, and its name, inline
    /// when short: a million jobs of one folder held a 64-byte path each.
    @Test func aSourceIsItsSharedFolderAndItsName() {
        var sharer = AddOptionsSharer()
        var first = JobSpec(source: "/home/someone/Pictures/a.jpg", destination: "file:///o/")
        var second = JobSpec(source: "/home/someone/Pictures/b.jpg", destination: "file:///o/")
        sharer.share(&first)
        sharer.share(&second)
        #expect(first.options.box === second.options.box)
        #expect(first.source == "/home/someone/Pictures/a.jpg" && second.source == "/home/someone/Pictures/b.jpg")
        #expect(first.sourceName == "a.jpg")
        second.source = "/elsewhere/c.jpg"
        #expect(second.source == "/elsewhere/c.jpg" && first.source == "/home/someone/Pictures/a.jpg")
        #expect(JobSpec(source: "relative", destination: "d").source == "relative")
        #expect(JobSpec(source: "/", destination: "d").source == "/")
        #expect(JobSpec(source: "/dir/", destination: "d").source == "/dir/")
    }

    /// Swift's `==` holds "café" with a composed é equal to one with e and an accent; on Linux
    /// they are two folders, and a job must not be given the other's.
    @Test func optionsAreSharedOnlyWithTheSameBytes() {
        let composedPath = "/p/caf\u{e9}/a.jpg"
        let decomposedPath = "/p/cafe\u{301}/a.jpg"
        var sharer = AddOptionsSharer()
        var composed = JobSpec(source: composedPath, destination: "file:///o/")
        var decomposed = JobSpec(source: decomposedPath, destination: "file:///o/")
        #expect(composed.source == decomposed.source, "Swift's == holds them equal")
        sharer.share(&composed)
        sharer.share(&decomposed)
        #expect(composed.options.box !== decomposed.options.box)
        #expect(Array(decomposed.source.utf8) == Array(decomposedPath.utf8))
        #expect(Array(composed.source.utf8) == Array(composedPath.utf8))

        var job = Job(id: JobID(1), spec: composed, createdAt: .now)
        job.snapshot = SourceSnapshot(
            kind: .original, path: decomposedPath, size: 1, device: 1, inode: 2, modificationTimeNanoseconds: 3)
        #expect(Array(job.snapshot!.path.utf8) == Array(decomposedPath.utf8), "kept as it was, not as the source")
    }

    /// The sharer keeps the last add's options for the next add, but not a password or headers
    /// past the add that gave them.
    @Test func theSharerForgetsOptionsThatHoldSecrets() {
        var sharer = AddOptionsSharer()
        var first = JobSpec(source: "/a", destination: "https://h/", user: "me:secret")
        var second = JobSpec(source: "/b", destination: "https://h/", user: "me:secret")
        sharer.share(&first)
        sharer.forgetSecrets()
        sharer.share(&second)
        #expect(first.options.box !== second.options.box)
        var third = JobSpec(source: "/c", destination: "https://h/")
        var fourth = JobSpec(source: "/d", destination: "https://h/")
        sharer.share(&third)
        sharer.forgetSecrets()
        sharer.share(&fourth)
        #expect(third.options.box === fourth.options.box, "options without secrets are kept")
    }

    /// An original's snapshot path is its source, so the job keeps none of its own.
    @Test func anOriginalsSnapshotPathIsTheSource() {
        var job = Job(id: JobID(1), spec: JobSpec(source: "/data/f.bin", destination: "file:///o/"), createdAt: .now)
        job.snapshot = SourceSnapshot(
            kind: .original, path: "/data/f.bin", size: 1, device: 1, inode: 2, modificationTimeNanoseconds: 3)
        #expect(job.storage.fields.snapshot?.path == "")
        #expect(job.snapshot?.path == "/data/f.bin" && job.snapshotKind == .original)
        job.snapshot!.path = "/cache/copy-1"
        #expect(job.snapshot?.path == "/cache/copy-1" && job.storage.fields.snapshot?.path == "/cache/copy-1")
        job.snapshot!.path = "/data/f.bin"
        #expect(job.storage.fields.snapshot?.path == "")
        var writer = BinaryWriter()
        job.write(to: &writer)
        let read = writer.bytes.withUnsafeBytes { bytes in
            var reader = BinaryReader(bytes)
            return try? Job(reading: &reader)
        }
        #expect(read == job && read?.snapshot?.path == "/data/f.bin")
        let path = Array("/data/f.bin".utf8)
        let occurrences = (0...(writer.bytes.count - path.count)).filter {
            Array(writer.bytes[$0..<($0 + path.count)]) == path
        }
        #expect(occurrences.count == 2, "the journal has the whole path as the source and as the snapshot's")
    }

    /// A source is written from its folder and name as the joined path would be, byte for byte.
    @Test(arguments: [
        ("", ""), ("/data/", "f.bin"), ("", "f"),
        ("/a/very/long/folder/name/of/more/than/128/bytes/" + String(repeating: "x", count: 100) + "/", "é.jpg"),
    ])
    func aJoinedWriteIsTheWriteOfTheJoinedString(head: String, tail: String) {
        var joined = BinaryWriter()
        joined.write(joining: head, tail)
        var whole = BinaryWriter()
        whole.write(head + tail)
        #expect(joined.bytes == whole.bytes)
    }

    /// The token names one job, so it is kept out of line; a priority is two bytes.
    @Test func aClientTokenAndAPriorityReadBackAsSet() {
        var spec = JobSpec(source: "/a", destination: "file:///o/", priority: -1000, clientToken: "t-1")
        #expect(spec.clientToken == "t-1" && spec.priority == -1000)
        spec.clientToken = nil
        spec.priority = 1000
        #expect(spec.clientToken == nil && spec.options.box?.value.clientToken == nil && spec.priority == 1000)
        spec.priority = .max
        #expect(spec.priority == Int(Int16.max), "clamped: job.add takes -1000 to 1000")
    }
}
