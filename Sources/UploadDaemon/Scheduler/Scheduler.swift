import Foundation
import UploadCore

/// Owns the queue: every job, its state machine, the journal records that change it, and the
/// running transfers. Every change is a journal record applied to memory and appended to disk in
/// the same actor turn, so the file and the memory never disagree about order.
actor Scheduler {
    struct Dependencies: Sendable {
        var journal: Journal
        var http: HTTPClient
        var snapshots: SnapshotCache
        var events: EventHub
        var environment: [String: String]
        /// Short live status for systemd's STATUS=, called at most every half second while busy.
        var reportStatus: @Sendable (String) -> Void = { _ in }
        /// The seam between the queue and the network: tests put a scripted Transfer here.
        var makeTransfer: @Sendable (UploadProtocol, HTTPClient) throws -> any Transfer = { uploadProtocol, http in
            try TransferFactory.transfer(for: uploadProtocol, http: http)
        }
    }

    struct RunningAttempt {
        var task: Task<Void, Never>
        var meter: ProgressMeter
        var ackedAtStart: Int64
        var target: ResolvedTarget
    }

    let dependencies: Dependencies
    var config: DaemonConfig
    var store: JournalState
    var ready = ReadyQueue()
    /// Queued jobs waiting for their retry time.
    var delayed: Set<JobID> = []
    var running: [JobID: RunningAttempt] = [:]
    var clientTokens: [String: JobID] = [:]
    var reservedNextID: UInt64
    var stopping = false
    private var retryTimer: Task<Void, Never>?
    private var retryTimerDeadline: Date?
    private var ticker: Task<Void, Never>?
    private var journalCatchUp: Task<Void, Never>?
    private var lastStatusText = ""
    private var lastStatusAt = ContinuousClock.now - .seconds(10)
    /// Jobs that were running when the daemon last stopped, journaled as queued by `start()`.
    private var requeuedAtStart: [Job] = []

    init(replayed: JournalState, config: DaemonConfig, dependencies: Dependencies) {
        self.dependencies = dependencies
        self.config = config
        var store = replayed
        let now = Date()
        var requeuedJobs: [Job] = []
        for job in replayed.jobs.values where job.state == .running {
            var requeued = job
            requeued.requeueAfterRestart(at: now)
            store.apply(.job(requeued))
            requeuedJobs.append(requeued)
        }
        self.store = store
        self.requeuedAtStart = requeuedJobs
        self.reservedNextID = store.nextID
        var readyNow: [(id: JobID, priority: Int)] = []
        for job in store.jobs.values {
            if let token = job.spec.clientToken { clientTokens[token] = job.id }
            guard job.state == .queued else { continue }
            if let next = job.nextAttemptAt, next > now { delayed.insert(job.id) } else { readyNow.append((job.id, job.spec.priority)) }
        }
        ready = ReadyQueue(readyNow)
        // Here, before the control socket serves anyone: a copy made for a job added while the
        // daemon starts up must not be taken for an orphan (socket activation queues that add
        // before the daemon even runs). Completed and canceled jobs are done with their copies; a
        // kill between their final record and the copy's deletion leaves one behind.
        dependencies.snapshots.removeOrphans(
            keeping: Set(
                store.jobs.values.compactMap { job in
                    job.snapshot?.isCached == true && job.state != .completed && job.state != .canceled ? job.snapshot?.path : nil
                }))
    }

    /// Starts work after replay: requeued jobs are journaled, transfers started.
    func start() {
        if !requeuedAtStart.isEmpty { dependencies.journal.append(requeuedAtStart.map { .job($0) }) }
        requeuedAtStart = []
        compactIfWorthwhile()
        // Canceled jobs whose partial upload the server may still hold (the daemon stopped before
        // the discard went through): try again.
        for job in store.jobs.values where job.state == .canceled && job.checkpoint != nil {
            discardPartialUpload(of: job, thenForget: false)
        }
        armRetryTimer()
        fillSlots()
    }

    /// Applies a new config (SIGHUP or daemon.reload).
    func reload(_ newConfig: DaemonConfig) {
        config = newConfig
        fillSlots()
    }

    /// Proves the actor is responsive: the watchdog pings systemd only after this returns.
    func heartbeat() -> Bool { !stopping }

    /// Stops every transfer at its next safe point and waits for them. Running jobs stay `running`
    /// in the journal, so the next start resumes them.
    func shutdown() async {
        stopping = true
        retryTimer?.cancel()
        ticker?.cancel()
        journalCatchUp?.cancel()
        let tasks = running.values.map(\.task)
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    // MARK: - Recording changes

    /// Applies a job's new state and journals it. `durable` waits for the disk before the state is
    /// announced to subscribers.
    func commit(_ job: Job, durable: Bool, beforeAnnouncing: () -> Void = {}) async throws {
        store.apply(.job(job))
        compactIfWorthwhile()
        try await journal([.job(job)], durable: durable)
        beforeAnnouncing()
        // Subscribers hear of a change only once it is on disk (for durable changes).
        dependencies.events.publishState(info(for: store.jobs[job.id] ?? job))
    }

    /// Drops a job from memory and returns the record that says so; the caller journals it.
    func forgetInMemory(_ job: Job) -> JournalRecord {
        store.apply(.removed(job.id))
        ready.remove(job.id, priority: job.spec.priority)
        delayed.remove(job.id)
        if let token = job.spec.clientToken { clientTokens[token] = nil }
        return .removed(job.id)
    }

    /// Journals records of several changes in one durable append, then announces the jobs.
    func commitDurably(_ records: [JournalRecord], announcing jobs: [Job]) async throws {
        compactIfWorthwhile()
        defer { for job in jobs { dependencies.events.publishState(info(for: store.jobs[job.id] ?? job)) } }
        try await journal(records, durable: true)
    }

    /// Appends records; a durable append returns once they are on disk. After a durable write
    /// fails (a full disk) memory is ahead of the journal, so catching up starts.
    func journal(_ records: [JournalRecord], durable: Bool) async throws {
        guard durable else {
            dependencies.journal.append(records)
            return
        }
        do {
            try await dependencies.journal.appendDurably(records)
        } catch {
            catchUpWithJournal()
            throw error
        }
    }

    /// Rewrites the journal when it holds far more records than live jobs.
    private func compactIfWorthwhile() {
        let written = dependencies.journal.recordsSinceCompaction
        guard written > max(10_000, store.jobs.count * 4) else { return }
        dependencies.journal.compact(store.compactedRecords())
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
        dependencies.journal.compact(store.compactedRecords())
        return true
    }

    // MARK: - Picking work

    /// Starts queued jobs until the limit of concurrent transfers is reached.
    func fillSlots() {
        var skipped: [Job] = []
        while !stopping, running.count < config.maxTransfers, let id = ready.popFirst() {
            guard let job = store.jobs[id], job.state == .queued else { continue }
            if running[id] != nil {
                skipped.append(job)  // its previous attempt is still stopping; it starts when that ends
                continue
            }
            startAttempt(job)
        }
        for job in skipped where !delayed.contains(job.id) { ready.insert(job.id, priority: job.spec.priority) }
        updateTicker()
    }

    /// Puts a queued job where it belongs: ready now, or delayed until its retry time.
    func enqueue(_ job: Job) {
        guard job.state == .queued else { return }
        if let next = job.nextAttemptAt, next > Date() {
            delayed.insert(job.id)
            armRetryTimer()
        } else {
            delayed.remove(job.id)
            ready.insert(job.id, priority: job.spec.priority)
        }
    }

    func unqueue(_ job: Job) {
        ready.remove(job.id, priority: job.spec.priority)
        delayed.remove(job.id)
    }

    private func armRetryTimer() {
        let earliest = delayed.compactMap { store.jobs[$0]?.nextAttemptAt }.min()
        guard let earliest else {
            retryTimer?.cancel()
            retryTimer = nil
            retryTimerDeadline = nil
            return
        }
        if retryTimer != nil, let deadline = retryTimerDeadline, deadline <= earliest { return }
        retryTimer?.cancel()
        retryTimerDeadline = earliest
        retryTimer = Task { [weak self] in
            let wait = max(0, earliest.timeIntervalSinceNow)
            try? await Task.sleep(for: .milliseconds(Int((wait * 1000).rounded(.up))))
            guard !Task.isCancelled else { return }
            await self?.retryTimerFired()
        }
    }

    private func retryTimerFired() {
        retryTimer = nil
        retryTimerDeadline = nil
        let now = Date()
        for id in delayed {
            guard let job = store.jobs[id] else {
                delayed.remove(id)
                continue
            }
            if (job.nextAttemptAt ?? now) <= now {
                delayed.remove(id)
                if job.state == .queued { ready.insert(id, priority: job.spec.priority) }
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
        if dependencies.events.hasSubscribers {
            for (id, attempt) in running {
                guard let job = store.jobs[id], job.state == .running else { continue }
                let info = info(for: job)
                dependencies.events.publishProgress(
                    JobProgressEvent(
                        id: id, bytesTotal: job.bytesTotal, bytesSent: attempt.meter.bytesSent, bytesAcked: job.bytesAcked,
                        speed: info.speed, eta: info.eta))
            }
        }
        reportStatusIfChanged()
    }

    /// The short status line: "2 uploading, 5 queued, 38.2 MB/s".
    func statusText() -> String {
        let counts = stateCounts()
        let speed = running.values.reduce(0) { $0 + $1.meter.speed }
        var parts = ["\(counts[.running] ?? 0) uploading", "\(counts[.queued] ?? 0) queued"]
        if let failed = counts[.failed], failed > 0 { parts.append("\(failed) failed") }
        if speed > 0 { parts.append(ByteSize.formatRate(speed)) }
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
            return JobInfo(job: job, bytesSent: attempt.meter.bytesSent, speed: attempt.meter.speed, includeHistory: includeHistory)
        }
        return JobInfo(job: job, includeHistory: includeHistory)
    }
}
