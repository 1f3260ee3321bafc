import UploadCore
import UploadHTTP
import UploadPlatform

/// A job's attempt while it runs: its task, its progress, and what the scheduler decides by.
struct RunningAttempt {
    var task: Task<Void, Never>
    var meter: ProgressMeter
    var ackedAtStart: Int64
    var target: ResolvedTarget
    /// What it had left to send when it started (`TransferSlots`).
    var bytesLeft: Int64
    /// Its place in the set of running jobs the crash marker lists.
    var crashSlot: RunningJobs.Slot?
    /// Whether the daemon died in an earlier attempt of its job: then it runs alone (`fillSlots`).
    var isSuspect = false
    /// The server it sends to (`ServerShares.server(of:)`), for the cap on transfers per server.
    var server: String
    /// Its bytes on the wire at the start of the window its pace is judged over, and whether
    /// the last window found it crawling (`Scheduler+Fairness`).
    var paceMark: (at: ContinuousClock.Instant, bytes: Int64)
    var isCrawling = false
}

/// An upload's end, journaled, waiting for its sync before anyone hears of it.
struct EndAwaitingSync {
    var ticket: Journal.DurableTicket
    var job: Job
    var deletesCachedFile: Bool
}
