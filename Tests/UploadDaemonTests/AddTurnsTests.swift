import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("Adds at once take their IDs in the order they came")
struct AddTurnsTests {
    /// The rule alone: turns parked out of order go on in order, each once the one before ends.
    @Test func parkedTurnsGoOnInOrder() async {
        let taker = TurnTaker()
        let turns = await taker.take(3)
        #expect(turns == [0, 1, 2])
        // The last two ask first; neither may go before turn 0 ends.
        let late = Task { await taker.run(turns[2]) }
        let middle = Task { await taker.run(turns[1]) }
        while await taker.parkedCount < 2 { await Task.yield() }
        #expect(await taker.ran.isEmpty)
        await taker.run(turns[0])
        _ = await (late.value, middle.value)
        #expect(await taker.ran == [0, 1, 2])
    }

    /// A client's second add whose files are checked long before its first's still gets the later
    /// IDs.
    @Test func aLaterAddWhoseChecksEndFirstWaitsForTheEarlierOnesIDs() async throws {
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1))
        // Many files to check for the first add (in chunks, on other threads), one for the second.
        func params(_ name: String) throws -> AddParams {
            var params = AddParams(
                source: try harness.directory.write("src/\(name)", "\(name)\n"),
                destination: "file://\(harness.directory.path)/out/")
            params.snapshot = SnapshotMode.none
            return params
        }
        let many = try (0..<3_000).map { try params("many-\($0)") }
        let one = try params("one")
        let client = ControlClientID.next()
        let first = Task { await harness.scheduler.add(many, orderedFor: client) }
        while await harness.scheduler.addTurns[client] == nil { await Task.yield() }
        let second = await harness.scheduler.add([one], orderedFor: client)
        let firstIDs = try await first.value.map { try $0.get().id }
        let secondID = try #require(try second.first?.get().id)
        #expect(firstIDs == firstIDs.sorted())
        #expect(
            firstIDs.allSatisfy { $0 < secondID },
            "the later add got \(secondID), before the earlier's \(firstIDs.last!)")
        await harness.stop()
    }
}

/// An actor that waits for its turns as the scheduler does.
private actor TurnTaker {
    var turns = AddTurns()
    var ran: [Int] = []
    var parkedCount = 0

    func take(_ count: Int) -> [Int] { (0..<count).map { _ in turns.take() } }

    func run(_ turn: Int) async {
        if !turns.isCurrent(turn) {
            parkedCount += 1
            await withCheckedContinuation { turns.park(turn, $0) }
        }
        ran.append(turn)
        turns.end(turn)?.resume()
    }
}
