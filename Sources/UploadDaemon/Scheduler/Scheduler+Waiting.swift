import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// Jobs held back for the network, a metered connection or battery power, and those waiting out a
/// retry's delay.
extension Scheduler {
    /// Links, addresses or routes changed: the jobs waiting for the network try now, and so do
    /// those backing off after a network error, without waiting out their delay.
    func networkChanged() {
        var released = release { $0 == .network }
        for id in Array(delayed.jobs) {
            guard let job = store.jobs[id], job.state == .queued, let code = job.error?.code,
                ["network", "timeout", "stalled"].contains(code)
            else { continue }
            delayed.remove(id)
            makeReady(job)
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
    func release(_ matching: (WaitReason) -> Bool) -> Int {
        var released = 0
        for (id, reason) in waiting where matching(reason) {
            waiting[id] = nil
            guard let job = store.jobs[id], job.state == .queued else { continue }
            makeReady(job)
            released += 1
        }
        return released
    }

    /// How long the retry timer waits past the earliest retry time for the ones due after it.
    static let retryGathering: TimeInterval = 0.05

    func armRetryTimer() {
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
                makeReady(job)
            }
        }
        armRetryTimer()
        fillSlots()
    }
}
