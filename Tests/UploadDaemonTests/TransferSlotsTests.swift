import Testing
import UploadWire

@testable import UploadDaemon

/// Small files run wider than `transfers` while the config does not set it; a set one is exact.
@Suite("TransferSlots")
struct TransferSlotsTests {
    static let small: Int64 = 64 << 10
    static let big: Int64 = 100 << 20

    @Test func transfersBoundUploadsOfAnySize() {
        let slots = TransferSlots(transfers: 2, smallFilesRunWider: true)
        #expect(slots.mayStart(bytesLeft: Self.big, running: []))
        #expect(slots.mayStart(bytesLeft: Self.big, running: [Self.small]))
        #expect(!slots.mayStart(bytesLeft: Self.big, running: [Self.small, Self.small]))
    }

    @Test func smallFilesRunBesideUpToEightAtOnce() {
        let slots = TransferSlots(transfers: 2, smallFilesRunWider: true)
        #expect(slots.mostAtOnce == 8)
        #expect(slots.mayStart(bytesLeft: Self.small, running: [Self.big, Self.big]))
        #expect(slots.mayStart(bytesLeft: Self.small, running: Array(repeating: Self.small, count: 7)))
        #expect(!slots.mayStart(bytesLeft: Self.small, running: Array(repeating: Self.small, count: 8)))
        #expect(slots.mayStart(bytesLeft: TransferSlots.smallFile, running: [Self.big, Self.big]))
        #expect(!slots.mayStart(bytesLeft: TransferSlots.smallFile + 1, running: [Self.big, Self.big]))
    }

    @Test func theSmallOnesTogetherStayUnderTheirBudget() {
        let slots = TransferSlots(transfers: 2, smallFilesRunWider: true)
        let mebibyte: Int64 = 1 << 20
        // Two any size, then small ones while what they have left stays at most 4 MiB together.
        #expect(slots.mayStart(bytesLeft: mebibyte, running: [mebibyte, mebibyte, mebibyte]))
        #expect(!slots.mayStart(bytesLeft: mebibyte, running: [mebibyte, mebibyte, mebibyte, mebibyte]))
        #expect(slots.mayStart(bytesLeft: mebibyte - 3, running: [mebibyte, mebibyte, mebibyte, 1]))
        #expect(!slots.mayStart(bytesLeft: mebibyte - 3, running: [mebibyte, mebibyte, mebibyte, 4]))
        // Big ones running do not count against the small ones' budget.
        #expect(slots.mayStart(bytesLeft: mebibyte, running: [Self.big, Self.big, mebibyte, mebibyte, mebibyte]))
    }

    @Test func aTransfersTheConfigSetsIsExact() throws {
        let slots = TransferSlots(transfers: 2, smallFilesRunWider: false)
        #expect(slots.mostAtOnce == 2)
        #expect(!slots.mayStart(bytesLeft: 1, running: [1, 1]))
        #expect(TransferSlots(transfers: 12, smallFilesRunWider: true).mostAtOnce == 12)
        #expect(DaemonConfig().transferSlots == TransferSlots(transfers: 2, smallFilesRunWider: true))
        let directory = try TemporaryDirectory()
        let path = try directory.write("uploadd.conf", "[daemon]\ntransfers = 3\n")
        #expect(
            try DaemonConfig.load(path: path).transferSlots == TransferSlots(transfers: 3, smallFilesRunWider: false))
    }

    @Test func theSchedulerRunsSmallFilesWiderAndABigOneWaitsItsTurn() async throws {
        let fake = FakeTransfer(defaultStep: .hold)
        let harness = try await SchedulerHarness(
            config: SchedulerHarness.config(transfers: 2), fake: fake, smallFilesRunWider: true)
        var ids: [String: JobID] = [:]
        for name in ["s0", "s1", "s2"] { ids[name] = try await harness.add(name) }
        ids["big"] = try await harness.add("big", size: 2 << 20)
        for index in 3..<10 { ids["s\(index)"] = try await harness.add("s\(index)") }

        // Two of any size, a third because it is small; the big one is next, and nothing
        // passes it.
        #expect(await harness.waitForStarts(3))
        try await Task.sleep(for: .milliseconds(100))
        #expect(fake.started == ["s0", "s1", "s2"])

        // Two end: the big one takes a slot of the two, and small ones fill up to eight.
        for name in ["s0", "s1"] {
            fake.release(name)
            #expect(await harness.wait(ids[name]!, .completed))
        }
        #expect(await harness.waitForStarts(10))
        try await Task.sleep(for: .milliseconds(100))
        // Started together, their transfers begin in any order: which ones, not their order.
        #expect(fake.started.prefix(3) == ["s0", "s1", "s2"])
        #expect(Set(fake.started.dropFirst(3)) == ["big", "s3", "s4", "s5", "s6", "s7", "s8"])
        #expect(fake.snapshot.running.count == 8)

        for name in ids.keys { fake.release(name) }
        for (name, id) in ids { #expect(await harness.wait(id, .completed), "\(name)") }
        #expect(fake.snapshot.maxRunning == 8)
        await harness.stop()
    }
}
