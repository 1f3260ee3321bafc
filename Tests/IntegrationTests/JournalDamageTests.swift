import Foundation
import Glibc
import TestSupport
import Testing
import UploadCore
import UploadWire

/// A real journal, written by a real daemon, with jobs in every lasting state (completed, failed,
/// canceled, paused, one removed), which the damage tests then cut, flip, zero and extend.
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
        try waitAll(try daemon.add(try sources(4), to: local))
        guard daemon.stop() == 0 else {
            throw TestFailure("the fixture daemon did not stop cleanly: \(daemon.log(tail: 20))")
        }

        guard let bytes = CrashSupport.bytes(daemon.stateDirectory + "/journal") else {
            throw TestFailure("no journal written")
        }
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
        let contents = try JournalFormat.decode(bytes)
        guard contents.damage == nil, offset == bytes.count, contents.records.count == frames.count else {
            throw TestFailure("the fixture journal does not parse cleanly: \(String(describing: contents.damage))")
        }
        guard bytes.count > 3 * 4096 else {
            throw TestFailure("the fixture journal is too small (\(bytes.count) bytes)")
        }
        return JournalFixture(bytes: bytes, frames: frames, records: contents.records)
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

/// One way to damage the fixture, and where replay must stop because of it.
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
        /// A 4 KiB page in the middle of the file reads as zeros.
        case zeroPage
        case garbage(seed: UInt64, count: Int)
        /// Zeros after the end, as a file system can show after a crash.
        case zeros(Int)
    }

    var name: String
    var kind: Kind
    var testDescription: String { name }

    /// The damaged bytes, the offset where replay must stop, and how many records it keeps.
    func apply(to fixture: JournalFixture) -> (bytes: [UInt8], offset: Int, kept: Int) {
        var bytes = fixture.bytes
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
            return (Array(bytes[..<cut]), frame.lowerBound, index)
        case .tornHeader(let length):
            return (Array(bytes[..<length]), 0, 0)
        case .flips(let seed, let count):
            var random = SeededRandom(seed: seed)
            var first = Int.max
            for _ in 0..<count {
                let offset = Int.random(in: JournalFormat.headerSize..<bytes.count, using: &random)
                bytes[offset] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
                first = min(first, offset)
            }
            let index = fixture.frameIndex(holding: first)
            return (bytes, fixture.frames[index].lowerBound, index)
        case .zeroPage:
            let page = (bytes.count / 2) & ~4095
            for offset in page..<min(page + 4096, bytes.count) { bytes[offset] = 0 }
            let index = fixture.frameIndex(holding: page)
            return (bytes, fixture.frames[index].lowerBound, index)
        case .garbage(let seed, let count):
            var random = SeededRandom(seed: seed)
            bytes += (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            return (bytes, fixture.bytes.count, fixture.frames.count)
        case .zeros(let count):
            bytes += [UInt8](repeating: 0, count: count)
            return (bytes, fixture.bytes.count, fixture.frames.count)
        }
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
        DamageCase(name: "1000 bytes of garbage appended", kind: .garbage(seed: 5, count: 1000)),
        DamageCase(name: "4 KiB of zeros appended", kind: .zeros(4096)),
    ]
}

/// Start-up on a damaged journal: it never crashes; recoverable damage keeps every job recorded
/// before it, reports the rest (log, `uploadctl status`, a `journal.damaged-*` copy) and cuts it
/// off; a journal it cannot use at all (a directory, unreadable, a newer format) makes it refuse
/// to start, saying which file and what to do, without touching the file.
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
    func startUpKeepsEveryJobBeforeTheDamageAndReportsTheRest(_ damage: DamageCase) throws {
        let (bytes, offset, kept) = damage.apply(to: fixture)
        let daemon = try daemon("damage", journal: bytes)
        defer { daemon.stop() }
        try daemon.start()

        // Reported: status --json, plain status, the log.
        let status = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        let report = try #require(status.journalDamage, "\(damage.name): status --json has no journal_damage")
        #expect(report.contains("byte \(offset) "), "\(damage.name): the report names where: \(report)")
        #expect(report.contains("kept \(kept) records"), "\(damage.name): the report says what was kept: \(report)")
        let plain = try daemon.ctl(["status"])
        #expect(
            plain.stdout.split(separator: "\n").contains { $0.hasPrefix("journal damage: ") },
            "\(damage.name): \(plain)")
        let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
        #expect(
            log.contains("journal damaged at byte \(offset) "),
            "\(damage.name): the log reports it:\n\(daemon.log(tail: 20))")

        // The cut bytes are kept aside, and the journal keeps everything before them.
        let copies = damagedCopies(daemon)
        #expect(copies.count == 1, "\(damage.name): one journal.damaged-* copy: \(copies)")
        if let copy = copies.first {
            #expect(
                CrashSupport.bytes(daemon.stateDirectory + "/" + copy) == Array(bytes[offset...]),
                "\(damage.name): the copy holds the cut bytes")
            #expect(report.contains(copy), "\(damage.name): the report names the copy: \(report)")
        }
        let journal = CrashSupport.bytes(daemon.stateDirectory + "/journal") ?? []
        if offset >= JournalFormat.headerSize {
            #expect(
                journal.prefix(offset) == bytes.prefix(offset),
                "\(damage.name): the records before the damage stay as they were")
        } else {
            #expect(
                journal.prefix(JournalFormat.headerSize).elementsEqual(JournalFormat.header()),
                "\(damage.name): a fresh header")
        }

        // Every job recorded before the damage is there, in the state it had.
        let expected = fixture.state(keeping: kept)
        try expectJobs(daemon, match: expected, damage.name)

        // Cut off for good: a clean restart finds nothing wrong and the same jobs.
        #expect(daemon.stop() == 0)
        try daemon.start()
        let again = try daemon.ctlJSON(DaemonStatus.self, ["status"])
        #expect(
            again.journalDamage == nil,
            "\(damage.name): damage reported again after a clean restart: \(String(describing: again.journalDamage))")
        #expect(damagedCopies(daemon).count == 1, "\(damage.name): no second copy")
        try expectJobs(daemon, match: expected, damage.name)
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
    /// them, is caught by the record decoder the daemon replays with: it keeps the records before
    /// and stops at the damaged one. (Cheap, so every offset; the daemon runs for a few above.)
    @Test func everyCutAndEveryFlippedByteOfTheLastRecordsIsCaught() throws {
        let last = fixture.frames.suffix(3)
        var tail = JournalFormat.header()
        var frames: [Range<Int>] = []
        for frame in last {
            frames.append(tail.count..<(tail.count + frame.count))
            tail += fixture.bytes[frame]
        }
        func check(_ bytes: [UInt8], damageAt position: Int, _ what: String) throws {
            let contents = try JournalFormat.decode(bytes)
            let index = frames.firstIndex { $0.upperBound > position } ?? frames.count
            #expect(
                contents.records.count == index, "\(what): kept \(contents.records.count) records, expected \(index)")
            #expect(
                contents.damage?.offset == frames[index].lowerBound, "\(what): \(String(describing: contents.damage))")
            #expect(contents.validLength == frames[index].lowerBound, "\(what)")
        }
        var cases = 0
        for cut in JournalFormat.headerSize..<tail.count where !frames.contains(where: { $0.lowerBound == cut }) {
            try check(Array(tail[..<cut]), damageAt: cut, "cut at byte \(cut)")
            cases += 1
        }
        for offset in JournalFormat.headerSize..<tail.count {
            var flipped = tail
            flipped[offset] ^= UInt8(1) << UInt8(offset % 8)
            try check(flipped, damageAt: offset, "bit \(offset % 8) of byte \(offset) flipped")
            cases += 1
        }
        print(
            "journal damage: \(cases) cuts and bit flips of the last 3 records (\(tail.count - 12) bytes) caught by the decoder"
        )
    }

    /// IDs are never reused (DESIGN.md), not even those of jobs lost to damage in the middle of
    /// the journal: a job added after recovery gets an ID above every ID the file ever held.
    @Test func idsOfJobsLostToDamageAreNotReused() throws {
        let (bytes, _, kept) = DamageCase(name: "zeroed page", kind: .zeroPage).apply(to: fixture)
        let everyID = fixture.state(keeping: fixture.records.count).nextID
        #expect(fixture.state(keeping: kept).nextID < everyID, "the damage cut off jobs")
        let daemon = try daemon("ids", journal: bytes)
        defer { daemon.stop() }
        try daemon.start()
        let source = try TestPaths.scratch("journal-ids").appendingPathComponent("new.bin").path
        try CrashSupport.randomFile(at: source, size: 100)
        let target = try TestPaths.scratch("journal-ids-dest")
        let id = try daemon.add([source], to: "file://\(target.path)/")[0]
        #expect(
            id.rawValue >= everyID,
            "job \(id) reuses an ID of a job in the cut-off part (the journal had IDs up to \(everyID - 1))")
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
