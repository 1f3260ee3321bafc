import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP

/// Big files copied alongside their upload (`GrowingCopy`, `Scheduler+CopyAlongside`): the upload
/// starts at once and reads only what is copied; the job reaches the journal, and its add is
/// answered, once its copy is saved or it ended first; an add undone leaves nothing behind.
@Suite(.serialized)
struct CopyAlongsideTests {
    /// Bigger than `SnapshotCache.alongsideThreshold`, and not a multiple of the copier's step.
    static let size = Int(SnapshotCache.alongsideThreshold) + 3 * GrowingCopy.step / 2 + 17

    /// Bytes that tell their offset (a 251-byte cycle), made a mebibyte at a time.
    static func pattern(_ count: Int) -> [UInt8] {
        let block = (0..<(251 << 12)).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count { bytes += block.prefix(count - bytes.count) }
        return bytes
    }

    /// Holds every copy started after it until `open()`: the copier runs one copy at a time.
    final class CopierGate: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        init() { GrowingCopy.onCopier { [gate] in gate.wait() } }
        func open() { gate.signal() }
    }

    /// A PUT job of a big file (the scheduler's transfer is the fake, which waits for copied bytes
    /// as a request body would).
    static func params(_ harness: SchedulerHarness, name: String = "big.bin") throws -> AddParams {
        let path = try harness.directory.write("src/" + name, bytes: pattern(size))
        var params = AddParams(source: path, destination: "http://127.0.0.1:9/up/")
        params.protocol = .put
        return params
    }

    /// The IDs of the jobs the journal file names, once what is queued is on disk.
    static func journaledIDs(_ harness: SchedulerHarness) async throws -> Set<JobID> {
        try await harness.journal.appendDurably([])
        var ids = Set<JobID>()
        for record in try JournalFormat.decode(try harness.directory.read("state/journal")).records {
            switch record {
            case .job(let job): ids.insert(job.id)
            case .progress(let progress): ids.insert(progress.id)
            default: break
            }
        }
        return ids
    }

    /// A big PUT add under way: the fake holds its upload, which has started, and `gate` holds
    /// its copy back; `added` is the add's answer to come.
    static func heldAdd(sourceLocation: SourceLocation = #_sourceLocation) async throws -> (
        fake: FakeTransfer, harness: SchedulerHarness, params: AddParams, gate: CopierGate,
        added: Task<JobInfo, any Error>
    ) {
        let fake = FakeTransfer()
        fake.script("big.bin", [.hold])
        let harness = try await SchedulerHarness(fake: fake)
        let params = try params(harness)
        let gate = CopierGate()
        let added = Task { try await harness.scheduler.add(params) }
        #expect(
            await harness.waitUntilUploading("big.bin", sourceLocation: sourceLocation),
            "the upload starts while the copy waits", sourceLocation: sourceLocation)
        return (fake, harness, params, gate, added)
    }

    static func cacheFiles(_ harness: SchedulerHarness) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: harness.snapshots.directory)) ?? []
    }

    @Test func theUploadStartsBeforeTheCopyIsSavedAndTheAddIsAnsweredOnceItIs() async throws {
        let (fake, harness, _, gate, added) = try await Self.heldAdd()
        let id = JobID(1)
        #expect(await harness.state(id) == .running)
        #expect(
            try await Self.journaledIDs(harness).isEmpty, "nothing of the job is journaled before its copy is saved")

        gate.open()
        let info = try await added.value
        #expect(info.id == id)
        let journaled = try JournalFormat.decode(try harness.directory.read("state/journal")).records.compactMap {
            record -> Job? in
            guard case .job(let job) = record, job.id == id else { return nil }
            return job
        }
        #expect(journaled.last?.snapshot?.kind == .copy)
        #expect(journaled.last?.snapshot?.cachedCopy != nil, "journaled with the saved copy's identity")

        fake.release("big.bin")
        #expect(await harness.wait(id, .completed))
        #expect(fake.snapshot.sent["big.bin"]?.bytes == Self.pattern(Self.size))
        #expect(await eventually { Self.cacheFiles(harness).isEmpty })
        await harness.stop()
    }

    @Test func aJobCanceledBeforeItsCopyIsSavedIsJournaledCanceledAndItsAddAnswered() async throws {
        let (_, harness, _, gate, added) = try await Self.heldAdd()
        defer { gate.open() }
        _ = try await harness.perform(.cancel, JobID(1))
        let info = try await added.value
        #expect(info.state == .canceled)
        #expect(try await Self.journaledIDs(harness) == [JobID(1)])
        #expect(await eventually { Self.cacheFiles(harness).isEmpty })
        await harness.stop()
    }

    /// Removed while it runs: forgotten at once, its add undone; the server drops its part later.
    @Test func aJobRemovedBeforeItsCopyIsSavedFailsItsAddAndIsGone() async throws {
        let (fake, harness, _, gate, added) = try await Self.heldAdd()
        defer { gate.open() }
        // The server is slow to drop the partial upload: the add is undone without waiting for it.
        fake.holdDiscards(true)
        _ = try await harness.perform(.remove, JobID(1))
        await #expect {
            _ = try await added.value
        } throws: { error in
            (error as? RPCError)?.message.contains("was removed") == true
        }
        #expect(await harness.job(JobID(1)) == nil)
        #expect(try await Self.journaledIDs(harness).isEmpty, "nothing of the job was journaled")
        fake.holdDiscards(false)
        #expect(await eventually { fake.snapshot.discarded == ["big.bin"] }, "the partial upload is dropped")
        #expect(await eventually { Self.cacheFiles(harness).isEmpty })
        await harness.stop()
        let again = try await SchedulerHarness(fake: fake, reusing: harness.directory)
        #expect(await again.scheduler.list(states: nil, ids: nil).isEmpty)
        await again.stop()
    }

    /// Removed while queued (uploads wait for the network): forgotten at once, never journaled.
    @Test func aQueuedJobRemovedBeforeItsCopyIsSavedUndoesItsAdd() async throws {
        let harness = try await SchedulerHarness(reachability: { _, _ in .unreachable("offline") })
        let params = try Self.params(harness)
        let gate = CopierGate()
        defer { gate.open() }
        let added = Task { try await harness.scheduler.add(params) }
        #expect(await eventually { await harness.job(JobID(1))?.waiting == "network" })
        _ = try await harness.perform(.remove, JobID(1))
        await #expect {
            _ = try await added.value
        } throws: { error in
            (error as? RPCError)?.message.contains("removed before its copy was made") == true
        }
        #expect(try await Self.journaledIDs(harness).isEmpty)
        #expect(await harness.job(JobID(1)) == nil)
        #expect(await eventually { Self.cacheFiles(harness).isEmpty })
        await harness.stop()
    }

    @Test func aSourceCutShortWhileItIsCopiedUndoesTheAdd() async throws {
        let (fake, harness, params, gate, added) = try await Self.heldAdd()
        #expect(truncate(params.source, 1 << 20) == 0)
        gate.open()
        await #expect {
            _ = try await added.value
        } throws: { error in
            let error = error as? RPCError
            return error?.code == RPCError.sourceErrorCode && error?.message.contains("got shorter") == true
        }
        #expect(await harness.job(JobID(1)) == nil, "the job goes with its add")
        #expect(fake.snapshot.sent["big.bin"] == nil, "nothing was sent whole")
        #expect(try await Self.journaledIDs(harness).isEmpty)
        #expect(await eventually { Self.cacheFiles(harness).isEmpty })
        await harness.stop()
    }

    @Test func aStopBeforeTheCopyIsSavedForgetsTheJobAndTellsTheClient() async throws {
        let (fake, harness, _, gate, added) = try await Self.heldAdd()
        defer { gate.open() }
        await harness.stop()
        await #expect {
            _ = try await added.value
        } throws: { error in
            (error as? RPCError)?.code == RPCError.shuttingDownCode
        }
        // The next start finds no job, and sweeps the copy away.
        let again = try await SchedulerHarness(fake: fake, reusing: harness.directory)
        #expect(await again.scheduler.list(states: nil, ids: nil).isEmpty)
        #expect(Self.cacheFiles(again).isEmpty)
        await again.stop()
    }

    // MARK: - Reading a copy being made

    @Test func aCopyBeingMadeIsReadOnlyAsFarAsItIsCopied() throws {
        let directory = try TemporaryDirectory()
        let bytes = Self.pattern(300_000)
        let path = try directory.write("copy", bytes: bytes)
        let copy = GrowingCopy(path: path, size: Int64(bytes.count))
        var snapshot = SourceSnapshot(
            kind: .copy, path: path, size: Int64(bytes.count), device: 0, inode: 0, modificationTimeNanoseconds: 0)
        snapshot.cachedCopy = nil
        let file = try SourceFile(snapshot: snapshot, displayPath: "big.bin", growing: copy)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        defer { buffer.deallocate() }

        #expect(!file.isReady(at: 0))
        #expect(file.read(into: buffer, count: 100, at: 0) == -1 && errno == EAGAIN, "nothing copied: nothing read")
        copy.advance(to: 1_000)
        #expect(file.read(into: buffer, count: 5_000, at: 0) == 1_000, "a read stops where the copy is")
        #expect(file.read(into: buffer, count: 10, at: 995) == 5)
        #expect(!file.isReady(at: 1_000))

        // A request body pauses there, and asks to be woken when the copier gets further.
        let reader = BodyReader(.file(FileRegion(file: file, offset: 0, length: Int64(bytes.count))))
        var sent: [UInt8] = []
        func drain() -> Int {
            let count = reader.read(into: buffer, capacity: 64 << 10)
            if count > 0 { sent += UnsafeRawBufferPointer(start: buffer, count: count) }
            return count
        }
        while drain() > 0 {}
        #expect(sent.count == 1_000)
        #expect(drain() == BodyReader.notReady)
        let woken = Mutex(0)
        #expect(!reader.resumeIfReady { woken.withLock { $0 += 1 } })
        #expect(!reader.resumeIfReady { woken.withLock { $0 += 1 } }, "one wake-up asked for per pause")
        copy.advance(to: 200_000)
        #expect(woken.withLock { $0 } == 1)
        #expect(reader.resumeIfReady { Issue.record("ready: no wake-up needed") })
        while drain() > 0 {}
        #expect(sent.count == 200_000)
        copy.advance(to: Int64(bytes.count))
        #expect(reader.resumeIfReady { Issue.record("ready: no wake-up needed") })
        while drain() > 0 {}
        #expect(sent == bytes, "every byte once, in order")
    }

    @Test func bytesNotCopiedYetAreReadFromTheOriginalUntilItChanges() throws {
        let directory = try TemporaryDirectory()
        let bytes = Self.pattern(300_000)
        let sourcePath = try directory.write("source", bytes: bytes)
        // The copier's file: full size from the start, nothing copied into it yet.
        let path = try directory.write("copy", bytes: [UInt8](repeating: 0, count: bytes.count))
        let copy = GrowingCopy(path: path, size: Int64(bytes.count), original: open(sourcePath, O_RDONLY | O_CLOEXEC))
        let snapshot = SourceSnapshot(
            kind: .copy, path: path, size: Int64(bytes.count), device: 0, inode: 0, modificationTimeNanoseconds: 0)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        defer { buffer.deallocate() }
        func send(_ file: SourceFile) -> (sent: [UInt8], last: Int, error: TransferFailure?) {
            let reader = BodyReader(.file(FileRegion(file: file, offset: 0, length: Int64(bytes.count))))
            var sent: [UInt8] = []
            var count = 0
            repeat {
                count = reader.read(into: buffer, capacity: 64 << 10)
                if count > 0 { sent += UnsafeRawBufferPointer(start: buffer, count: count) }
            } while count > 0
            return (sent, count, reader.readError)
        }

        // The first 1,000 bytes from the copy (zeros here, to tell them apart), the rest from the original.
        copy.advance(to: 1_000)
        let first = try SourceFile(snapshot: snapshot, displayPath: "big.bin", growing: copy)
        #expect(first.isReady(at: 5_000), "no pause for bytes the original has")
        let whole = send(first)
        #expect(whole.last == 0 && whole.error == nil)
        #expect(whole.sent == [UInt8](repeating: 0, count: 1_000) + bytes.dropFirst(1_000), "every byte once, in order")

        // A write to the original: the next body's last bytes do not go, the attempt may be tried
        // again, and from then on reads wait for the copier.
        let writer = open(sourcePath, O_WRONLY | O_APPEND | O_CLOEXEC)
        #expect(writer >= 0 && write(writer, "more", 4) == 4)
        close(writer)
        let changed = send(try SourceFile(snapshot: snapshot, displayPath: "big.bin", growing: copy))
        #expect(changed.last == -1)
        #expect(changed.error?.retryable == true)
        #expect(changed.error?.error.message.contains("changed while it was sent ahead of its copy") == true)
        #expect(!copy.readsAhead)
        let after = try SourceFile(snapshot: snapshot, displayPath: "big.bin", growing: copy)
        #expect(!after.isReady(at: 1_000))
        #expect(after.read(into: buffer, count: 10, at: 1_000) == -1 && errno == EAGAIN)
        #expect(after.read(into: buffer, count: 5_000, at: 0) == 1_000, "what is copied is still read")
    }

    @Test func theCopierCopiesEveryByteThenSavesTheCopy() async throws {
        let directory = try TemporaryDirectory()
        let bytes = Self.pattern(GrowingCopy.step * 2 + 12_345)
        let source = open(try directory.write("source", bytes: bytes), O_RDONLY | O_CLOEXEC)
        let path = directory.path + "/copy"
        let target = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(source >= 0 && target >= 0 && ftruncate(target, off_t(bytes.count)) == 0)
        let copy = GrowingCopy.start(
            from: source, to: target, path: path, size: Int64(bytes.count), folder: directory.path,
            displayPath: "source")
        guard case .copied = await copy.outcome() else {
            Issue.record("the copy did not finish")
            return
        }
        #expect(copy.isCopied)
        let identity = try copy.save()
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(identity?.inode == UInt64(info.st_ino))
        #expect(try directory.read("copy") == bytes)
    }
}
