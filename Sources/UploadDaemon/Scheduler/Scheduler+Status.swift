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
        StatusLine.text(counts: stateCounts(), held: heldBack(), speed: totalSpeed, limit: bandwidthLimit)
    }

    /// The status line for a READY=1 message; it counts as sent, so it is not repeated.
    func takeStatusText() -> String { statusReports.sent(statusText(), at: .now) }

    func reportStatusIfChanged() {
        let text = statusText()
        if statusReports.isDue(text, at: .now, busy: !running.isEmpty) {
            dependencies.reportStatus(statusReports.sent(text, at: .now))
        }
    }

    func stateCounts() -> [JobState: Int] { store.stateCounts.filter { $0.value > 0 } }

    /// The public view of a job, with live numbers when it is running.
    func info(for job: Job, includeHistory: Bool = false) -> JobInfo {
        JobActivity.info(job, facts(of: job), includeHistory: includeHistory)
    }

    func get(_ id: JobID) throws(RPCError) -> JobInfo {
        guard let job = store.jobs[id] else { throw RPCError.jobNotFound(id) }
        return withPositions([info(for: job, includeHistory: true)])[0]
    }

    func list(states: [JobState]?, ids: [JobID]?, batch: JobID? = nil, after: JobID? = nil) -> [JobInfo] {
        withPositions(store.jobs(ids: ids, states: states, batch: batch, after: after).map { info(for: $0) })
    }

    /// One page of `job.list` (`JobStore.page`), with only `fields` of each job, as JSON: each
    /// job's JSON is written as its values are made, so a page of 10,000 costs the daemon its
    /// bytes alone, not 10,000 `JobInfo`s besides (5 MiB).
    func listPageJSON(states: [JobState]?, batch: JobID?, after: JobID?, limit: Int, only fields: JobFields?)
        -> [UInt8]
    {
        let page = store.page(states: states, batch: batch, after: after, limit: limit)
        return listJSON(page.ids.map { store.jobs[$0]! }, next: page.next, only: fields)
    }

    /// All of `job.list` (no `limit`) as JSON, written as a page is: a million jobs' `JobInfo`s
    /// made first took the daemon to 1.4 GB.
    func listJSON(states: [JobState]?, ids: [JobID]?, batch: JobID?, after: JobID?, only fields: JobFields?)
        -> [UInt8]
    {
        listJSON(store.jobs(ids: ids, states: states, batch: batch, after: after), next: nil, only: fields)
    }

    private func listJSON(_ jobs: [Job], next: JobID?, only fields: JobFields?) -> [UInt8] {
        let positions = positions(ofWaiting: jobs.filter(\.state.waitsItsTurn).map(\.id))
        return JobList.jsonBytes(jobCount: jobs.count, next: next, only: fields) { index in
            var job = info(for: jobs[index])
            job.position = positions[job.id]
            return job
        }
    }

    /// The queue's part of `daemon.status`: jobs by state (every state a key), speed, slots,
    /// the bandwidth limit, the connection and power, and what held-back jobs wait for.
    func queueStatus() -> (
        jobs: [String: Int], speed: Double, transfers: Int, limit: Int64?, conditions: DaemonConditions
    ) {
        let counts = stateCounts()
        let jobs = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
        let waiting = Dictionary(uniqueKeysWithValues: heldBack().map { ($0.key.rawValue, $0.value) })
        return (
            jobs, totalSpeed, config.maxTransfers, bandwidthLimit,
            DaemonConditions(metered: conditions.metered, onBattery: conditions.onBattery, waiting: waiting)
        )
    }

    /// All running uploads' speeds together, bytes per second.
    var totalSpeed: Double { running.values.reduce(0) { $0 + $1.meter.speed } }

    /// How many queued jobs wait for each reason; every reason is a key, zero or not.
    func heldBack() -> [WaitReason: Int] { WaitReason.counts(of: waiting.values) }
}
