import Foundation
import Testing
import UploadWire

@testable import UploadCore

/// One row of the transition table: a command in a state gives a new state and effects, or nil
/// (an InvalidTransition).
struct TransitionCase: Sendable, CustomTestStringConvertible {
    var command: JobCommand
    var state: JobState
    var expected: (state: JobState, effects: JobEffects)?
    var testDescription: String { "\(command.rawValue) when \(state.rawValue)" }
}

private let stop = JobEffects.stopTransfer
private let discard = JobEffects.discardServerUpload
private let deleteFile = JobEffects.deleteCachedFile
private let reschedule = JobEffects.reschedule
private let forget = JobEffects.forget

let transitionTable: [TransitionCase] = [
    .init(command: .pause, state: .queued, expected: (.paused, [reschedule])),
    .init(command: .pause, state: .running, expected: (.paused, [stop, reschedule])),
    .init(command: .pause, state: .paused, expected: (.paused, [])),
    .init(command: .pause, state: .completed, expected: nil),
    .init(command: .pause, state: .failed, expected: nil),
    .init(command: .pause, state: .canceled, expected: nil),

    .init(command: .resume, state: .queued, expected: (.queued, [])),
    .init(command: .resume, state: .running, expected: (.running, [])),
    .init(command: .resume, state: .paused, expected: (.queued, [reschedule])),
    .init(command: .resume, state: .failed, expected: (.queued, [reschedule])),
    .init(command: .resume, state: .completed, expected: nil),
    .init(command: .resume, state: .canceled, expected: nil),

    .init(command: .retry, state: .failed, expected: (.queued, [reschedule])),
    .init(command: .retry, state: .queued, expected: (.queued, [])),
    .init(command: .retry, state: .running, expected: (.running, [])),
    .init(command: .retry, state: .paused, expected: nil),
    .init(command: .retry, state: .completed, expected: nil),
    .init(command: .retry, state: .canceled, expected: nil),

    .init(command: .cancel, state: .queued, expected: (.canceled, [discard, deleteFile, reschedule])),
    .init(command: .cancel, state: .running, expected: (.canceled, [stop, discard, deleteFile, reschedule])),
    .init(command: .cancel, state: .paused, expected: (.canceled, [discard, deleteFile, reschedule])),
    .init(command: .cancel, state: .failed, expected: (.canceled, [discard, deleteFile, reschedule])),
    .init(command: .cancel, state: .canceled, expected: (.canceled, [])),
    .init(command: .cancel, state: .completed, expected: nil),

    .init(command: .remove, state: .queued, expected: (.queued, [discard, deleteFile, forget, reschedule])),
    .init(command: .remove, state: .running, expected: (.running, [stop, discard, deleteFile, forget, reschedule])),
    .init(command: .remove, state: .paused, expected: (.paused, [discard, deleteFile, forget, reschedule])),
    .init(command: .remove, state: .failed, expected: (.failed, [discard, deleteFile, forget, reschedule])),
    .init(command: .remove, state: .completed, expected: (.completed, [deleteFile, forget, reschedule])),
    .init(command: .remove, state: .canceled, expected: (.canceled, [deleteFile, forget, reschedule])),
]

@Suite("Job life cycle state machine")
struct JobLifecycleTests {
    let now = Fixtures.epoch.addingTimeInterval(100)
    let policy = RetryPolicy(
        baseDelay: .seconds(1), maxDelay: .seconds(60), maxRetryAfter: .seconds(600), maxAttempts: 3, maxDuration: .zero
    )

    /// An outage of an hour does not fail a job: the count is spent after three attempts, the time
    /// budget (one day by default) is not.
    @Test func aJobFailsOnlyWhenBothBudgetsAreSpent() {
        let patient = RetryPolicy(maxAttempts: 3, maxDuration: .seconds(3600))
        var job = Fixtures.job(9, state: .queued)
        var clock = now
        for attempt in 1...10 {
            job.start(at: clock)
            _ = job.finishAttempt(
                .failed(JobError(code: "network", message: "down"), retryable: true, retryAfter: nil),
                madeProgress: false,
                policy: patient, at: clock, random: { $0.upperBound })
            #expect(job.state == .queued, "attempt \(attempt)")
            #expect(job.failingSince == now)
            clock = clock.addingTimeInterval(300)
        }
        clock = now.addingTimeInterval(3600)
        job.start(at: clock)
        _ = job.finishAttempt(
            .failed(JobError(code: "network", message: "down"), retryable: true, retryAfter: nil), madeProgress: false,
            policy: patient, at: clock)
        #expect(job.state == .failed)
        #expect(job.history.last?.message.contains("gave up after 11 attempts in a row over 3600s") == true)
    }

    @Test func noNetworkSpendsNothing() {
        var job = Fixtures.job(10, state: .queued)
        job.attempts = 4
        job.failuresWithoutProgress = 2
        job.start(at: now)
        #expect(job.attempts == 5)
        _ = job.finishAttempt(.noNetwork("no route"), madeProgress: false, policy: policy, at: now)
        #expect(job.state == .queued)
        #expect(job.attempts == 4)
        #expect(job.failuresWithoutProgress == 2)
        #expect(job.nextAttemptAt == nil)
        #expect(job.history.last?.message == "waiting for the network: no route")
    }

    @Test func tableCoversEveryCommandInEveryState() {
        let covered = Set(transitionTable.map { "\($0.command.rawValue)/\($0.state.rawValue)" })
        #expect(covered.count == JobCommand.allCases.count * JobState.allCases.count)
    }

    @Test(arguments: transitionTable)
    func transition(_ row: TransitionCase) throws {
        var job = Fixtures.job(4, state: row.state)
        job.nextAttemptAt = Fixtures.epoch
        let before = job
        if let expected = row.expected {
            let effects = try job.apply(row.command, at: now)
            #expect(job.state == expected.state)
            #expect(effects == expected.effects)
            if effects.isEmpty || row.command == .remove {
                #expect(job == before, "a no-op or a remove leaves the job itself alone")
            } else {
                #expect(job.updatedAt == now)
                #expect(job.nextAttemptAt == nil)
                #expect(job.history.last?.message.isEmpty == false)
            }
        } else {
            let error = #expect(throws: InvalidTransition.self) { try job.apply(row.command, at: now) }
            #expect(error?.id == JobID(4))
            #expect(error?.state == row.state)
            #expect(
                error?.description.hasPrefix("job 4 is \(row.state.rawValue): cannot \(row.command.rawValue) it; ")
                    == true)
            #expect((error?.hint.count ?? 0) > 10, "the hint says what would work")
            #expect(job == before)
        }
    }

    @Test func resumeOfAFailedJobClearsTheErrorAndTheBudget() throws {
        var job = Fixtures.job(1, state: .failed)
        job.error = JobError(code: "network", message: "down")
        job.failuresWithoutProgress = 3
        _ = try job.apply(.resume, at: now)
        #expect(job.error == nil)
        #expect(job.failuresWithoutProgress == 0)
    }

    @Test func startCountsAttemptsAndClearsTheRetryTime() {
        var job = Fixtures.job(1)
        job.attempts = 0
        job.nextAttemptAt = now
        job.start(at: now)
        #expect(job.state == .running)
        #expect(job.attempts == 1)
        #expect(job.nextAttemptAt == nil)
        #expect(job.updatedAt == now)
    }

    @Test func completionSetsResultAndAckedBytes() {
        var job = Fixtures.job(1, state: .running)
        job.error = JobError(code: "network", message: "earlier")
        let result = JobResult(url: "https://h/x", status: 201)
        let effects = job.finishAttempt(.completed(result), madeProgress: true, policy: policy, at: now)
        #expect(job.state == .completed)
        #expect(job.result == result)
        #expect(job.error == nil)
        #expect(job.bytesAcked == job.bytesTotal)
        #expect(effects == [deleteFile, reschedule])
    }

    @Test func retryableFailuresRequeueUntilTheBudgetRunsOut() {
        var job = Fixtures.job(1, state: .running)
        let failure = AttemptOutcome.failed(
            JobError(code: "network", message: "connection reset"), retryable: true, retryAfter: nil)
        let upper: (ClosedRange<Double>) -> Double = { $0.upperBound }

        for (attempt, expectedDelay) in [(1, 1.0), (2, 2.0)] {
            let effects = job.finishAttempt(failure, madeProgress: false, policy: policy, at: now, random: upper)
            #expect(effects == [reschedule])
            #expect(job.state == .queued, "attempt \(attempt)")
            #expect(job.failuresWithoutProgress == attempt)
            #expect(job.nextAttemptAt == now.addingTimeInterval(expectedDelay))
            #expect(job.error?.message == "connection reset")
            #expect(job.history.last?.message.contains("retrying in") == true)
            job.start(at: now)
        }
        let effects = job.finishAttempt(failure, madeProgress: false, policy: policy, at: now, random: upper)
        #expect(effects == [reschedule, discard], "failed for good: the server's partial upload is dropped")
        #expect(job.state == .failed)
        #expect(job.nextAttemptAt == nil)
        #expect(job.failuresWithoutProgress == 3)
        #expect(job.history.last?.message.contains("gave up after 3 attempts") == true)
    }

    @Test func progressResetsTheBudget() {
        var job = Fixtures.job(1, state: .running)
        let failure = AttemptOutcome.failed(JobError(code: "timeout", message: "t"), retryable: true, retryAfter: nil)
        for _ in 0..<2 {
            _ = job.finishAttempt(failure, madeProgress: false, policy: policy, at: now)
            job.start(at: now)
        }
        #expect(job.failuresWithoutProgress == 2)
        _ = job.finishAttempt(failure, madeProgress: true, policy: policy, at: now)
        #expect(job.failuresWithoutProgress == 1)
        #expect(job.state == .queued)
        // Two more failures without progress are allowed again before giving up.
        job.start(at: now)
        _ = job.finishAttempt(failure, madeProgress: false, policy: policy, at: now)
        #expect(job.state == .queued)
        job.start(at: now)
        _ = job.finishAttempt(failure, madeProgress: false, policy: policy, at: now)
        #expect(job.state == .failed)
    }

    @Test func nonRetryableFailsAtOnce() {
        var job = Fixtures.job(1, state: .running)
        let error = JobError(code: "http", message: "PUT u: HTTP 403 Forbidden", status: 403)
        let effects = job.finishAttempt(
            .failed(error, retryable: false, retryAfter: nil), madeProgress: false, policy: policy, at: now)
        #expect(effects == [reschedule, discard])
        #expect(job.state == .failed)
        #expect(job.error == error)
        #expect(job.nextAttemptAt == nil)
        #expect(job.history.last?.message == "failed: PUT u: HTTP 403 Forbidden")
    }

    @Test func retryAfterSetsTheNextAttempt() {
        var job = Fixtures.job(1, state: .running)
        let outcome = AttemptOutcome.failed(
            JobError(code: "http", message: "busy", status: 503), retryable: true, retryAfter: .seconds(42))
        _ = job.finishAttempt(outcome, madeProgress: false, policy: policy, at: now)
        #expect(job.nextAttemptAt == now.addingTimeInterval(42))
    }

    @Test(arguments: [JobCommand.pause, .cancel])
    func outcomeAfterPauseOrCancelChangesNothing(command: JobCommand) throws {
        var job = Fixtures.job(1, state: .running)
        _ = try job.apply(command, at: now)
        let stopped = job
        for outcome in [
            AttemptOutcome.completed(JobResult(url: "u")),
            .failed(JobError(code: "network", message: "x"), retryable: true, retryAfter: nil),
            .failed(JobError(code: "http", message: "x"), retryable: false, retryAfter: nil),
        ] {
            let effects = job.finishAttempt(outcome, madeProgress: true, policy: policy, at: now.addingTimeInterval(5))
            #expect(effects.isEmpty)
            #expect(job == stopped)
        }
    }

    @Test(arguments: JobState.allCases)
    func requeueAfterRestartOnlyTouchesRunningJobs(state: JobState) {
        var job = Fixtures.job(1, state: state)
        let before = job
        job.requeueAfterRestart(at: now)
        if state == .running {
            #expect(job.state == .queued)
            #expect(job.history.last?.message.contains("uploadd stopped; resumes") == true)
            #expect(job.crashes == before.crashes, "a clean stop is not a crash")
        } else {
            #expect(job == before)
        }
    }

    @Test func aJobTheDaemonDiedInIsQueuedOnceThenFailed() {
        var job = Fixtures.job(2, state: .running)
        job.crashes = 0
        job.recoverAfterCrash(at: now)
        #expect(job.state == .queued)
        #expect(job.crashes == 1)
        #expect(job.history.last?.message.contains("stopped unexpectedly") == true)
        job.start(at: now)
        job.recoverAfterCrash(at: now)
        #expect(job.state == .failed)
        #expect(job.crashes == 2)
        #expect(job.error?.code == "crash")
        #expect(job.error?.message.contains("uploadctl resume 2") == true)
    }

    @Test func anAttemptThatEndsClearsTheCrashCount() {
        var job = Fixtures.job(2, state: .running)
        job.crashes = 1
        _ = job.finishAttempt(
            .failed(JobError(code: "network", message: "x"), retryable: true, retryAfter: nil),
            madeProgress: false, policy: RetryPolicy(), at: now)
        #expect(job.crashes == 0)
    }

    @Test(arguments: JobState.allCases.filter { $0 != .running })
    func onlyRunningJobsAreRecoveredAfterACrash(state: JobState) {
        var job = Fixtures.job(3, state: state)
        let before = job
        job.recoverAfterCrash(at: now)
        #expect(job == before)
    }

    @Test func historyKeepsTheLastTwentyLines() {
        var job = Fixtures.job(1)
        for index in 0..<50 { job.record("line \(index)", at: now) }
        #expect(job.history.count == Job.historyLimit)
        #expect(job.history.first?.message == "line 30")
        #expect(job.history.last?.message == "line 49")
    }

    @Test func delaysReadInTenthsUnderTenSecondsAndWholeSecondsAbove() {
        #expect(formatSeconds(0) == "0.0s")
        #expect(formatSeconds(3.74) == "3.7s")
        #expect(formatSeconds(3.76) == "3.8s")
        #expect(formatSeconds(9.94) == "9.9s")
        #expect(formatSeconds(9.97) == "10s")
        #expect(formatSeconds(25.4) == "25s")
        #expect(formatSeconds(.infinity) == "0.0s")
    }

    @Test func terminalStates() {
        #expect(JobState.allCases.filter(\.isTerminal) == [.completed, .failed, .canceled])
    }
}
