import Foundation
import Synchronization
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// How transfer slots are shared when a server is slow: a cap on transfers per server while
/// other servers have work waiting, and a queued job of higher priority taking the slot of a
/// transfer that crawls.
///
/// A server that read 2 KiB every 2 s held both slots with two 20 MiB PUTs, for what would have
/// been six hours, while a `--priority 1000` job to a healthy server waited behind them. The
/// minimum-speed rule (`min_speed`, in the HTTP layer) ends such transfers after two minutes;
/// these rules keep the rest of the queue moving meanwhile, and against servers just above it.
extension Scheduler {
    /// How far past a job for a server at its cap `fillSlots` looks for one for another server:
    /// a few, as each look is made again at every start and end of a transfer (a folder of small
    /// files to one server ends hundreds a second); a job further back waits its turn, as the
    /// queue's order says, and a crawling transfer still gives way to it (`judgePaces`).
    static let lookAheadForOtherServers = 32

    /// The server a job sends to (`ServerShares.server(of:)`).
    func server(of job: Job) -> String {
        ServerShares.server(of: job.spec.destination)
    }

    // MARK: Crawling transfers

    /// Once a `paceWindow` (`DaemonConfig+Fairness`), for each running transfer: whether it crawled through it. Then the
    /// job queued first takes the slot of the crawling transfer of the lowest priority, if its own
    /// priority is higher and it could not start otherwise. Called by the ticker.
    func judgePaces() {
        let now = ContinuousClock.now
        // uploadd's own limit may be what keeps a transfer slow: then it does not crawl.
        let share = bandwidthLimit.map { Double($0) / Double(max(running.count, 1)) }
        let limitedBelowCrawl = share.map { $0 < 2 * config.crawlSpeed } ?? false
        for (id, attempt) in running where now - attempt.paceMark.at >= config.paceWindow {
            let bytes = attempt.meter.bytesSent
            let seconds = Double((now - attempt.paceMark.at).components.seconds)
            running[id]?.isCrawling =
                !limitedBelowCrawl && Double(bytes - attempt.paceMark.bytes) / seconds < config.crawlSpeed
            running[id]?.paceMark = (now, bytes)
        }
        setAsideACrawlerForTheJobWaiting()
    }

    /// The job first in the queue, when it cannot start for lack of a slot, takes the slot of a
    /// crawling transfer whose job has a lower priority, or that sends to a server holding more
    /// than its share of slots (`config.serverShare`: it took them while no other server had work)
    /// when the job waiting is for another server. The transfer is stopped and its job queued
    /// again in its place (a resumable protocol goes on from what the server has).
    private func setAsideACrawlerForTheJobWaiting() {
        guard let waitingID = ready.first, let waiting = store.jobs[waitingID], !waiting.needsPreparation,
            running.count >= config.transferSlots.mostAtOnce
                || !config.transferSlots.mayStart(
                    bytesLeft: waiting.bytesLeft, running: running.values.lazy.map(\.bytesLeft))
        else { return }
        let waitingServer = server(of: waiting)
        var perServer: [String: Int] = [:]
        for attempt in running.values { perServer[attempt.server, default: 0] += 1 }
        let candidates = running.compactMap { (id, attempt) -> (job: Job, why: String)? in
            guard attempt.isCrawling, !attempt.isSuspect, let job = store.jobs[id] else { return nil }
            if job.spec.priority < waiting.spec.priority {
                return (job, "priority \(waiting.spec.priority)")
            }
            if attempt.server != waitingServer, perServer[attempt.server, default: 0] > config.serverShare {
                return (job, "another server's, while this one holds more than \(config.serverShare) of the slots")
            }
            return nil
        }
        guard let chosen = candidates.min(by: { $0.job.spec.priority < $1.job.spec.priority }) else { return }
        var job = chosen.job
        let message =
            "set aside for job \(waiting.id) (\(chosen.why)): this upload moved under \(ByteSize.formatRate(config.crawlSpeed)) for \(config.paceWindow.components.seconds)s; it goes on when a slot is free"
        guard job.setAside(message, at: dependencies.now()) else { return }
        Log.job(.notice, JobLogContext(job), message)
        store.saveSoon(job)
        announce(job)
        // Its attempt ends as a stop on purpose (`attemptEnded` with no outcome): it is queued
        // again, and the slot goes to the job waiting.
        running[job.id]?.task.cancel()
    }
}
