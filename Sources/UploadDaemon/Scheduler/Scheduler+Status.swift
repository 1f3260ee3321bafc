import Foundation
import UploadCore
import UploadPlatform
import UploadWire

/// Live progress for subscribers, the status line for systemd, `daemon.status`, and the public
/// view of jobs (`job.get`, `job.list`).
extension Scheduler {

    /// While transfers run: progress events for subscribers and STATUS= for systemd, twice a second.
    /// Idle, nothing ticks.
    func updateTicker() {
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
        let speed = totalSpeed
        var parts = ["\(counts[.running] ?? 0) uploading", "\(counts[.queued] ?? 0) queued"]
        let held = heldBack()
        for reason in WaitReason.allCases {
            if let count = held[reason], count > 0 { parts.append("\(count) \(reason.description)") }
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

    func get(_ id: JobID) throws(RPCError) -> JobInfo {
        guard let job = store.jobs[id] else { throw RPCError.jobNotFound(id) }
        return withPositions([info(for: job, includeHistory: true)])[0]
    }

    func list(states: [JobState]?, ids: [JobID]?, batch: JobID? = nil, after: JobID? = nil) -> [JobInfo] {
        withPositions(store.jobs(ids: ids, states: states, batch: batch, after: after).map { info(for: $0) })
    }

    /// One page of `job.list` (`JobStore.page`).
    func listPage(states: [JobState]?, batch: JobID?, after: JobID?, limit: Int) -> (jobs: [JobInfo], next: JobID?) {
        let page = store.page(states: states, batch: batch, after: after, limit: limit)
        return (withPositions(page.ids.map { info(for: store.jobs[$0]!) }), page.next)
    }

    func status(
        socket: String, startedAt: Date, journalDamage: String?, configWarnings: [String], configErrors: [String]
    ) -> DaemonStatus {
        let counts = stateCounts()
        var byName: [String: Int] = [:]
        for state in JobState.allCases { byName[state.rawValue] = counts[state] ?? 0 }
        return DaemonStatus(
            version: UploaddVersion.string, pid: getpid(), uptime: Date().timeIntervalSince(startedAt), jobs: byName,
            speed: totalSpeed, maxTransfers: config.maxTransfers,
            stateDirectory: (dependencies.journal.path as NSString).deletingLastPathComponent,
            cacheDirectory: (dependencies.snapshots.directory as NSString).deletingLastPathComponent, socket: socket,
            journalBytes: dependencies.journal.fileBytes, journalDamage: journalDamage, configWarnings: configWarnings,
            configErrors: configErrors, bandwidthLimit: bandwidthLimit,
            conditions: DaemonConditions(
                metered: conditions.metered, onBattery: conditions.onBattery,
                waiting: Dictionary(
                    uniqueKeysWithValues: heldBack().map { ($0.key.rawValue, $0.value) })))
    }

    /// All running uploads' speeds together, bytes per second.
    var totalSpeed: Double { running.values.reduce(0) { $0 + $1.meter.speed } }

    /// How many queued jobs wait for each reason; every reason is a key, zero or not.
    func heldBack() -> [WaitReason: Int] {
        var counts = Dictionary(uniqueKeysWithValues: WaitReason.allCases.map { ($0, 0) })
        for reason in waiting.values { counts[reason, default: 0] += 1 }
        return counts
    }
}
