import Foundation
import UploadWire

/// Something a user asks of a job.
public enum JobCommand: String, Sendable, CaseIterable {
    case pause, resume, cancel, remove, retry

    /// The states `--all` acts on: those where the command does something.
    public var statesForAll: Set<JobState> {
        switch self {
        case .pause: [.queued, .running]
        case .resume: [.paused, .failed]
        case .retry: [.failed]
        case .cancel: [.queued, .running, .paused, .failed]
        case .remove: Set(JobState.allCases)
        }
    }
}

/// What the daemon must do after a transition, outside the job's own state.
public struct JobEffects: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Stop the running transfer at its next safe point.
    public static let stopTransfer = JobEffects(rawValue: 1 << 0)
    /// Tell the server to drop a partial upload (tus DELETE, S3 AbortMultipartUpload): after a
    /// cancel or remove, and when an attempt fails the job for good.
    public static let discardServerUpload = JobEffects(rawValue: 1 << 1)
    /// Delete the job's snapshot from the cache.
    public static let deleteCachedFile = JobEffects(rawValue: 1 << 2)
    /// The queue changed: look for work to start.
    public static let reschedule = JobEffects(rawValue: 1 << 3)
    /// Forget the job entirely.
    public static let forget = JobEffects(rawValue: 1 << 4)
}

/// A command that makes no sense in the job's state, with a message saying what would.
public struct InvalidTransition: Error, Sendable, Equatable, CustomStringConvertible {
    public var id: JobID
    public var state: JobState
    public var command: JobCommand
    public var hint: String

    public var description: String { "job \(id) is \(state.rawValue): cannot \(command.rawValue) it; \(hint)" }
}

/// How a transfer attempt ended, as the scheduler tells the job.
public enum AttemptOutcome: Sendable {
    case completed(JobResult)
    /// `retryable` errors are tried again within the budget; `retryAfter` is the server's wish.
    case failed(JobError, retryable: Bool, retryAfter: Duration?)
    /// The destination could not be reached because this machine has no network right now: the
    /// attempt does not count, and the job waits for the network to come back.
    case noNetwork(String)
}

/// The job life cycle as one state machine. Every method changes the job and returns what the
/// caller must do; the caller acts on the effects outside its lock or actor turn.
extension Job {
    public mutating func apply(_ command: JobCommand, at now: Date) throws(InvalidTransition) -> JobEffects {
        let wasRunning = state == .running
        let stop: JobEffects = wasRunning ? [.stopTransfer] : []
        func invalid(_ hint: String) -> InvalidTransition {
            InvalidTransition(id: id, state: state, command: command, hint: hint)
        }
        switch (command, state) {
        case (.pause, .queued), (.pause, .running):
            transition(to: .paused, at: now, "paused")
            nextAttemptAt = nil
            return stop.union(.reschedule)
        case (.pause, .paused):
            return []
        case (.pause, _):
            throw invalid("only queued or running jobs can be paused")

        case (.resume, .paused), (.resume, .failed), (.retry, .failed):
            transition(to: .queued, at: now, command == .retry ? "retrying, with a fresh attempt budget" : "resumed")
            error = nil
            nextAttemptAt = nil
            failuresWithoutProgress = 0
            failingSince = nil
            return .reschedule
        case (.resume, .queued), (.resume, .running):
            return []
        case (.resume, _):
            throw invalid("add the file again to upload it once more")

        case (.retry, .queued), (.retry, .running):
            return []
        case (.retry, .paused):
            throw invalid("retry restarts failed jobs; resume a paused one")
        case (.retry, _):
            throw invalid("retry restarts failed jobs; add the file again to upload it once more")

        case (.cancel, .queued), (.cancel, .running), (.cancel, .paused), (.cancel, .failed):
            transition(to: .canceled, at: now, "canceled")
            nextAttemptAt = nil
            return stop.union([.discardServerUpload, .deleteCachedFile, .reschedule])
        case (.cancel, .canceled):
            return []
        case (.cancel, _):
            throw invalid("use delete to remove the uploaded file from the server, or remove to forget the job")

        case (.remove, _):
            let discard: JobEffects = state == .completed || state == .canceled ? [] : [.discardServerUpload]
            return stop.union(discard).union([.deleteCachedFile, .forget, .reschedule])
        }
    }

    /// A transfer attempt starts. Only a queued job can start.
    public mutating func start(at now: Date) {
        precondition(state == .queued, "job \(id) started while \(state)")
        transition(to: .running, at: now, nil)
        attempts += 1
        nextAttemptAt = nil
    }

    /// The attempt ended. `madeProgress` tells whether the server committed more bytes during it.
    /// An outcome that arrives after the job was paused, canceled or removed changes nothing.
    /// A job that fails for good has its partial upload dropped, so that nothing is left
    /// half-written on the server (a resume or retry then starts over).
    public mutating func finishAttempt(
        _ outcome: AttemptOutcome, madeProgress: Bool, policy: RetryPolicy, at now: Date,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> JobEffects {
        guard state == .running else { return [] }
        crashes = 0
        switch outcome {
        case .completed(let jobResult):
            result = jobResult
            error = nil
            bytesAcked = bytesTotal
            failuresWithoutProgress = 0
            failingSince = nil
            transition(to: .completed, at: now, "completed")
            return [.deleteCachedFile, .reschedule]
        case .failed(let jobError, let retryable, let retryAfter):
            fail(
                jobError, retryable: retryable, retryAfter: retryAfter, madeProgress: madeProgress, policy: policy,
                at: now, random: random, what: "attempt \(attempts)")
            return state == .failed ? [.reschedule, .discardServerUpload] : .reschedule
        case .noNetwork(let reason):
            // Not an attempt at all: the machine is offline. Nothing is spent from either budget.
            attempts = max(attempts - 1, 0)
            nextAttemptAt = nil
            transition(to: .queued, at: now, "waiting for the network: \(reason)")
            return .reschedule
        }
    }

    /// Preparation, which runs while the job is queued (ahead of its upload, in no transfer
    /// slot), failed: the rules of a failed attempt apply, with nothing sent.
    public mutating func preparationFailed(
        _ jobError: JobError, retryable: Bool, policy: RetryPolicy, at now: Date,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> JobEffects {
        guard state == .queued else { return [] }
        fail(
            jobError, retryable: retryable, retryAfter: nil, madeProgress: false, policy: policy, at: now,
            random: random, what: "preparation")
        return .reschedule
    }

    private mutating func fail(
        _ jobError: JobError, retryable: Bool, retryAfter: Duration?, madeProgress: Bool, policy: RetryPolicy,
        at now: Date, random: (ClosedRange<Double>) -> Double, what: String
    ) {
        error = jobError
        failuresWithoutProgress = madeProgress ? 1 : failuresWithoutProgress + 1
        if failuresWithoutProgress == 1 { failingSince = now }
        if retryable && policy.allowsRetry(afterFailures: failuresWithoutProgress, failingSince: failingSince, now: now)
        {
            let delay = policy.delay(afterFailures: failuresWithoutProgress, retryAfter: retryAfter, random: random)
            nextAttemptAt = now.addingTimeInterval(delay.seconds)
            transition(
                to: .queued, at: now, "\(what) failed: \(jobError.message); retrying in \(formatSeconds(delay.seconds))"
            )
        } else {
            nextAttemptAt = nil
            let why =
                retryable
                ? " (gave up after \(failuresWithoutProgress) attempts in a row\(Self.failingFor(failingSince, now)))"
                : ""
            transition(to: .failed, at: now, "failed: \(jobError.message)\(why)")
        }
    }

    private static func failingFor(_ since: Date?, _ now: Date) -> String {
        guard let since else { return "" }
        let seconds = now.timeIntervalSince(since)
        return seconds < 1 ? "" : " over \(formatSeconds(seconds))"
    }

    /// A queued job of higher priority takes the slot of this one's attempt, which crawls: it is
    /// queued again, in its place, to go on when a slot is free. Not a failure: no retry budget
    /// is spent. False when it is not running (any more).
    public mutating func setAside(_ message: String, at now: Date) -> Bool {
        guard state == .running else { return false }
        nextAttemptAt = nil
        transition(to: .queued, at: now, message)
        return true
    }

    /// The daemon stops while the job runs: it is queued again, to resume at the next start.
    /// Cleanly (the default message), or killed without a crash of its own (SIGKILL, a power cut).
    public mutating func requeueAfterRestart(
        at now: Date, _ message: String = "uploadd stopped; resumes when it starts again"
    ) {
        guard state == .running else { return }
        transition(to: .queued, at: now, message)
    }

    /// The journal was damaged near this job's records: a change to it may be lost (its
    /// completion, its removal, a pause), so a job that would run is paused instead, for the user
    /// to check; nothing then uploads twice, and nothing is lost. Returns whether it was paused.
    public mutating func pauseAfterJournalDamage(near offset: Int, at now: Date) -> Bool {
        guard state == .queued || state == .running else { return false }
        nextAttemptAt = nil
        transition(
            to: .paused, at: now,
            "paused: the journal was damaged near this job's records (at byte \(offset)), so a change to it may be lost; check it (uploadctl show \(id)), then resume or remove it"
        )
        return true
    }

    /// Attempts during which the daemon may die before the job is failed instead of run again.
    public static let crashLimit = 2

    /// The daemon crashed (a fatal signal: a trap, a fault, a watchdog abort) during the job's
    /// attempt. The job is queued to run alone, or failed once it has taken the daemon down
    /// `crashLimit` times in a row, so that one bad job can never block the queue.
    public mutating func recoverAfterCrash(at now: Date) {
        guard state == .running else { return }
        crashes += 1
        nextAttemptAt = nil
        if crashes >= Self.crashLimit {
            error = JobError(
                code: "crash",
                message:
                    "uploadd stopped unexpectedly \(crashes) times in a row while uploading this job, so it was failed to let the rest of the queue run; see the log (journalctl --user -u uploadd), then 'uploadctl resume \(id)' to try again"
            )
            transition(to: .failed, at: now, "failed: \(error!.message)")
        } else {
            transition(
                to: .queued, at: now,
                "uploadd stopped unexpectedly during this upload; resuming, alone until an attempt ends")
        }
    }

    private mutating func transition(to newState: JobState, at now: Date, _ message: String?) {
        state = newState
        updatedAt = now
        if let message { record(message, at: now) }
    }
}

/// "3.7s", "25s": tenths under ten seconds. In integers: every failed attempt formats one, and
/// `String(format:)` goes through CFString.
public func formatSeconds(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "0.0s" }
    let tenths = Int((seconds * 10).rounded())
    return tenths < 100 ? "\(tenths / 10).\(tenths % 10)s" : "\(Int(seconds.rounded()))s"
}
