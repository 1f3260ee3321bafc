import Foundation
import Glibc
import TestSupport
import Testing
import UploadCore
import UploadWire

/// A real journal, written by a real daemon, with jobs in every lasting state (completed, failed,
/// canceled, paused, one removed when done and one while it waited to retry), which the damage
/// tests then cut, flip, zero and extend.
struct JournalFixture: Sendable {
    static let config = "[daemon]\ntransfers = 2\nretry_base_delay = 60000\n"

    var bytes: [UInt8]
    /// Each record's bytes in the file, in order.
    var frames: [Range<Int>]
    var records: [JournalRecord]

    /// Built once per test run and shared by the tests.
    static let shared: Result<JournalFixture, TestFailure> = {
        do {
            return .success(try build())
        } catch {
            return .failure(TestFailure("cannot build the journal fixture: \(error)"))
        }
    }()

    static func load() throws -> JournalFixture { try shared.get() }

    private static func build() throws -> JournalFixture {
        let servers = try TestServers.load()
        let files = try TestPaths.scratch("journal-fixture-files")
        let target = try TestPaths.scratch("journal-fixture-dest")
        let daemon = try DaemonProcess(name: "journal-fixture", config: config)
        try daemon.start()
        var counter = 0
        func sources(_ count: Int) throws -> [String] {
            try (0..<count).map { _ in
                counter += 1
                let path = files.appendingPathComponent("file-\(counter).bin").path
                try CrashSupport.randomFile(at: path, size: 1000 + counter * 317)
                return path
            }
        }
        func waitAll(_ ids: [JobID]) throws {
            let wait = try daemon.ctl(["wait"] + ids.map(\.description) + ["--timeout", "60"], timeout: 70)
            guard wait.status == 0 else { throw TestFailure("fixture jobs did not complete: \(wait)") }
        }
        let local = "file://\(target.path)/"
        let nowhere = "http://127.0.0.1:1/nowhere/"  // connection refused: retried with a long backoff
        try waitAll(try daemon.add(try sources(6), to: local))
        let failed = try daemon.add(
            try sources(1), to: "\(servers.nginxURL)/private/",
            ["--protocol", "put", "--user", "\(servers.user):wrong"])
        guard try daemon.waitFor(failed[0]).state == .failed else {
            throw TestFailure("the fixture's failing job did not fail")
        }
        let paused = try daemon.add(try sources(2), to: nowhere, ["--protocol", "put"])
        guard try daemon.ctl(["pause"] + paused.map(\.description)).status == 0 else {
            throw TestFailure("pause failed")
        }
        let canceled = try daemon.add(try sources(1), to: nowhere, ["--protocol", "put"])
        guard try daemon.ctl(["cancel", "\(canceled[0])"]).status == 0 else { throw TestFailure("cancel failed") }
        let removed = try daemon.add(try sources(1), to: local)
        try waitAll(removed)
        guard try daemon.ctl(["remove", "\(removed[0])"]).status == 0 else { throw TestFailure("remove failed") }
        // Removed while it waited to retry: its removal lost, it would run again.
        let waiting = try daemon.add(try sources(1), to: nowhere, ["--protocol", "put"])
        guard try daemon.ctl(["remove", "\(waiting[0])"]).status == 0 else { throw TestFailure("remove failed") }
        try waitAll(try daemon.add(try sources(4), to: local))
        guard daemon.stop() == 0 else {
            throw TestFailure("the fixture daemon did not stop cleanly: \(daemon.log(tail: 20))")
        }

        guard let bytes = CrashSupport.bytes(daemon.stateDirectory + "/journal") else {
            throw TestFailure("no journal written")
        }
        let frames = Self.frames(of: bytes)
        let offset = frames.last?.upperBound ?? JournalFormat.headerSize
        let contents = try JournalFormat.decode(bytes)
        guard contents.damage == nil, offset == bytes.count, contents.records.count == frames.count else {
            throw TestFailure("the fixture journal does not parse cleanly: \(String(describing: contents.damage))")
        }
        guard bytes.count > 3 * 4096 else {
            throw TestFailure("the fixture journal is too small (\(bytes.count) bytes)")
        }
        return JournalFixture(bytes: bytes, frames: frames, records: contents.records)
    }

    /// Each whole frame of a journal, by the lengths they give.
    static func frames(of bytes: [UInt8]) -> [Range<Int>] {
        var frames: [Range<Int>] = []
        var offset = JournalFormat.headerSize
        while offset + JournalFormat.frameOverhead <= bytes.count {
            let length =
                Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3])
                << 24
            let end = offset + JournalFormat.frameOverhead + length
            guard end <= bytes.count else { break }
            frames.append(offset..<end)
            offset = end
        }
        return frames
    }

    /// The jobs replay rebuilds from the first `count` records.
    func state(keeping count: Int) -> JournalState {
        var state = JournalState()
        for record in records.prefix(count) { state.apply(record) }
        return state
    }

    /// The index of the record holding byte `offset`.
    func frameIndex(holding offset: Int) -> Int {
        frames.firstIndex { $0.upperBound > offset } ?? frames.count
    }
}

/// What replay must make of a damaged journal, worked out from which of its records the damage
/// hit: the intact records replayed, every stretch of damaged records set aside, and the jobs a
/// lost record may have changed paused when they would run.
struct DamageExpectation {
    /// The damaged stretches, in the damaged file.
    var regions: [Range<Int>] = []
    /// Records replayed, and how many of them after the first damaged stretch.
    var kept = 0
    var keptAfter = 0
    var state = JournalState()
    var paused: [JobID] = []
    /// The owners of stretches that are one record, by where the stretch begins.
    var named: [Int: JobID] = [:]
    /// The damaged file's length.
    var fileSize = 0
    /// Whether the damage is only at the end, as a crash leaves it: the journal is cut there.
    var isTail: Bool { regions.count == 1 && paused.isEmpty && regions[0].upperBound == fileSize }

    /// `damaged` (indices of `frames`, the records of `records`) are hit; `tail` is a stretch
    /// after the last record (cut off or appended); `torn`: the last damaged record runs past the
    /// end of the file (a cut, or a length made longer), what a crash leaves, which pauses nothing.
    init(
        records: [JournalRecord], frames: [Range<Int>], damaged: Set<Int>, tail: Range<Int>? = nil,
        torn: Bool = false, fileSize: Int
    ) {
        self.fileSize = fileSize
        var runs: [ClosedRange<Int>] = []
        for index in damaged.sorted() {
            if let last = runs.last, last.upperBound == index - 1 {
                runs[runs.count - 1] = last.lowerBound...index
            } else {
                runs.append(index...index)
            }
        }
        regions = runs.map { frames[$0.lowerBound].lowerBound..<frames[$0.upperBound].upperBound }
        if let tail { regions.append(tail) }
        let keptIndices = records.indices.filter { !damaged.contains($0) }
        for index in keptIndices { state.apply(records[index]) }
        kept = keptIndices.count
        keptAfter = keptIndices.filter { index in runs.first.map { index > $0.upperBound } ?? false }.count
        for run in runs {
            let continues = { (id: JobID) in
                keptIndices.contains { $0 > run.upperBound && records[$0].jobID == id }
            }
            let isLast = run.upperBound == frames.count - 1 && tail == nil
            if isLast && torn { continue }
            let touched: [JobID]
            if run.count == 1 {
                guard let id = records[run.lowerBound].jobID else { continue }
                named[frames[run.lowerBound].lowerBound] = id
                touched = continues(id) ? [] : [id]
            } else {
                touched = isLast ? [] : state.jobs.keys.filter { !continues($0) }.sorted()
            }
            for id in touched {
                guard var job = state.jobs[id], job.state == .queued || job.state == .running else { continue }
                job.state = .paused
                state.apply(.job(job))
                if !paused.contains(id) { paused.append(id) }
            }
        }
    }
}

/// One way to damage the fixture, and what replay must make of it.
struct DamageCase: Sendable, CustomTestStringConvertible {
    enum Position: Sendable {
        case offset(Int), middle, lastByte
    }
    enum Kind: Sendable {
        /// The file ends inside the record `fromEnd` from the end.
        case cut(fromEnd: Int, at: Position)
        /// The file ends inside the 12-byte header.
        case tornHeader(Int)
        /// Single bits flipped at random offsets after the header.
        case flips(seed: UInt64, count: Int)
        /// One bit flipped at each of these fractions of the file, in the middle of a record.
        case flipsAt([Double])
        /// A 4 KiB page in the middle of the file reads as zeros (a lost sector).
        case zeroPage
        case garbage(seed: UInt64, count: Int)
        /// Zeros after the end, as a file system can show after a crash.
        case zeros(Int)
    }

    var name: String
    var kind: Kind
    var testDescription: String { name }

    /// The damaged bytes, and what replay must make of them.
    func apply(to fixture: JournalFixture) -> (bytes: [UInt8], expected: DamageExpectation) {
        var bytes = fixture.bytes
        func expectation(hitting offsets: [Int]) -> DamageExpectation {
            let damaged = Set(offsets.map { fixture.frameIndex(holding: $0) })
            // A longer length in the last record makes it run past the end: torn, as by a crash.
            let last = fixture.frames[fixture.frames.count - 1]
            let claimed =
                Int(bytes[last.lowerBound]) | Int(bytes[last.lowerBound + 1]) << 8 | Int(bytes[last.lowerBound + 2])
                << 16 | Int(bytes[last.lowerBound + 3]) << 24
            let torn =
                damaged.contains(fixture.frames.count - 1) && claimed <= JournalFormat.maxPayloadSize
                && last.lowerBound + 9 + claimed > bytes.count
            return DamageExpectation(
                records: fixture.records, frames: fixture.frames, damaged: damaged, torn: torn, fileSize: bytes.count)
        }
        switch kind {
        case .cut(let fromEnd, let position):
            let index = fixture.frames.count - fromEnd
            let frame = fixture.frames[index]
            let cut: Int
            switch position {
            case .offset(let offset): cut = frame.lowerBound + offset
            case .middle: cut = frame.lowerBound + frame.count / 2
            case .lastByte: cut = frame.upperBound - 1
            }
            let expected = DamageExpectation(
                records: Array(fixture.records.prefix(index)), frames: Array(fixture.frames.prefix(index)),
                damaged: [], tail: frame.lowerBound..<cut, fileSize: cut)
            return (Array(bytes[..<cut]), expected)
        case .tornHeader(let length):
            return (
                Array(bytes[..<length]),
                DamageExpectation(records: [], frames: [], damaged: [], tail: 0..<length, fileSize: length)
            )
        case .flips(let seed, let count):
            var random = SeededRandom(seed: seed)
            var offsets: [Int] = []
            for _ in 0..<count {
                let offset = Int.random(in: JournalFormat.headerSize..<bytes.count, using: &random)
                bytes[offset] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
                offsets.append(offset)
            }
            return (bytes, expectation(hitting: offsets))
        case .flipsAt(let fractions):
            let offsets = fractions.map { fraction in
                let frame = fixture.frames[fixture.frameIndex(holding: Int(Double(bytes.count) * fraction))]
                return frame.lowerBound + frame.count / 2
            }
            for offset in offsets { bytes[offset] ^= 0x10 }
            return (bytes, expectation(hitting: offsets))
        case .zeroPage:
            let page = (bytes.count / 2) & ~4095
            let zeroed = page..<min(page + 4096, bytes.count)
            for offset in zeroed { bytes[offset] = 0 }
            return (bytes, expectation(hitting: Array(zeroed)))
        case .garbage(let seed, let count):
            var random = SeededRandom(seed: seed)
            bytes += (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            return (bytes, appended(to: fixture, bytes))
        case .zeros(let count):
            bytes += [UInt8](repeating: 0, count: count)
            return (bytes, appended(to: fixture, bytes))
        }
    }

    private func appended(to fixture: JournalFixture, _ bytes: [UInt8]) -> DamageExpectation {
        DamageExpectation(
            records: fixture.records, frames: fixture.frames, damaged: [], tail: fixture.bytes.count..<bytes.count,
            fileSize: bytes.count)
    }

    static let recoverable: [DamageCase] = [
        DamageCase(name: "torn 1 byte into the last record", kind: .cut(fromEnd: 1, at: .offset(1))),
        DamageCase(name: "torn inside the last record's CRC", kind: .cut(fromEnd: 1, at: .offset(6))),
        DamageCase(name: "torn before the last record's type byte", kind: .cut(fromEnd: 1, at: .offset(8))),
        DamageCase(name: "torn after the last record's type byte", kind: .cut(fromEnd: 1, at: .offset(9))),
        DamageCase(name: "torn in the middle of the last record", kind: .cut(fromEnd: 1, at: .middle)),
        DamageCase(name: "torn 1 byte before the end", kind: .cut(fromEnd: 1, at: .lastByte)),
        DamageCase(name: "torn inside the length of the record before last", kind: .cut(fromEnd: 2, at: .offset(3))),
        DamageCase(name: "torn in the middle of the record before last", kind: .cut(fromEnd: 2, at: .middle)),
        DamageCase(
            name: "torn at the last byte of the third record from the end", kind: .cut(fromEnd: 3, at: .lastByte)),
        DamageCase(name: "torn inside the header", kind: .tornHeader(5)),
        DamageCase(name: "one flipped bit (seed 11)", kind: .flips(seed: 11, count: 1)),
        DamageCase(name: "one flipped bit (seed 23)", kind: .flips(seed: 23, count: 1)),
        DamageCase(name: "one flipped bit (seed 37)", kind: .flips(seed: 37, count: 1)),
        DamageCase(name: "sixteen flipped bits (seed 41)", kind: .flips(seed: 41, count: 16)),
        DamageCase(name: "a zeroed 4 KiB page in the middle", kind: .zeroPage),
        DamageCase(name: "one flipped bit at a tenth of the file", kind: .flipsAt([0.1])),
        DamageCase(name: "two damaged records far apart", kind: .flipsAt([0.3, 0.7])),
        DamageCase(name: "1000 bytes of garbage appended", kind: .garbage(seed: 5, count: 1000)),
        DamageCase(name: "4 KiB of zeros appended", kind: .zeros(4096)),
    ]
}

/// A journal of 50 paused jobs, written by a real daemon: issue 47's reproduction (one flipped
/// bit at a tenth of it left 11 jobs).
enum PausedJournal {
    static let shared: Result<[UInt8], TestFailure> = {
        do {
            return .success(try build())
        } catch {
            return .failure(TestFailure("cannot build the journal of paused jobs: \(error)"))
        }
    }()

    private static func build() throws -> [UInt8] {
        let files = try TestPaths.scratch("journal-paused-files")
        let sources = try (1...50).map { number in
            let path = files.appendingPathComponent("paused-\(number).bin").path
            try CrashSupport.randomFile(at: path, size: 100 + number)
            return path
        }
        let daemon = try DaemonProcess(name: "journal-paused", config: JournalFixture.config)
        try daemon.start()
        let ids = try daemon.add(sources, to: "http://127.0.0.1:1/nowhere/", ["--protocol", "put"])
        guard ids.count == 50, try daemon.ctl(["pause", "--all"]).status == 0 else {
            daemon.stop()
            throw TestFailure("cannot add and pause 50 jobs")
        }
        guard daemon.stop() == 0, let bytes = CrashSupport.bytes(daemon.stateDirectory + "/journal") else {
            throw TestFailure("the daemon of paused jobs did not stop cleanly: \(daemon.log(tail: 20))")
        }
        return bytes
    }
}

/// Start-up on a damaged journal: it never crashes; recoverable damage costs only the damaged
/// records, which are reported (log, `uploadctl status`) and set aside (a `journal.damaged-*`
/// copy) while every intact record before and after them is replayed; a job a lost record may
/// have changed comes back paused rather than running again; a journal it cannot use at all (a
/// directory, unreadable, a newer format) makes it refuse to start, saying which file and what to
/// do, without touching the file.
@Suite(.serialized)
final class JournalDamageTests {
    let fixture: JournalFixture

    init() throws {
        fixture = try JournalFixture.load()
    }

    /// A daemon whose state directory holds `journal` (nothing else).
    private func daemon(_ name: String, journal: [UInt8]) throws -> DaemonProcess {
        let daemon = try DaemonProcess(name: "journal-\(name)", config: JournalFixture.config)
        try FileManager.default.createDirectory(atPath: daemon.stateDirectory, withIntermediateDirectories: true)
        try CrashSupport.write(journal, to: daemon.stateDirectory + "/journal")
        return daemon
    }

    private func damagedCopies(_ daemon: DaemonProcess) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory)) ?? [])
            .filter { $0.hasPrefix("journal.damaged-") }
    }

    // MARK: - Recoverable damage

    @Test(arguments: DamageCase.recoverable)
    func startUpKeepsEveryIntactJobAndSetsTheDamagedBytesAside(_ damage: DamageCase) throws {
        let (bytes, expected) = damage.apply(to: fixture)
        let daemon = try daemon("damage", journal: bytes)
        defer { daemon.stop() }
        try daemon.start()

        // Reported: status --json, plain status, the log.
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        let report = try #require(status.journalDamage, "\(damage.name): status --json has no journal_damage")
        for region in expected.regions.prefix(4) {
            #expect(
                report.contains("at byte \(region.lowerBound) "), "\(damage.name): the report names where: \(report)")
        }
        #expect(
            report.contains("kept \(expected.kept) records"), "\(damage.name): the report says what was kept: \(report)"
        )
        if expected.keptAfter > 0 {
            #expect(report.contains("\(expected.keptAfter) of them after the damage"), "\(damage.name): \(report)")
        }
        // (The report details the first four stretches.)
        for region in expected.regions.prefix(4) {
            guard let id = expected.named[region.lowerBound] else { continue }
            #expect(
                report.contains("at byte \(region.lowerBound) (\(region.count) bytes: ")
                    && report.contains("job \(id)'s record"),
                "\(damage.name): the report names job \(id): \(report)")
        }
        for id in expected.paused {
            #expect(report.contains("\(id)"), "\(damage.name): the report names paused job \(id): \(report)")
        }
        let plain = try daemon.ctl(["status"])
        #expect(
            plain.stdout.split(separator: "\n").contains { $0.hasPrefix("journal damage: ") },
            "\(damage.name): \(plain)")
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        #expect(
            log.contains("journal damaged at byte \(expected.regions[0].lowerBound) "),
            "\(damage.name): the log reports it:\n\(daemon.log(tail: 20))")

        // Only the damaged bytes are set aside, each after a line saying where it was.
        let copies = damagedCopies(daemon)
        #expect(copies.count == 1, "\(damage.name): one journal.damaged-* copy: \(copies)")
        if let copy = copies.first {
            let parts = Self.parts(of: CrashSupport.bytes(daemon.stateDirectory + "/" + copy) ?? [])
            #expect(
                parts.map(\.offset) == expected.regions.map(\.lowerBound),
                "\(damage.name): the copy holds each damaged stretch: \(parts.map(\.offset))")
            #expect(
                parts.map(\.bytes) == expected.regions.map { Array(bytes[$0]) },
                "\(damage.name): the copy holds the damaged bytes")
            #expect(report.contains(copy), "\(damage.name): the report names the copy: \(report)")
        }
        // The journal holds no damaged byte: cut at a damaged end, otherwise rewritten.
        let journal = CrashSupport.bytes(daemon.stateDirectory + "/journal") ?? []
        #expect(try JournalFormat.decode(journal).damage == nil, "\(damage.name): the journal is whole again")
        if expected.isTail && expected.regions[0].lowerBound >= JournalFormat.headerSize {
            let offset = expected.regions[0].lowerBound
            #expect(
                journal.prefix(offset) == bytes.prefix(offset),
                "\(damage.name): the records before the damage stay as they were")
        } else if expected.isTail {
            #expect(
                journal.prefix(JournalFormat.headerSize).elementsEqual(JournalFormat.header()),
                "\(damage.name): a fresh header")
        }

        // Every intact job is there, in the state it had; those a lost record may have changed are paused.
        try expectJobs(daemon, match: expected.state, damage.name)
        for id in expected.paused {
            let history = try daemon.job(id).history ?? []
            #expect(
                history.contains { $0.message.contains("journal was damaged") },
                "\(damage.name): job \(id)'s history says why it is paused: \(history.map(\.message))")
        }

        // Set aside for good: a clean restart finds nothing wrong and the same jobs.
        #expect(daemon.stop() == 0)
        try daemon.start()
        let again = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(
            again.journalDamage == nil,
            "\(damage.name): damage reported again after a clean restart: \(String(describing: again.journalDamage))")
        #expect(damagedCopies(daemon).count == 1, "\(damage.name): no second copy")
        try expectJobs(daemon, match: expected.state, damage.name)
    }

    /// The damaged stretches in a `journal.damaged-*` copy: each after a line that says
    /// "N damaged bytes from byte OFFSET".
    static func parts(of copy: [UInt8]) -> [(offset: Int, bytes: [UInt8])] {
        var parts: [(offset: Int, bytes: [UInt8])] = []
        var position = 0
        while let newline = copy[position...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: copy[position..<newline], as: UTF8.self)
            let words = line.split(separator: " ")
            guard let bytesIndex = words.firstIndex(of: "damaged"), bytesIndex > 0,
                let length = Int(words[bytesIndex - 1]), let byteIndex = words.firstIndex(of: "byte"),
                byteIndex + 1 < words.count, let offset = Int(words[byteIndex + 1]),
                newline + 1 + length <= copy.count
            else { break }
            parts.append((offset, Array(copy[(newline + 1)..<(newline + 1 + length)])))
            position = newline + 1 + length
        }
        return parts
    }

    /// The listed IDs are exactly the expected ones; jobs in a lasting state (completed, failed,
    /// canceled, paused) are still in it. Jobs the kept records leave queued or running may have
    /// run again since.
    private func expectJobs(_ daemon: DaemonProcess, match expected: JournalState, _ name: String) throws {
        let list = try daemon.ctlJSON(JobList.self, ["list"])
        let listed = list.jobs.map(\.id)
        #expect(listed.count == Set(listed).count, "\(name): duplicated jobs: \(listed)")
        #expect(
            Set(listed) == Set(expected.jobs.keys),
            "\(name): listed \(listed.sorted()), expected \(expected.jobs.keys.sorted())")
        for job in list.jobs {
            guard let want = expected.jobs[job.id]?.state, [.completed, .failed, .canceled, .paused].contains(want)
            else { continue }
            #expect(job.state == want, "\(name): job \(job.id) is \(job.state), was \(want)")
        }
    }

    /// Cutting the tail at every byte of the last records, and flipping a bit in every byte of
    /// them, is caught by the record decoder the daemon replays with: a cut keeps the records
    /// before it; a flipped bit costs its own record only. (Cheap, so every offset; the daemon runs
    /// for a few above.)
    @Test func everyCutAndEveryFlippedByteOfTheLastRecordsIsCaught() throws {
        let last = fixture.frames.suffix(3)
        var tail = JournalFormat.header()
        var frames: [Range<Int>] = []
        for frame in last {
            frames.append(tail.count..<(tail.count + frame.count))
            tail += fixture.bytes[frame]
        }
        func check(_ bytes: [UInt8], damageAt position: Int, cut: Bool, _ what: String) throws {
            let contents = try JournalFormat.decode(bytes)
            let index = frames.firstIndex { $0.upperBound > position } ?? frames.count
            let kept = cut ? index : frames.count - 1
            #expect(contents.records.count == kept, "\(what): kept \(contents.records.count) records, expected \(kept)")
            #expect(
                contents.damage?.offset == frames[index].lowerBound, "\(what): \(String(describing: contents.damage))")
            #expect(contents.damaged.count == 1, "\(what): \(contents.damaged)")
            let atTheEnd = cut || index == frames.count - 1
            #expect(contents.validLength == (atTheEnd ? frames[index].lowerBound : bytes.count), "\(what)")
        }
        var cases = 0
        for cut in JournalFormat.headerSize..<tail.count where !frames.contains(where: { $0.lowerBound == cut }) {
            try check(Array(tail[..<cut]), damageAt: cut, cut: true, "cut at byte \(cut)")
            cases += 1
        }
        for offset in JournalFormat.headerSize..<tail.count {
            var flipped = tail
            flipped[offset] ^= UInt8(1) << UInt8(offset % 8)
            try check(flipped, damageAt: offset, cut: false, "bit \(offset % 8) of byte \(offset) flipped")
            cases += 1
        }
        print(
            "journal damage: \(cases) cuts and bit flips of the last 3 records (\(tail.count - 12) bytes) caught by the decoder"
        )
    }

    /// IDs are never reused (contrib/DESIGN.md, "A job's life"), not even those of jobs lost to damage in the middle of
    /// the journal: a job added after recovery gets an ID above every ID the file ever held.
    @Test func idsOfJobsLostToDamageAreNotReused() throws {
        let (bytes, _) = DamageCase(name: "zeroed page", kind: .zeroPage).apply(to: fixture)
        let everyID = fixture.state(keeping: fixture.records.count).nextID
        let daemon = try daemon("ids", journal: bytes)
        defer { daemon.stop() }
        try daemon.start()
        let source = try TestPaths.scratch("journal-ids").appendingPathComponent("new.bin").path
        try CrashSupport.randomFile(at: source, size: 100)
        let target = try TestPaths.scratch("journal-ids-dest")
        let id = try daemon.add([source], to: "file://\(target.path)/")[0]
        #expect(
            id.rawValue >= everyID,
            "job \(id) reuses an ID of a job in the damaged part (the journal had IDs up to \(everyID - 1))")
    }

    // MARK: - Damage in the middle

    /// Issue 47: 50 paused jobs, one bit flipped at a tenth of the file. Every job comes back
    /// (the one whose record was hit too, from its other records, or at worst it alone is lost),
    /// still paused, and the report names the job of the damaged record.
    @Test func fiftyPausedJobsSurviveOneFlippedBitAtATenthOfTheFile() throws {
        let original = try PausedJournal.shared.get()
        let frames = JournalFixture.frames(of: original)
        let records = try JournalFormat.decode(original).records
        let offset = original.count / 10
        let hit = try #require(frames.firstIndex { $0.contains(offset) })
        var bytes = original
        bytes[offset] ^= 0x04
        let daemon = try daemon("paused", journal: bytes)
        defer { daemon.stop() }
        try daemon.start()

        let list = try daemon.ctlJSON(JobList.self, ["list"])
        #expect(list.jobs.count >= 49, "\(list.jobs.count) of 50 jobs after one flipped bit")
        #expect(list.jobs.allSatisfy { $0.state == .paused }, "\(list.jobs.map { "\($0.id) \($0.state)" })")
        let report = try #require(try daemon.ctlJSON(DaemonStatus.self, ["status"]).journalDamage)
        #expect(report.contains("at byte \(frames[hit].lowerBound) "), "\(report)")
        if let id = records[hit].jobID {
            #expect(report.contains("job \(id)'s record"), "the report names the damaged record's job: \(report)")
        }
    }

    /// The record of an upload's completion lost: the job, back in the state of its record before
    /// (queued or running), would upload again. It comes back paused, says why, and stays so.
    @Test func aLostCompletionDoesNotMakeTheJobUploadAgain() throws {
        let index = try #require(
            lastRecord { record in
                if case .job(let job) = record { return job.state == .completed }
                return false
            }, "a completion whose loss leaves its job to run")
        let (daemon, id) = try startLosing(record: index, "completion")
        defer { daemon.stop() }
        let job = try daemon.job(id)
        let destination = URL(string: job.destination)!.path + "/" + (job.source as NSString).lastPathComponent
        let written = try? FileManager.default.attributesOfItem(atPath: destination)[.modificationDate] as? Date
        try expectStaysPaused(daemon, id, "a lost completion")
        let after = try? FileManager.default.attributesOfItem(atPath: destination)[.modificationDate] as? Date
        #expect(written == after, "job \(id)'s file was not uploaded again")
    }

    /// A job removed while it waited to retry, its removal lost: it would run again. It comes back
    /// paused.
    @Test func aLostRemovalDoesNotMakeTheJobRunAgain() throws {
        let index = try #require(
            lastRecord { record in
                if case .removed = record { return true }
                return false
            }, "a removal whose loss leaves its job to run")
        let (daemon, id) = try startLosing(record: index, "removal")
        defer { daemon.stop() }
        try expectStaysPaused(daemon, id, "a lost removal")
    }

    /// The last of the fixture's records that `matches` and whose loss leaves its job queued or
    /// running.
    private func lastRecord(_ matches: (JournalRecord) -> Bool) -> Int? {
        fixture.records.indices.last { index in
            guard matches(fixture.records[index]), let id = fixture.records[index].jobID else {
                return false
            }
            var state = JournalState()
            for (other, record) in fixture.records.enumerated() where other != index { state.apply(record) }
            return state.jobs[id].map { $0.state == .queued || $0.state == .running } ?? false
        }
    }

    /// A daemon started on the fixture with a bit flipped in the middle of record `index`; checks
    /// that every other job is there. Returns the daemon and the record's job.
    private func startLosing(record index: Int, _ name: String) throws -> (DaemonProcess, JobID) {
        var bytes = fixture.bytes
        let frame = fixture.frames[index]
        let offset = frame.lowerBound + frame.count / 2
        bytes[offset] ^= 0x08
        let id = try #require(fixture.records[index].jobID)
        let daemon = try daemon("lost-\(name)", journal: bytes)
        try daemon.start()
        let expected = DamageExpectation(
            records: fixture.records, frames: fixture.frames, damaged: [index], fileSize: bytes.count)
        #expect(expected.paused == [id], "\(name): the model pauses job \(id): \(expected.paused)")
        try expectJobs(daemon, match: expected.state, name)
        return (daemon, id)
    }

    private func expectStaysPaused(_ daemon: DaemonProcess, _ id: JobID, _ name: String) throws {
        let job = try daemon.job(id)
        #expect(job.state == .paused, "\(name): job \(id) is \(job.state)")
        #expect(
            job.history?.contains { $0.message.contains("journal was damaged") } == true,
            "\(name): its history says why: \(job.history?.map(\.message) ?? [])")
        let report = try daemon.ctlJSON(DaemonStatus.self, ["status"]).journalDamage ?? ""
        #expect(report.contains("paused job \(id),"), "\(name): the report names it: \(report)")
        Thread.sleep(forTimeInterval: 2)
        let later = try daemon.job(id)
        #expect(later.state == .paused && later.attempts == job.attempts, "\(name): job \(id) did not run: \(later)")
    }

    // MARK: - Journals it must refuse

    /// uploadd exits 1, names the journal, says what to do, and leaves the file exactly as it was.
    private func expectRefusal(
        _ daemon: DaemonProcess, wrapper: [String] = [], hints: [String], _ name: String
    ) throws {
        let path = daemon.stateDirectory + "/journal"
        let identity = CrashSupport.identity(path)
        let before = CrashSupport.bytes(path)
        let started = Date()
        let result = try CrashSupport.runUploadd(daemon, wrapper: wrapper)
        #expect(result.status == 1, "\(name): uploadd exits 1: \(result)")
        #expect(Date().timeIntervalSince(started) < 10, "\(name): it refuses at once")
        #expect(!result.stderr.contains("Fatal error"), "\(name): \(result.stderr)")
        let message = result.stderr.split(separator: "\n").first { $0.contains("cannot start") }.map(String.init) ?? ""
        #expect(message.contains(path), "\(name): the message names the journal: \(result.stderr)")
        // "Permission denied" alone says what went wrong, not what to do.
        #expect(
            hints.contains { message.localizedCaseInsensitiveContains($0) },
            "\(name): the message says what to do (one of \(hints)): \(message)")
        #expect(CrashSupport.identity(path) == identity, "\(name): the journal was not replaced, truncated or chmod'ed")
        #expect(CrashSupport.bytes(path) == before, "\(name): the journal's bytes are unchanged")
        #expect(damagedCopies(daemon).isEmpty, "\(name): no damage copy for a journal that was not read")
    }

    @Test func aJournalThatIsADirectoryRefusesToStart() throws {
        let daemon = try DaemonProcess(name: "journal-dir", config: JournalFixture.config)
        let path = daemon.stateDirectory + "/journal"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try CrashSupport.write([1, 2, 3], to: path + "/inside")
        try expectRefusal(daemon, hints: ["move it away", "remove it"], "a directory")
        #expect(CrashSupport.bytes(path + "/inside") == [1, 2, 3], "the directory's contents are untouched")
    }

    /// As root, mode 000 does not stop reading; uploadd then runs without CAP_DAC_OVERRIDE and
    /// CAP_DAC_READ_SEARCH (setpriv), so the mode applies to it as to anyone.
    @Test func anUnreadableJournalRefusesToStart() throws {
        let wrapper = try Privileges.withoutFileCapabilities()
        let daemon = try daemon("unreadable", journal: fixture.bytes)
        let path = daemon.stateDirectory + "/journal"
        #expect(chmod(path, 0) == 0)
        defer { chmod(path, 0o600) }
        try expectRefusal(
            daemon, wrapper: wrapper, hints: ["chmod", "make it readable", "fix its permissions", "move it away"],
            "mode 000")
        // Sanity: the refusal came from the journal, not from the wrapper or another file.
        let result = try CrashSupport.runUploadd(daemon, wrapper: wrapper)
        #expect(result.stderr.contains(path), "\(result)")
    }

    @Test func aJournalFromANewerVersionRefusesToStart() throws {
        var bytes = fixture.bytes
        bytes.replaceSubrange(8..<12, with: [UInt8(JournalFormat.version + 1), 0, 0, 0])
        let daemon = try daemon("newer", journal: bytes)
        try expectRefusal(daemon, hints: ["newer uploadd", "move the file away", "move it away"], "a newer version")
        let result = try CrashSupport.runUploadd(daemon)
        #expect(
            result.stderr.contains("version \(JournalFormat.version + 1)"),
            "the message says which version: \(result.stderr)")
    }

    /// A flipped bit in the magic bytes: not an uploadd journal. Refused, named, left alone.
    @Test func aFlippedBitInTheHeaderRefusesToStart() throws {
        var bytes = fixture.bytes
        bytes[3] ^= 0x04
        let daemon = try daemon("magic", journal: bytes)
        try expectRefusal(daemon, hints: ["move", "not an uploadd journal"], "flipped magic")
    }
}
