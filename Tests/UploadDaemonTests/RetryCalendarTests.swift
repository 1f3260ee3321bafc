import Foundation
import Testing
import UploadWire

@testable import UploadDaemon

@Suite("RetryCalendar")
struct RetryCalendarTests {
    static let start = Date(timeIntervalSince1970: 1_000_000)

    static func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    @Test func theEarliestTimeIsOnTopAndDueJobsComeOutInTimeOrder() {
        var calendar = RetryCalendar()
        #expect(calendar.earliest() == nil)
        calendar.insert(JobID(3), at: Self.at(30))
        calendar.insert(JobID(1), at: Self.at(10))
        calendar.insert(JobID(2), at: Self.at(20))
        #expect(calendar.earliest() == Self.at(10))
        #expect(calendar.takeDue(at: Self.at(5)).isEmpty)
        #expect(calendar.takeDue(at: Self.at(20)) == [JobID(1), JobID(2)])
        #expect(calendar.count == 1 && calendar.contains(JobID(3)) && !calendar.contains(JobID(1)))
        #expect(calendar.earliest() == Self.at(30))
    }

    @Test func aRemovedJobIsNeitherDueNorEarliest() {
        var calendar = RetryCalendar()
        calendar.insert(JobID(1), at: Self.at(10))
        calendar.insert(JobID(2), at: Self.at(20))
        calendar.remove(JobID(1))
        #expect(calendar.earliest() == Self.at(20))
        #expect(calendar.takeDue(at: Self.at(100)) == [JobID(2)])
        #expect(calendar.isEmpty && calendar.earliest() == nil)
    }

    @Test func aMovedJobIsDueAtItsNewTimeOnly() {
        var calendar = RetryCalendar()
        calendar.insert(JobID(1), at: Self.at(10))
        calendar.insert(JobID(2), at: Self.at(20))
        calendar.insert(JobID(1), at: Self.at(40))  // backed off again
        #expect(calendar.earliest() == Self.at(20))
        #expect(calendar.takeDue(at: Self.at(30)) == [JobID(2)])
        calendar.insert(JobID(1), at: Self.at(15))  // moved earlier
        #expect(calendar.takeDue(at: Self.at(30)) == [JobID(1)])
        #expect(calendar.isEmpty)
    }

    /// Against a plain scan of every job, over many random inserts, moves, removals and takes,
    /// with the heap rebuilt when stale entries pile up.
    @Test func agreesWithAScanOfEveryJob() {
        var generator = SystemRandomNumberGenerator()
        var calendar = RetryCalendar()
        var plain: [JobID: Date] = [:]
        var now = 0.0
        for _ in 0..<5_000 {
            let id = JobID(UInt64.random(in: 1...300, using: &generator))
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let time = Self.at(now + Double(Int.random(in: 0...50, using: &generator)))
                calendar.insert(id, at: time)
                plain[id] = time
            case 6..<8:
                calendar.remove(id)
                plain[id] = nil
            default:
                now += Double(Int.random(in: 0...5, using: &generator))
                let due = calendar.takeDue(at: Self.at(now))
                let expected = plain.filter { $0.value <= Self.at(now) }
                #expect(Set(due) == Set(expected.keys) && due.count == expected.count)
                let times = due.map { plain[$0]! }
                #expect(times == times.sorted())
                for id in due { plain[id] = nil }
            }
            #expect(calendar.earliest() == plain.values.min())
            #expect(calendar.count == plain.count)
        }
    }

    @Test func aStartupSurveysDelayedJobsMakeTheCalendar() {
        var calendar = RetryCalendar([JobID(1): Self.at(30), JobID(2): Self.at(10), JobID(3): Self.at(20)])
        #expect(calendar.earliest() == Self.at(10))
        #expect(calendar.takeDue(at: Self.at(60)) == [JobID(2), JobID(3), JobID(1)])
    }
}
