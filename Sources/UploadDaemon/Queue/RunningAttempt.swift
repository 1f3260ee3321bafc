import UploadCore
import UploadHTTP
import UploadPlatform

/// A job's attempt while it runs: its task, its progress, and what the scheduler decides by.
///
/// A class: `fillSlots` and the status go over every running attempt, and a copy of the struct
/// it was (its target has 22 fields) cost more than the decision it was copied for. Owned by the
/// Scheduler actor, which alone reads and changes it.
final class RunningAttempt {
    let task: Task<Void, Never>
    let meter: ProgressMeter
    let ackedAtStart: Int64
    let target: ResolvedTarget
    /// What it had left to send when it started (`TransferSlots`).
    let bytesLeft: Int64
    /// Its place in the set of running jobs the crash marker lists.
    let crashSlot: RunningJobs.Slot?
    /// Whether the daemon died in an earlier attempt of its job: then it runs alone (`fillSlots`).
    let isSuspect: Bool
    /// The server it sends to (`ServerShares.server(of:)`), for the cap on transfers per server.
    let server: String
    /// Its bytes on the wire at the start of the window its pace is judged over, and whether
    /// the last window found it crawling (`Scheduler+Fairness`).
    var paceMark: (at: ContinuousClock.Instant, bytes: Int64)
    var isCrawling = false

    init(
        task: Task<Void, Never>, meter: ProgressMeter, ackedAtStart: Int64, target: ResolvedTarget, bytesLeft: Int64,
        crashSlot: RunningJobs.Slot?, isSuspect: Bool, server: String,
        paceMark: (at: ContinuousClock.Instant, bytes: Int64)
    ) {
        self.task = task
        self.meter = meter
        self.ackedAtStart = ackedAtStart
        self.target = target
        self.bytesLeft = bytesLeft
        self.crashSlot = crashSlot
        self.isSuspect = isSuspect
        self.server = server
        self.paceMark = paceMark
    }
}

@available(*, unavailable)
extension RunningAttempt: Sendable {}

/// An upload's end, journaled, waiting for its sync before anyone hears of it.
struct EndAwaitingSync {
    var ticket: Journal.DurableTicket
    var job: Job
    var deletesCachedFile: Bool
}
