import Foundation
import Glibc
import Synchronization
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon
@testable import UploadHTTP
@testable import UploadPlatform

/// A preparation step for these tests, registered as `image`: its options pick what it does, and
/// like a real decoder it works in a helper process (`tr`, `sh`).
final class ScriptedStep: PreparationStep {
    let name = "image"
    private let count = Mutex(0)
    var runs: Int { count.withLock { $0 } }

    func validate(options: String) throws(PreparationFailure) {
        guard ["upper", "same", "crash", "hold", "fail"].contains(options) else {
            throw PreparationFailure("image: unknown option '\(options)'")
        }
    }

    func prepare(_ input: PreparationInput, into output: Int32, options: String) async throws -> PreparationOutcome {
        count.withLock { $0 += 1 }
        let script: String
        switch options {
        case "same":
            return PreparationOutcome(details: [KeyValue(name: "kind", value: "not an image")], unchanged: true)
        case "crash": script = "kill -SEGV $$"
        case "hold": script = "sleep 30"
        case "fail": script = "echo 'not a JPEG file: starts with 0x68 0x65' >&2; exit 2"
        default: script = "tr a-z A-Z"
        }
        let helper = HelperProcess(executable: "/bin/sh", arguments: ["-c", script], timeout: .seconds(60))
        // The helper reads from the start of its input, whoever read it before.
        lseek(input.fd, 0, SEEK_SET)
        _ = try await helper.run(input: input.fd, output: output)
        let name = (input.fileName as NSString).deletingPathExtension + ".TXT"
        return PreparationOutcome(
            fileName: name, contentType: "text/plain", details: [KeyValue(name: "case", value: "upper")])
    }
}

@Suite("The preparation stage: between snapshot and upload", .serialized)
struct PreparationStageTests {
    func harness(
        _ step: ScriptedStep = ScriptedStep(), fake: FakeTransfer = FakeTransfer(), transfers: Int = 2,
        reusing: TemporaryDirectory? = nil
    ) async throws -> SchedulerHarness {
        try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: transfers, attempts: 2), fake: fake, reusing: reusing,
            preparationSteps: ["image": step])
    }

    func journaled(_ harness: SchedulerHarness, _ id: JobID) throws -> Job? {
        let (journal, replay) = try Journal.open(directory: harness.directory.path + "/state")
        journal.close()
        return replay.state.jobs[id]
    }

    func preparedFiles(_ harness: SchedulerHarness) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: harness.snapshots.preparedDirectory)) ?? []
    }

    @Test func theUploadSendsThePreparedBytesUnderTheirNewName() async throws {
        let harness = try await harness()
        let id = try await harness.add("notes.txt", image: "upper")
        #expect(await harness.wait(id, .completed))
        let sent = try #require(harness.fake.snapshot.sent["notes.txt"])
        #expect(String(decoding: sent.bytes, as: UTF8.self) == "THE CONTENT OF NOTES.TXT\n")
        #expect(sent.fileName == "notes.TXT")
        let info = try #require(await harness.job(id))
        #expect(info.bytesTotal == Int64(sent.bytes.count))
        // Deleted once the completion is on disk, a moment after the state reads completed.
        #expect(await eventually { preparedFiles(harness).isEmpty }, "\(preparedFiles(harness))")
        await harness.stop()
        let job = try #require(try journaled(harness, id))
        let prepared = try #require(job.prepared)
        #expect(prepared.size == Int64(sent.bytes.count))
        #expect(prepared.sha256 == Hex.encode(Crypto.sha256(sent.bytes)))
        #expect(prepared.details == [KeyValue(name: "case", value: "upper")])
        #expect(job.history.contains { $0.message.hasPrefix("prepared: ") })
    }

    @Test func aStepThatChangesNothingSendsTheSnapshotAsItIs() async throws {
        let harness = try await harness()
        let id = try await harness.add("data.bin", image: "same")
        #expect(await harness.wait(id, .completed))
        let sent = try #require(harness.fake.snapshot.sent["data.bin"])
        #expect(String(decoding: sent.bytes, as: UTF8.self) == "the content of data.bin\n")
        #expect(sent.fileName == "data.bin")
        await harness.stop()
        #expect(try journaled(harness, id)?.prepared?.details == [KeyValue(name: "kind", value: "not an image")])
    }

    @Test func aCrashingDecoderFailsItsJobAndTheOthersGoOn() async throws {
        let harness = try await harness()
        let crash = try await harness.add("bomb.png", image: "crash")
        let broken = try await harness.add("cut.jpg", image: "fail")
        let fine = try await harness.add("fine.txt")
        #expect(await harness.wait(crash, .failed))
        #expect(await harness.wait(broken, .failed))
        #expect(await harness.wait(fine, .completed))
        let crashed = try #require(await harness.job(crash))
        #expect(crashed.error?.code == "source")
        #expect(crashed.error?.message.contains("killed by signal 11") == true, "\(String(describing: crashed.error))")
        #expect(crashed.attempts == 0, "nothing was sent")
        let failed = try #require(await harness.job(broken))
        #expect(failed.error?.message.contains("not a JPEG file") == true, "\(String(describing: failed.error))")
        #expect(!harness.fake.started.contains("bomb.png"))
        #expect(preparedFiles(harness).isEmpty, "\(preparedFiles(harness))")
        await harness.stop()
    }

    @Test func preparationRunsAheadAndTakesNoTransferSlot() async throws {
        let fake = FakeTransfer()
        fake.script("big.bin", [.hold])
        let harness = try await harness(fake: fake, transfers: 1)
        let big = try await harness.add("big.bin")
        #expect(await harness.waitUntilUploading("big.bin"))
        let photo = try await harness.add("photo.txt", image: "upper")
        // Prepared while the only transfer slot is busy.
        let prepared = await eventually {
            await harness.job(photo)?.history?.contains { $0.message.hasPrefix("prepared: ") } ?? false
        }
        #expect(prepared)
        #expect(await harness.state(photo) == .queued)
        fake.release("big.bin")
        #expect(await harness.wait(big, .completed))
        #expect(await harness.wait(photo, .completed))
        await harness.stop()
    }

    @Test func pausingAPreparationStopsItsHelperAndLeavesNothing() async throws {
        let harness = try await harness()
        let id = try await harness.add("slow.txt", image: "hold")
        let started = await eventually { !preparedFiles(harness).isEmpty }
        #expect(started, "the step writes its partial file")
        let before = ContinuousClock.now
        _ = try await harness.perform(.pause, id)
        #expect(await harness.wait(id, .paused))
        #expect(await eventually { preparedFiles(harness).isEmpty }, "\(preparedFiles(harness))")
        #expect(ContinuousClock.now - before < .seconds(10), "the helper was killed, not waited for")
        #expect(harness.fake.started.isEmpty)
        await harness.stop()
    }

    @Test func aRestartSendsTheJournaledFileWithoutPreparingAgain() async throws {
        let fake = FakeTransfer()
        fake.script("resume.txt", [.hold])
        let step = ScriptedStep()
        let first = try await harness(step, fake: fake)
        let id = try await first.add("resume.txt", image: "upper")
        #expect(await first.waitUntilUploading("resume.txt"))
        #expect(step.runs == 1)
        await first.stop()

        let again = ScriptedStep()
        let second = try await harness(again, reusing: first.directory)
        #expect(await second.wait(id, .completed))
        #expect(again.runs == 0, "the journaled prepared file is sent, not a new one")
        let sent = try #require(second.fake.snapshot.sent["resume.txt"])
        #expect(String(decoding: sent.bytes, as: UTF8.self) == "THE CONTENT OF RESUME.TXT\n")
        await second.stop()
    }

    @Test func aPreparedFileChangedInTheCacheIsNotSent() async throws {
        let fake = FakeTransfer()
        fake.script("tampered.txt", [.hold])
        let harness = try await harness(fake: fake)
        let id = try await harness.add("tampered.txt", image: "upper")
        #expect(await harness.waitUntilUploading("tampered.txt"))
        _ = try await harness.perform(.pause, id)
        #expect(await harness.wait(id, .paused))
        // While it is paused, someone rewrites the prepared file (same size, other bytes).
        let path = try #require(await harness.scheduler.store.jobs[id]?.prepared?.path)
        let fd = open(path, O_WRONLY | O_TRUNC)
        _ = "THE CONTENT OF TAMPERED.TXX\n".withCString { write(fd, $0, 28) }
        close(fd)
        _ = try await harness.perform(.resume, id)
        #expect(await harness.wait(id, .failed))
        #expect(await harness.job(id)?.error?.message.contains("changed in the cache") == true)
        #expect(harness.fake.started.count == 1, "the changed bytes were never handed to a transfer")
        await harness.stop()
    }

    @Test func addRefusesAStepThisDaemonLacksOrOptionsItRefuses() async throws {
        let bare = try await SchedulerHarness(config: SchedulerHarness.config())
        await #expect(throws: RPCError.self) { _ = try await bare.add("a.jpg", image: "max=1024") }
        do {
            _ = try await bare.add("b.jpg", image: "max=1024")
        } catch let error as RPCError {
            #expect(error.code == RPCError.invalidParamsCode)
            #expect(error.message.contains("image preparation (--image) is not available"), "\(error.message)")
        }
        await bare.stop()
        let harness = try await harness()
        do {
            _ = try await harness.add("c.jpg", image: "sharpen")
            Issue.record("bad options were accepted")
        } catch let error as RPCError {
            #expect(error.message == "image: unknown option 'sharpen'")
        }
        await harness.stop()
    }
}
