import Foundation
import Testing
import UploadWire

@testable import UploadCore
@testable import UploadDaemon

/// `QueueMove.plan`: where a job goes, and when its neighbours must be spaced out first.
@Suite struct QueueMoveTests {
    static func job(_ id: UInt64, priority: Int = 0, rank: Int64) -> Job {
        var job = Job(id: JobID(id), spec: JobSpec(source: "/f/\(id)", destination: "file:///o/"), createdAt: Date())
        job.spec.priority = priority
        job.rank = rank
        return job
    }

    @Test func aJobGoesBetweenItsNeighboursAndTakesTheAnchorsPriority() {
        let others = [Self.job(1, priority: 5, rank: 0), Self.job(2, priority: 5, rank: 1 << 16)]
        let moving = Self.job(3, rank: 7)
        let plan = QueueMove.plan(moving, MoveParams(id: JobID(3), before: JobID(2)), others: others, anchor: others[1])
        #expect(plan == .place(priority: 5, rank: 1 << 15, destination: "before job 2"))
        let top = QueueMove.plan(moving, MoveParams(id: JobID(3), top: true), others: others, anchor: nil)
        #expect(top == .place(priority: 5, rank: -(1 << 16), destination: "to the top"))
    }

    @Test func neighboursWithNoRankBetweenThemAreSpacedOutFirst() {
        let others = [Self.job(1, rank: 10), Self.job(2, rank: 11), Self.job(4, priority: 9, rank: 0)]
        let moving = Self.job(3, rank: 50)
        let plan = QueueMove.plan(moving, MoveParams(id: JobID(3), after: JobID(1)), others: others, anchor: others[0])
        // Job 4 (priority 9) starts first; jobs 1 and 2 keep their order, spaced by the gap.
        guard case .renumber(let spaced) = plan else {
            Issue.record("expected the neighbours spaced out first, got \(plan)")
            return
        }
        #expect(spaced.map(\.id) == [JobID(1), JobID(2)])
        #expect(spaced.map(\.place.rank) == [2 << 16, 3 << 16])
    }
}
