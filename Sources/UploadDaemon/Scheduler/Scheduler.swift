import Foundation
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// Owns the queue: every job, its state machine, the journal records that change it, and the
/// running transfers. Every change is a journal record applied to memory and appended to disk in
/// the same actor turn, so the file and the memory never disagree about order.
actor Scheduler {
    struct Dependencies: Sendable {
        var journal: Journal
        var http: any HTTPSending
        var snapshots: SnapshotCache
        var events: EventHub
        var environment: [String: String]
        /// The umask uploadd was started with (it runs with 077 itself).
        var umask: mode_t = 0o022
        /// Short live status for systemd's STATUS=, called at most every half second while busy.
        var reportStatus: @Sendable (String) -> Void = { _ in }
        /// Whether a URL's host can be reached now (`Reachability`; `fresh` skips its cache), asked
        /// before an attempt and after a network failure. Tests script it; the daemon asks the kernel.
        var reachability: @Sendable (_ url: String, _ fresh: Bool) async -> Reachability.Answer = { _, _ in .reachable }
        /// The seam between the queue and the network: tests put a scripted Transfer here.
        var makeTransfer: @Sendable (UploadProtocol, any HTTPSending) throws -> any Transfer = { uploadProtocol, http in
            try TransferRegistry.transfer(for: uploadProtocol, http: http)
        }
        /// The time of day for job records (history, next attempt, retry budget): tests move it
        /// forward instead of sleeping. Timers still wait in real time for the difference.
        var now: @Sendable () -> Date = { Date() }
        /// Where the bandwidth limit is kept (nil: nowhere, for tests), and how it reaches the transfers.
        var bandwidthLimitFile: BandwidthLimitFile?
        /// Where the paused watched folders are kept (nil: nowhere, for tests).
        var pausedFoldersFile: PausedFoldersFile?
        var applyBandwidthLimit: @Sendable (Int64?) -> Void = { _ in }
        /// The preparation steps jobs can ask for, by name; tests add their own.
        var preparationSteps: [String: any PreparationStep] = PreparationRegistry.steps
        /// Desktop notifications of ended batches; nil: none (tests without a session bus).
        var notifier: DesktopNotifier?
        /// Where a small file's attempt runs (the HTTP thread, `HTTPClient`); nil: the global executor.
        var smallAttemptExecutor: (any TaskExecutor)?
        /// How long the record of an attempt's start may wait for the journal's next write (and the
        /// attempt's end, to replace it): 100 ms; tests that count on the end coming first make it longer.
        var startRecordDelay: Duration = .milliseconds(100)
    }

    let dependencies: Dependencies
    var config: DaemonConfig
    /// The jobs in memory and their records in the journal (`JobStore`: apply, then save).
    var store: JobStore
    /// Queued jobs ready to start. Jobs go in through `makeReady` (which keeps `readyServers`).
    var ready = ReadyQueue()
    /// The servers of the jobs in `ready`, once `fillSlots` first needed them.
    var readyServers: ReadyServers?
    /// Queued jobs waiting for their retry time.
    var delayed = RetryCalendar()
    /// Queued jobs held back, and why: no network (`networkChanged` releases them), a metered
    /// connection or battery power (`conditionsChanged` does).
    var waiting: [JobID: WaitReason] = [:]
    /// The connection and power, as NetworkManager and UPower say.
    var conditions = PowerAndNetwork()
    var running: [JobID: RunningAttempt] = [:]
    /// Uploads that ended, in the journal's order, waiting for the sync of their last record
    /// before anyone hears of it (`Scheduler+Attempts`): a few, one per upload running.
    var endsAwaitingSync: [EndAwaitingSync] = []
    /// Whether an ended attempt is seeing `endsAwaitingSync` through.
    var finishingEnds = false
    /// Jobs announced inside `announcingTogether`, announced when it returns; nil outside it.
    var heldAnnouncements: [Job]?
    /// Queued jobs whose preparation has not run, in the order they would start.
    var toPrepare = ReadyQueue()
    /// Preparations under way: they run ahead of uploads and take no transfer slot. `run` tells
    /// a preparation from an earlier one of the same job (paused, resumed) that has not ended yet.
    var preparing: [JobID: (run: UInt64, task: Task<Void, Never>)] = [:]
    var preparationRuns: UInt64 = 0
    var clientTokens: [String: JobID] = [:]
    /// All uploads together, bytes per second (`uploadctl limit`); nil: none.
    var bandwidthLimit: Int64?
    var reservedNextID: UInt64
    /// Batches started (`new_batch`) by jobs of the journal or of this run: what `batch` may name.
    var knownBatches: Set<JobID>
    /// The options (destination, source folder, headers...) of the last job added: jobs added one
    /// request at a time from one folder to one place share them, as the jobs of one add do.
    var addOptions = AddOptionsSharer()
    var stopping = false
    /// Hooks owed: waiting their turn (in order) or running (`Scheduler+Hooks`).
    var hooks = HookQueue()
    /// Files watched folders handed over that are being added, and each folder's batch.
    var folderIntake = FolderIntake()
    /// The watched folders paused with `folder.pause`, by name: kept across restarts.
    var pausedFolders: [String: Set<JobID>] = [:]
    /// Batches that ended, announced once they stay ended (`Scheduler+Notifications`).
    var batchAnnouncements = BatchAnnouncements()
    var notificationsShown = 0
    /// What `auto` learnt of http destinations: asked once per URL, not once per file.
    nonisolated let probeAnswers = ProbeAnswers()
    var retryTimer: Task<Void, Never>?
    var retryTimerDeadline: Date?
    var ticker: Task<Void, Never>?
    var journalCatchUp: Task<Void, Never>?
    var statusReports = StatusLine.Reports()
    /// Jobs that were running when the daemon last stopped, journaled as queued by `start()`.
    private var requeuedAtStart: [Job] = []
    /// Found by the pass over the replayed jobs, for `start()`: jobs whose hook is owed, and
    /// canceled jobs whose partial upload the server may still hold.
    private var owedAtStart: (hooks: [JobID], discards: [JobID]) = ([], [])

    /// `crashed`: the daemon died of a fatal signal last time (`CrashMarker`), so the jobs still
    /// running in the journal are suspects, and so are `crashSuspects` (the marker's list, which
    /// has the jobs whose "running" record had not reached the journal yet); otherwise it was
    /// killed or lost power, which is not their doing.
    init(
        replayed: JournalState, config: DaemonConfig, dependencies: Dependencies, crashed: Bool = false,
        crashSuspects: [JobID] = []
    ) {
        self.dependencies = dependencies
        self.config = config
        bandwidthLimit = dependencies.bandwidthLimitFile?.load()
        pausedFolders = dependencies.pausedFoldersFile?.load() ?? [:]
        dependencies.applyBandwidthLimit(bandwidthLimit)
        var store = replayed
        let now = dependencies.now()
        // What each job waits for, its client token, its cached files. Jobs still running were
        // interrupted and are taken as queued.
        var survey = StartupSurvey(surveying: replayed.jobs, now: now)
        if crashed { survey.takeAsInterrupted(crashSuspects, from: replayed.jobs) }
        let requeuedJobs = survey.recoverInterrupted(
            into: &store, crashed: crashed, now: now, owesHook: { HookRun.command(for: $0, config: config) != nil })
        self.store = JobStore(replayed: store, journal: dependencies.journal, compactAfter: config.compactAfter)
        self.requeuedAtStart = requeuedJobs
        self.owedAtStart = (survey.owedHooks, survey.owedDiscards)
        self.reservedNextID = store.nextID
        clientTokens = survey.clientTokens
        knownBatches = survey.batches
        delayed = RetryCalendar(survey.delayed)
        ready = ReadyQueue(survey.ready)
        // Here, before the control socket serves anyone: a copy made for a job added while the
        // daemon starts up must not be taken for an orphan (socket activation queues that add
        // before the daemon even runs). Jobs of a newer uploadd that this one cannot read keep
        // whatever they might own (`removeOrphans` says what that is).
        let unreadableJobs = Set(replayed.foreignJobs.keys)
        let packsOfUnreadableJobs = dependencies.snapshots.removeOrphans(
            keeping: survey.cachedFiles, unreadableJobs: unreadableJobs)
        for (pack, holders) in survey.packHolders { dependencies.snapshots.packs.hold(pack, for: holders) }
        // One holder is enough: this daemon never lets go for a job it cannot read (no command
        // reaches one), so these packs outlive the readable jobs in them.
        if let holder = unreadableJobs.min() {
            for pack in packsOfUnreadableJobs { dependencies.snapshots.packs.hold(pack, for: [holder]) }
        }
    }

    /// Starts work after replay: requeued jobs are journaled, transfers started.
    func start() async {
        // First: no job has run yet, so no held add has ended before this.
        store.writeFailed = { [weak self] in Task { await self?.catchUpWithJournal() } }
        // Durable before anything runs: a job that crashes the daemon at once must find its crash
        // counted at the next start, or it would crash it forever.
        if !requeuedAtStart.isEmpty {
            do {
                try await waitUntilDurable(store.saveDurably(requeuedAtStart.map { .job($0) }))
            } catch {
                Log.error("cannot journal the jobs interrupted by the last stop: \(error)")
            }
        }
        requeuedAtStart = []
        store.compactIfWorthwhile()
        // Canceled jobs whose partial upload the server may still hold (the daemon stopped before
        // the discard went through): try again. Clients served since replay may have changed them.
        let owed = owedAtStart
        owedAtStart = ([], [])
        for id in owed.discards {
            guard let job = store.jobs[id], job.state == .canceled, job.checkpoint != nil else { continue }
            discardPartialUpload(of: job, thenForget: false)
        }
        armRetryTimer()
        fillSlots()
        runOwedHooks(owed.hooks)
        runOwedFolderActions()
    }

    /// Applies a new config (SIGHUP or daemon.reload).
    func reload(_ newConfig: DaemonConfig) {
        config = newConfig
        store.compactAfter = newConfig.compactAfter
        // What jobs wait for may be configured differently now.
        _ = release { $0 == .metered || $0 == .battery }
        fillSlots()
    }

    /// Proves the actor is responsive: the watchdog pings systemd only after this returns.
    func heartbeat() -> Bool { !stopping }

    /// Stops every transfer at its next safe point and waits for them, then journals the jobs
    /// that were running as queued: the next start resumes them, and knows that a job it still
    /// finds running was interrupted by a crash (see `Job.recoverAfterCrash`).
    func shutdown() async {
        stopping = true
        store.dropHeldAdds()
        retryTimer?.cancel()
        ticker?.cancel()
        journalCatchUp?.cancel()
        let tasks = running.values.map(\.task) + preparing.values.map(\.task)
        preparing.removeAll()
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        var requeued: [JournalRecord] = []
        let now = dependencies.now()
        for case var job in store.jobs.values where job.state == .running {
            job.requeueAfterRestart(at: now)
            store.apply(.job(job))
            requeued.append(.job(job))
        }
        guard !requeued.isEmpty else { return }
        do {
            try await waitUntilDurable(store.saveDurably(requeued))
        } catch {
            Log.error(
                "cannot journal that \(requeued.count) running jobs stopped: \(error); they count as interrupted at the next start"
            )
        }
    }

    // MARK: - Picking work

    /// Starts queued jobs until the limit of concurrent transfers is reached.
    ///
    /// A job whose attempt the daemon died in (`crashes > 0`) runs alone: nothing starts beside
    /// it, and it waits for the running ones to end. Should it take the daemon down again, it is
    /// the only suspect, and only it is failed.
    func fillSlots() {
        // Jobs taken out of the queue that go back to their places, in the order they came out.
        var skipped: [Job] = []
        // Jobs for a server at its cap, passed over so that jobs for other servers can go first.
        var passedOver = 0
        var firstPassedOver = 0
        // Each server's running transfers, counted the first time a share is asked: until as
        // many run as a server's share, no job's server needs working out.
        let share = config.serverShare
        var servers: ServerShares?
        let slots = config.transferSlots
        // What the checks ask of the running attempts, kept as jobs start rather than asked of
        // every attempt again for each job looked at.
        var runningBytesLeft = running.values.map(\.bytesLeft)
        var suspectRunning = isRunningASuspect
        func start(_ job: Job, sendingTo server: String?) {
            if servers != nil { servers!.started(server ?? self.server(of: job)) }
            startAttempt(job)
            guard let attempt = running[job.id] else { return }
            runningBytesLeft.append(attempt.bytesLeft)
            suspectRunning = suspectRunning || attempt.isSuspect
        }
        filling: while !stopping, running.count < slots.mostAtOnce, !suspectRunning, let id = ready.popFirst() {
            guard let job = store.jobs[id] else { continue }
            var knownServer: String?
            func jobServer() -> String {
                if knownServer == nil { knownServer = server(of: job) }
                return knownServer!
            }
            if readyServers != nil { readyServers!.remove(jobServer()) }
            guard job.state == .queued else { continue }
            if job.needsPreparation {
                enqueue(job)  // its turn comes once it is prepared
                continue
            }
            if running[id] != nil {
                skipped.append(job)  // its previous attempt is still stopping; it starts when that ends
                continue
            }
            if job.crashes > 0 && !running.isEmpty {
                makeReady(job)
                break
            }
            guard slots.mayStart(bytesLeft: job.bytesLeft, running: runningBytesLeft) else {
                makeReady(job)  // the queue's order holds: nothing starts ahead of it
                break
            }
            if running.count >= share, servers == nil {
                servers = ServerShares(cap: share, running: running.values.lazy.map(\.server))
            }
            if let shares = servers, shares.isFull, !shares.mayStart(jobServer()) {
                if readyServers == nil {
                    readyServers = ReadyServers(
                        ready.orderedIDs.lazy.compactMap { self.store.jobs[$0] }.map(self.server))
                }
                // No job waits for a server with room: the cap gives way now, as it would after
                // looking ahead and finding none.
                if passedOver == 0, !readyServers!.anyMayStart(shares) {
                    start(job, sendingTo: jobServer())
                    continue
                }
                if passedOver == 0 { firstPassedOver = skipped.count }
                skipped.append(job)
                passedOver += 1
                if passedOver >= Self.lookAheadForOtherServers { break filling }
                continue
            }
            start(job, sendingTo: knownServer)
        }
        // No job for another server within reach: the cap gives way, to the jobs passed over.
        if passedOver > 0, ready.isEmpty || passedOver >= Self.lookAheadForOtherServers {
            var index = firstPassedOver
            while index < skipped.count, !stopping, !suspectRunning, running.count < slots.mostAtOnce,
                slots.mayStart(bytesLeft: skipped[index].bytesLeft, running: runningBytesLeft)
            {
                if running[skipped[index].id] != nil {
                    index += 1  // not passed over: its previous attempt is still stopping
                    continue
                }
                let job = skipped.remove(at: index)
                start(job, sendingTo: nil)
            }
        }
        // Backwards: each goes back in front of the one after it, without moving the queue.
        for job in skipped.reversed() where !delayed.contains(job.id) { makeReady(job) }
        fillPreparationSlots()
        updateTicker()
    }

    /// Puts a job in the ready queue, at its place.
    func makeReady(_ job: Job) {
        if ready.insert(job.id, at: job.place), readyServers != nil { readyServers!.add(server(of: job)) }
    }

    /// Takes a job out of the ready queue, if it is there.
    func takeOutOfReady(_ job: Job) {
        if ready.remove(job.id, at: job.place), readyServers != nil { readyServers!.remove(server(of: job)) }
    }

    private var isRunningASuspect: Bool { running.values.contains(where: \.isSuspect) }

    /// Puts a queued job where it belongs: ready now, or delayed until its retry time.
    func enqueue(_ job: Job) {
        guard job.state == .queued, waiting[job.id] == nil else { return }
        if let next = job.nextAttemptAt, next > dependencies.now() {
            delayed.insert(job.id, at: next)
            armRetryTimer()
        } else if job.needsPreparation {
            delayed.remove(job.id)
            if preparing[job.id] == nil { toPrepare.insert(job.id, at: job.place) }
        } else {
            delayed.remove(job.id)
            makeReady(job)
        }
    }

    /// Takes a job out of every queue, and stops its preparation if one runs.
    func unqueue(_ job: Job) {
        takeOutOfReady(job)
        toPrepare.remove(job.id, at: job.place)
        preparing.removeValue(forKey: job.id)?.task.cancel()
        delayed.remove(job.id)
        waiting[job.id] = nil
    }

}
