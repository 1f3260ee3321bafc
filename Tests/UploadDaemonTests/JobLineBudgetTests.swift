import Testing
import UploadWire

@testable import UploadDaemon
@testable import UploadPlatform

@Suite("Routine lines about jobs: at most 100 a second, the rest summed up")
struct JobLineBudgetTests {
    @Test func aFewLinesAreAllWrittenAndNeedNoSummary() {
        var budget = JobLineBudget()
        for id in 1...JobLineBudget.perSecond {
            let (decision, summary) = budget.admit(JobID(UInt64(id)), state: "completed", at: 10 + Double(id) / 1000)
            #expect(decision == .write && summary == nil)
        }
        #expect(!budget.isHolding)
        let late = budget.summary(at: 12)
        #expect(late == nil)
    }

    @Test func linesPastTheBudgetAreHeldAndSummedUpOnceTheSecondIsOver() throws {
        var budget = JobLineBudget()
        var decisions: [JobLineBudget.Decision] = []
        for id in 1...250 {
            let state = id % 10 == 0 ? "canceled" : "completed"
            decisions.append(budget.admit(JobID(UInt64(id)), state: state, at: 5 + Double(id) / 1000).0)
        }
        #expect(decisions.prefix(100).allSatisfy { $0 == .write })
        #expect(decisions.dropFirst(100).allSatisfy { $0 == .hold })
        #expect(budget.isHolding)
        let early = budget.summary(at: 5.9)
        #expect(early == nil, "the second is not over")

        let over = budget.summary(at: 6.01)
        let summary = try #require(over)
        #expect(summary.text.hasPrefix("150 more lines about jobs 101 to 250 in that second"), "\(summary)")
        #expect(summary.text.contains(": 135 completed, 15 canceled."), "the most frequent state first: \(summary)")
        let again = budget.summary(at: 9)
        #expect(!budget.isHolding && again == nil, "said once")
    }

    @Test func theNextLineAfterTheSecondBringsItsSummaryAndStartsAFreshBudget() throws {
        var budget = JobLineBudget()
        for id in 1...101 { _ = budget.admit(JobID(UInt64(id)), state: "queued", at: 1) }
        let (decision, summary) = budget.admit(JobID(500), state: "completed", at: 2.5)
        #expect(decision == .write)
        #expect(try #require(summary).text.hasPrefix("1 more line about job 101 in that second"))
        for id in 501...599 {
            let (decision, _) = budget.admit(JobID(UInt64(id)), state: "completed", at: 2.6)
            #expect(decision == .write)
        }
        let (past, _) = budget.admit(JobID(600), state: "completed", at: 2.7)
        #expect(past == .hold)
    }

    @Test func theSummaryIsAsSevereAsTheMostSevereLineItHolds() {
        var budget = JobLineBudget()
        for id in 1...102 { _ = budget.admit(JobID(UInt64(id)), state: "completed", level: .info, at: 1) }
        #expect(budget.summaryLevel == .info)
        _ = budget.admit(JobID(103), state: "queued", level: .notice, at: 1.5)
        #expect(budget.summaryLevel == .notice, "a retry's notice held: the summary is seen at --log-level notice")
        let summary = budget.summary(at: 2.1)
        #expect(summary != nil && summary?.level == .notice, "it is written at the level it holds")
        #expect(budget.summaryLevel == .info)
    }
}
