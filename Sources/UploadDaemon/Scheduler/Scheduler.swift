import Foundation
import UploadCore
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
        /// The server it sends to (`Scheduler.server(of:)`), for the cap on transfers per server.
        var server: String
        /// Its bytes on the wire at the start of the window its pace is judged over, and whether
        /// the last window found it crawling (`Scheduler+Fairness`).
        var paceMark: (at: ContinuousClock.Instant, bytes: Int64)
        var isCrawling = false
    }

    let dependencies: Dependencies
    var config: DaemonConfig
    var store: JournalState
    var ready = ReadyQueue()
    /// Queued jobs waiting for their retry time.
    var delayed = RetryCalendar()
    /// Queued jobs held back, and why: no network (`networkChanged` releases them), a metered
    /// connection or battery power (`conditionsChanged` does).
    var waiting: [JobID: WaitReason] = [:]
    /// The connection and power, as NetworkManager and UPower say.
    var conditions = PowerAndNetwork()
    var running: [JobID: RunningAttempt] = [:]
    /// Jobs whose attempt's start record may still wait in the journal, withdrawable
    /// (`commitStart`); some the writer has taken already.
    var withdrawableStarts: Set<JobID> = []
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
    /// Jobs whose copies are made alongside their uploads and not saved yet
    /// (`Scheduler+CopyAlongside`): none of their records reach the journal.
    var unsaved: [JobID: UnsavedAdd] = [:]
    /// All uploads together, bytes per second (`uploadctl limit`); nil: none.
    var bandwidthLimit: Int64?
    var reservedNextID: UInt64
    /// Batches started (`new_batch`) by jobs of the journal or of this run: what `batch` may name.
    var knownBatches: Set<JobID>
    var stopping = false
    /// Hooks owed: waiting their turn (in order) or running (`Scheduler+Hooks`).
    var hookBacklog: [JobID] = []
    var hooksQueued: Set<JobID> = []
    var hooksRunning = 0
    /// Batches that ended, announced once they stay ended (`Scheduler+Notifications`).
    var batchAnnouncements: [JobID: Task<Void, Never>] = [:]
    var notificationsShown = 0
    /// What `auto` learnt of http destinations: asked once per URL, not once per file.
    nonisolated let probeAnswers = ProbeAnswers()
    private var retryTimer: Task<Void, Never>?
    private var retryTimerDeadline: Date?
    private var ticker: Task<Void, Never>?
    private var journalCatchUp: Task<Void, Never>?
    private var lastStatusText = ""
    private var lastStatusAt = ContinuousClock.now - .seconds(10)
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
        dependencies.applyBandwidthLimit(bandwidthLimit)
        var store = replayed
        let now = dependencies.now()
        // What each job waits for, its client token, its cached files. Jobs still running were
        // interrupted and are taken as queued.
        var survey = StartupSurvey(surveying: replayed.jobs, now: now)
        if crashed { survey.takeAsInterrupted(crashSuspects, from: replayed.jobs) }
        var requeuedJobs: [Job] = []
        for job in survey.interrupted {
            var recovered = job
            if crashed {
                recovered.recoverAfterCrash(at: now)
                if recovered.state == .failed {
                    recovered.hookPending =
                        Self.hookCommand(for: recovered, config: config) != nil
                }
            } else {
                recovered.requeueAfterRestart(at: now, "uploadd was interrupted (killed, or a power cut); resuming")
            }
            if recovered.state == .failed {
                Log.job(.error, JobLogContext(recovered), recovered.error?.message ?? "failed after crashes")
            }
            store.apply(.job(recovered))
            requeuedJobs.append(recovered)
            survey.take(store.jobs[recovered.id]!, now: now)
        }
        self.store = store
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
        // Durable before anything runs: a job that crashes the daemon at once must find its crash
        // counted at the next start, or it would crash it forever.
        if !requeuedAtStart.isEmpty {
            do {
                try await journal(requeuedAtStart.map { .job($0) }, durable: true)
            } catch {
                Log.error("cannot journal the jobs interrupted by the last stop: \(error)")
            }
        }
        requeuedAtStart = []
        compactIfWorthwhile()
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
    }

    /// Applies a new config (SIGHUP or daemon.reload).
    func reload(_ newConfig: DaemonConfig) {
        config = newConfig
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
        dropUnsavedAdds()
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
            try await journal(requeued, durable: true)
        } catch {
            Log.error(
                "cannot journal that \(requeued.count) running jobs stopped: \(error); they count as interrupted at the next start"
            )
        }
    }

    // MARK: - Recording changes

    /// Applies a job's new state and journals it. `durable` waits for the disk before the state is
    /// announced to subscribers.
    func commit(_ job: Job, durable: Bool) async throws {
        store.apply(.job(job))
        try await journal([.job(job)], durable: durable)
        // Subscribers hear of a change only once it is on disk (for durable changes).
        announce(job)
    }

    /// Applies a job's new state and appends it to the journal without waiting for the disk (a
    /// start, a note for its history): for changes a crash may lose.
    func commitWithoutWaiting(_ job: Job, writeWithin delay: Duration = .zero) {
        store.apply(.job(job))
        appendWithoutWaiting([.job(job)], writeWithin: delay)
    }

    /// Applies an attempt's start and queues its record for the journal's next write (within
    /// `Dependencies.startRecordDelay`), withdrawable: a small file's upload ends within a millisecond, and its
    /// end's record then replaces the start's, which is never encoded or written. A crash before
    /// the write still counts against the job: the crash marker lists it (`RunningJobs`). Only
    /// for a job the marker lists; others' starts are written at once.
    func commitStart(_ job: Job) {
        store.apply(.job(job))
        let (kept, _) = journalable([.job(job)])
        // A job whose copy is not saved has no record yet: its start has none either.
        guard let record = kept.first else { return }
        dependencies.journal.appendWithdrawable(record, of: job.id, writeWithin: dependencies.startRecordDelay)
        withdrawableStarts.insert(job.id)
        compactIfWorthwhile()
    }

    /// `records` in the order the journal takes them, after the start records they settle: a record
    /// of the whole job (or of its removal) replaces its start's, if that is still withdrawable;
    /// progress goes after it.
    private func settlingStarts(_ records: [JournalRecord]) -> [JournalRecord] {
        guard !withdrawableStarts.isEmpty else { return records }
        var settled = records
        var inserted = 0
        for (index, record) in records.enumerated() {
            let id: JobID
            switch record {
            case .job(let job): id = job.id
            case .progress(let progress): id = progress.id
            case .removed(let removed): id = removed
            case .nextID, .foreign: continue
            }
            guard withdrawableStarts.remove(id) != nil, let start = dependencies.journal.withdraw(id) else { continue }
            if case .progress = record {
                settled.insert(start, at: index + inserted)
                inserted += 1
            }
        }
        return settled
    }

    private func appendWithoutWaiting(_ records: [JournalRecord], writeWithin delay: Duration = .zero) {
        let (journalable, ended) = journalable(records)
        let kept = settlingStarts(journalable)
        if !kept.isEmpty { dependencies.journal.append(kept, writeWithin: delay) }
        savedByEnding(ended)
        compactIfWorthwhile()
    }

    /// Drops a job from memory and returns the record that says so; the caller journals it.
    func forgetInMemory(_ job: Job) -> JournalRecord {
        store.apply(.removed(job.id))
        unqueue(job)
        if let token = job.spec.clientToken { clientTokens[token] = nil }
        delayed.shrinkIfSparse()
        waiting.shrinkIfSparse()
        clientTokens.shrinkIfSparse()
        return .removed(job.id)
    }

    /// Journals records of several changes in one durable append, then announces the jobs.
    func commitDurably(_ records: [JournalRecord], announcing jobs: [Job]) async throws {
        try await finishDurably(queueDurably(records), announcing: jobs)
    }

    /// The first half of a durable append: the records take their place in the journal now, in
    /// this actor turn, ahead of any change made after it. Its sync may wait `delay` to be shared.
    func queueDurably(_ records: [JournalRecord], within delay: Duration = .zero) -> Journal.DurableTicket {
        let (journalable, ended) = journalable(records)
        let ticket = dependencies.journal.queueDurably(settlingStarts(journalable), within: delay)
        savedByEnding(ended)
        return ticket
    }

    /// The second half: waits until the records are on disk, then announces the jobs.
    func finishDurably(_ ticket: Journal.DurableTicket, announcing jobs: [Job]) async throws {
        defer {
            for job in jobs {
                if store.jobs[job.id] != nil {
                    announce(job)
                } else {
                    dependencies.events.publishRemoved(job.id, batch: job.spec.batch)
                }
            }
        }
        try await waitUntilDurable(ticket)
    }

    /// Appends records (a durable append returns once they are on disk), then compacts the journal
    /// when it has grown far beyond the live jobs: a clear of 100,000 jobs leaves a journal of a
    /// few bytes. After a durable write fails (a full disk) memory is ahead of the journal, so
    /// catching up starts.
    func journal(_ records: [JournalRecord], durable: Bool) async throws {
        guard durable else {
            appendWithoutWaiting(records)
            return
        }
        // Queued here, on the actor, in the order of the changes; only the wait leaves it.
        try await waitUntilDurable(queueDurably(records))
    }

    func waitUntilDurable(_ ticket: Journal.DurableTicket) async throws {
        try await durability(of: ticket).get()
    }

    /// What became of a durable append's records, once they are on disk or their write failed.
    func durability(of ticket: Journal.DurableTicket) async -> Result<Void, any Error> {
        let outcome: Result<Void, any Error>
        do {
            try await dependencies.journal.waitUntilDurable(ticket)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        return settled(outcome)
    }

    /// What `durability(of:)` would come to, if the journal knows it already (it is told once);
    /// nil while the records wait for their write or sync.
    func knownDurability(of ticket: Journal.DurableTicket) -> Result<Void, any Error>? {
        dependencies.journal.takeOutcome(of: ticket).map(settled)
    }

    /// After a durable append: a failed write (a full disk) leaves memory ahead of the journal, so
    /// catching up starts, as it does after a compaction whose rename could not be synced; a write
    /// that went through may make compaction worthwhile.
    private func settled(_ outcome: Result<Void, any Error>) -> Result<Void, any Error> {
        if case .failure = outcome {
            catchUpWithJournal()
        } else if dependencies.journal.isBehind {
            catchUpWithJournal()
        } else {
            compactIfWorthwhile()
        }
        return outcome
    }

    /// Rewrites the journal when it holds far more records than live jobs.
    private func compactIfWorthwhile() {
        let written = dependencies.journal.recordsSinceCompaction
        guard written > max(config.compactAfter, store.jobs.count * 4) else { return }
        dependencies.journal.compact(compactedRecords())
        HeapTrimmer.trimSoon()  // what the compaction freed
    }

    /// After a failed write (a full disk) memory is ahead of the journal: every two seconds, until
    /// one succeeds, compact it (write the live state), so it catches up by itself once there is
    /// room. A compaction that fails leaves the old file as it was.
    private func catchUpWithJournal() {
        guard journalCatchUp == nil else { return }
        journalCatchUp = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(2))
                guard !Task.isCancelled, let self, await self.compactIfBehind() else { return }
            }
        }
    }

    /// Queues a compaction if the journal is behind; false once it has caught up.
    private func compactIfBehind() -> Bool {
        guard dependencies.journal.isBehind else {
            journalCatchUp = nil
            return false
        }
        dependencies.journal.compact(compactedRecords())
        return true
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
        var servers = ServerShares(cap: transfersPerServer, running: running.values.lazy.map(\.server))
        let slots = config.transferSlots
        filling: while !stopping, running.count < slots.mostAtOnce, !isRunningASuspect, let id = ready.popFirst() {
            guard let job = store.jobs[id], job.state == .queued else { continue }
            if job.needsPreparation {
                enqueue(job)  // its turn comes once it is prepared
                continue
            }
            if running[id] != nil {
                skipped.append(job)  // its previous attempt is still stopping; it starts when that ends
                continue
            }
            if job.crashes > 0 && !running.isEmpty {
                ready.insert(id, at: job.place)
                break
            }
            guard slots.mayStart(bytesLeft: job.bytesLeft, running: running.values.lazy.map(\.bytesLeft)) else {
                ready.insert(id, at: job.place)  // the queue's order holds: nothing starts ahead of it
                break
            }
            if servers.isFull, !servers.mayStart(server(of: job)) {
                if passedOver == 0 { firstPassedOver = skipped.count }
                skipped.append(job)
                passedOver += 1
                if passedOver >= Self.lookAheadForOtherServers { break filling }
                continue
            }
            servers.started(server(of: job))
            startAttempt(job)
        }
        // No job for another server within reach: the cap gives way, to the jobs passed over.
        if passedOver > 0, ready.isEmpty || passedOver >= Self.lookAheadForOtherServers {
            var index = firstPassedOver
            while index < skipped.count, !stopping, !isRunningASuspect, running.count < slots.mostAtOnce,
                slots.mayStart(bytesLeft: skipped[index].bytesLeft, running: running.values.lazy.map(\.bytesLeft))
            {
                if running[skipped[index].id] != nil {
                    index += 1  // not passed over: its previous attempt is still stopping
                    continue
                }
                startAttempt(skipped.remove(at: index))
            }
        }
        // Backwards: each goes back in front of the one after it, without moving the queue.
        for job in skipped.reversed() where !delayed.contains(job.id) { ready.insert(job.id, at: job.place) }
        fillPreparationSlots()
        updateTicker()
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
            ready.insert(job.id, at: job.place)
        }
    }

    /// Takes a job out of every queue, and stops its preparation if one runs.
    func unqueue(_ job: Job) {
        ready.remove(job.id, at: job.place)
        toPrepare.remove(job.id, at: job.place)
        preparing.removeValue(forKey: job.id)?.task.cancel()
        delayed.remove(job.id)
        waiting[job.id] = nil
    }

    /// Links, addresses or routes changed: the jobs waiting for the network try now, and so do
    /// those backing off after a network error, without waiting out their delay.
    func networkChanged() {
        var released = release { $0 == .network }
        for id in Array(delayed.jobs) {
            guard let job = store.jobs[id], job.state == .queued, let code = job.error?.code,
                ["network", "timeout", "stalled"].contains(code)
            else { continue }
            delayed.remove(id)
            ready.insert(id, at: job.place)
            released += 1
        }
        if released > 0 { Log.info("the network changed: \(released) waiting jobs try again now") }
        armRetryTimer()
        fillSlots()
        reportStatusIfChanged()
    }

    /// The connection turned metered or not, or the power changed: jobs held for it try again
    /// (and are held again where that still applies).
    func conditionsChanged(_ new: PowerAndNetwork) {
        guard new != conditions else { return }
        Log.info(
            "connection \(DaemonConditions.connectionText(new.metered)), power \(DaemonConditions.powerText(new.onBattery))"
        )
        conditions = new
        let released = release { $0 == .metered || $0 == .battery }
        if released > 0 { Log.info("\(released) jobs held for the connection or the power try again") }
        fillSlots()
        reportStatusIfChanged()
    }

    /// Why a job must not start now, if it must not: a metered connection or battery power its
    /// destination is set to spare. Local copies never wait.
    func holdReason(for target: ResolvedTarget) -> WaitReason? {
        guard TransferRegistry.entry(target.uploadProtocol).usesNetwork else { return nil }
        if conditions.isMetered && target.waitOnMetered { return .metered }
        if conditions.isOnBattery && target.waitOnBattery { return .battery }
        return nil
    }

    /// Keeps a queued job from starting until what it waits for changes.
    func hold(_ job: Job, _ reason: WaitReason) {
        guard waiting[job.id] != reason else { return }
        waiting[job.id] = reason
        Log.job(.info, JobLogContext(job), "waiting: \(reason.description)")
        announce(job)
    }

    /// Tells subscribers of a job's change: the job as memory holds it (its revision included).
    func announce(_ job: Job) {
        let current = store.jobs[job.id] ?? job
        if heldAnnouncements != nil {
            heldAnnouncements?.append(current)
            return
        }
        dependencies.events.publishState(id: current.id, batch: current.spec.batch, state: current.state) {
            info(for: current)
        }
    }

    /// Runs `body` (synchronous: no other turn of the actor can come between) and announces the
    /// changes it announced together, in their order, when it returns: one delivery per subscriber.
    func announcingTogether<T>(_ body: () throws -> T) rethrows -> T {
        guard heldAnnouncements == nil else { return try body() }
        heldAnnouncements = []
        defer {
            let held = heldAnnouncements ?? []
            heldAnnouncements = nil
            dependencies.events.publishStates(
                held.map { EventHub.StateChange(id: $0.id, batch: $0.spec.batch, state: $0.state) }
            ) { info(for: held[$0]) }
        }
        return try body()
    }

    /// Lets the held jobs that match go back to the ready queue; returns how many.
    private func release(_ matching: (WaitReason) -> Bool) -> Int {
        var released = 0
        for (id, reason) in waiting where matching(reason) {
            waiting[id] = nil
            guard let job = store.jobs[id], job.state == .queued else { continue }
            ready.insert(id, at: job.place)
            released += 1
        }
        return released
    }

    /// How long the retry timer waits past the earliest retry time for the ones due after it.
    static let retryGathering: TimeInterval = 0.05

    private func armRetryTimer() {
        guard let earliest = delayed.earliest() else {
            retryTimer?.cancel()
            retryTimer = nil
            retryTimerDeadline = nil
            return
        }
        // Retries due close together start on one wake-up: a dead server backs off thousands of
        // jobs, each at its own jittered time.
        let fireAt = earliest.addingTimeInterval(Self.retryGathering)
        if retryTimer != nil, let deadline = retryTimerDeadline, deadline <= fireAt { return }
        retryTimer?.cancel()
        retryTimerDeadline = fireAt
        let wait = max(0, fireAt.timeIntervalSince(dependencies.now()))
        retryTimer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int((wait * 1000).rounded(.up))))
            guard !Task.isCancelled else { return }
            await self?.retryTimerFired()
        }
    }

    private func retryTimerFired() {
        retryTimer = nil
        retryTimerDeadline = nil
        let now = dependencies.now()
        for id in delayed.takeDue(at: now) {
            guard let job = store.jobs[id], job.state == .queued else { continue }
            if let next = job.nextAttemptAt, next > now {
                delayed.insert(id, at: next)  // moved later since
            } else {
                ready.insert(id, at: job.place)
            }
        }
        armRetryTimer()
        fillSlots()
    }

    // MARK: - Live progress

    /// While transfers run: progress events for subscribers and STATUS= for systemd, twice a second.
    /// Idle, nothing ticks.
    private func updateTicker() {
        if running.isEmpty {
            if ticker != nil && ready.isEmpty { HeapTrimmer.trimSoon() }  // the queue just went idle
            ticker?.cancel()
            ticker = nil
            reportStatusIfChanged()
            return
        }
        guard ticker == nil else { return }
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                guard !Task.isCancelled else { return }
                await self?.tick()
            }
        }
    }

    private func tick() {
        judgePaces()
        if dependencies.events.hasSubscribers {
            for id in running.keys {
                guard let job = store.jobs[id], job.state == .running else { continue }
                let info = info(for: job)
                dependencies.events.publishProgress(
                    JobProgressEvent(
                        id: id, bytesTotal: job.bytesTotal, bytesSent: info.bytesSent, bytesAcked: job.bytesAcked,
                        speed: info.speed, eta: info.eta, revision: job.revision), batch: job.spec.batch)
            }
        }
        reportStatusIfChanged()
    }

    /// The short status line: "2 uploading, 5 queued, 38.2 MiB/s".
    func statusText() -> String {
        let counts = stateCounts()
        let speed = running.values.reduce(0) { $0 + $1.meter.speed }
        var parts = ["\(counts[.running] ?? 0) uploading", "\(counts[.queued] ?? 0) queued"]
        for reason in WaitReason.allCases {
            let count = waiting.values.count { $0 == reason }
            if count > 0 { parts.append("\(count) \(reason.description)") }
        }
        if let failed = counts[.failed], failed > 0 { parts.append("\(failed) failed") }
        if speed > 0 { parts.append(ByteSize.formatRate(speed)) }
        if let bandwidthLimit { parts.append("limit \(ByteSize.formatRate(Double(bandwidthLimit)))") }
        return parts.joined(separator: ", ")
    }

    /// The status line for a READY=1 message; it counts as sent, so it is not repeated.
    func takeStatusText() -> String {
        lastStatusText = statusText()
        lastStatusAt = ContinuousClock.now
        return lastStatusText
    }

    func reportStatusIfChanged() {
        let text = statusText()
        // Only changes, at most about once a second (idle and finished states always get through).
        let now = ContinuousClock.now
        guard text != lastStatusText, running.isEmpty || now - lastStatusAt >= .seconds(1) else { return }
        lastStatusText = text
        lastStatusAt = now
        dependencies.reportStatus(text)
    }

    func stateCounts() -> [JobState: Int] { store.stateCounts.filter { $0.value > 0 } }

    /// The public view of a job, with live numbers when it is running.
    func info(for job: Job, includeHistory: Bool = false) -> JobInfo {
        if let attempt = running[job.id], job.state == .running {
            let reading = attempt.meter.reading
            var info = JobInfo(
                job: job, bytesSent: attempt.meter.bytesSent, speed: reading.speed, speedSettled: reading.settled,
                includeHistory: includeHistory)
            info.activity = activity(of: job)
            return info
        }
        var info = JobInfo(job: job, includeHistory: includeHistory, waiting: waiting[job.id]?.rawValue)
        if job.state == .queued { info.activity = activity(of: job) }
        return info
    }
}

/// What a queued job waits for before it may start; the raw value is `JobInfo.waiting`.
enum WaitReason: String, CaseIterable, Sendable {
    case network, metered, battery

    var description: String {
        switch self {
        case .network: return "waiting for the network"
        case .metered: return "waiting for an unmetered connection"
        case .battery: return "waiting for mains power"
        }
    }
}
