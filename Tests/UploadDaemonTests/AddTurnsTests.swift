import Foundation
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

@Suite("Adds at once take their IDs in the order their lines were read")
struct AddTurnsTests {
    /// The rule alone: turns waiting out of order go on in order, each once the one before ends.
    @Test func waitingTurnsGoOnInOrder() async {
        let turns = AddTurns()
        let taken = (0..<3).map { _ in turns.take() }
        #expect(taken.map(\.number) == [0, 1, 2])
        let ran = RanList()
        // The last two wait first; neither may go before turn 0 ends.
        let late = Task { await run(taken[2], into: ran) }
        let middle = Task { await run(taken[1], into: ran) }
        while turns.parkedCount < 2 { await Task.yield() }
        #expect(await ran.numbers.isEmpty)
        await run(taken[0], into: ran)
        _ = await (late.value, middle.value)
        #expect(await ran.numbers == [0, 1, 2])
        #expect(turns.isIdle)
    }

    /// A request that adds nothing (a `status` between two adds) ends its turn as soon as it knows,
    /// even before the turn comes, and ending it twice changes nothing.
    @Test func aTurnEndedEarlyLetsTheNextAddGoOnInItsPlace() async {
        let turns = AddTurns()
        let (add, status, laterAdd) = (turns.take(), turns.take(), turns.take())
        status.end()
        status.end()
        let ran = RanList()
        let later = Task { await run(laterAdd, into: ran) }
        while turns.parkedCount < 1 { await Task.yield() }
        await run(add, into: ran)
        await later.value
        #expect(await ran.numbers == [0, 2])
        #expect(turns.isIdle)
    }

    /// The client's second add reaches the scheduler first (its task ran first) and its files are
    /// checked long before the first's: it still gets the later IDs, as its line came later.
    @Test func aLaterAddThatReachesTheSchedulerFirstWaitsForTheEarlierOnesIDs() async throws {
        let harness = try await SchedulerHarness(config: SchedulerHarness.config(transfers: 1))
        func params(_ name: String) throws -> AddParams {
            var params = AddParams(
                source: try harness.directory.write("src/\(name)", "\(name)\n"),
                destination: "file://\(harness.directory.path)/out/")
            params.snapshot = SnapshotMode.none
            return params
        }
        let many = try (0..<3_000).map { try params("many-\($0)") }
        let one = try params("one")
        let turns = AddTurns()
        let (firstTurn, secondTurn) = (turns.take(), turns.take())
        let second = Task { await harness.scheduler.add([one], turn: secondTurn) }
        while turns.parkedCount < 1 { await Task.yield() }
        let first = await harness.scheduler.add(many, turn: firstTurn)
        let firstIDs = try first.map { try $0.get().id }
        let secondID = try #require(try await second.value.first?.get().id)
        #expect(firstIDs == firstIDs.sorted())
        #expect(
            firstIDs.allSatisfy { $0 < secondID },
            "the later add got \(secondID), before the earlier's \(firstIDs.last!)")
        #expect(turns.isIdle)
        await harness.stop()
    }

    private func run(_ turn: AddTurn, into ran: RanList) async {
        await turn.wait()
        await ran.append(turn.number)
        turn.end()
    }
}

private actor RanList {
    var numbers: [Int] = []
    func append(_ number: Int) { numbers.append(number) }
}
