import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// `on_complete` and `on_failure`: a command run when a job ends, as aria2's and Transmission's
/// are. The job's ending record says a hook is due (`Job.hookPending`); a durable record clears it
/// once the hook ran. So a hook cut off by a crash (or a kill before it started) runs after the
/// restart, and one that ran is not run again. A hook runs outside the queue: a slow one holds
/// up nothing but the hooks behind it.
extension Scheduler {
    /// Hooks running at once; more wait their turn.
    static let maxHooksRunning = 4

    /// The command a job's end calls for: its remote's, else `[daemon]`'s.
    func hookCommand(for job: Job) -> HookCommand? { Self.hookCommand(for: job, config: config) }

    static func hookCommand(for job: Job, config: DaemonConfig) -> HookCommand? {
        guard config.hasHooks else { return nil }
        let remote: RemoteConfig? =
            if case .remote(let name, _)? = try? Destination.parse(job.spec.destination) {
                config.remotes[name]
            } else {
                nil
            }
        switch job.state {
        case .completed: return remote?.onComplete ?? config.hooks.onComplete
        case .failed: return remote?.onFailure ?? config.hooks.onFailure
        default: return nil
        }
    }

    /// Marks a job that is about to be journaled as ended (completed or failed) as owing its hook,
    /// in the same record.
    func markEnding(_ job: inout Job) {
        guard job.state == .completed || job.state == .failed, store.jobs[job.id]?.state != job.state else { return }
        job.hookPending = hookCommand(for: job) != nil
    }

    /// After a job's ending record is journaled: its hook, and its batch's notification.
    func jobEnded(_ job: Job) {
        if job.hookPending { queueHook(job.id) }
        noteBatchProgress(of: job)
    }

    /// Runs, after a restart, the hooks the last run owed.
    func runOwedHooks(_ ids: [JobID]) {
        for id in ids.sorted() { queueHook(id) }
    }

    private func queueHook(_ id: JobID) {
        guard !hooksQueued.contains(id) else { return }
        hooksQueued.insert(id)
        hookBacklog.append(id)
        startHooks()
    }

    private func startHooks() {
        while !stopping, hooksRunning < Self.maxHooksRunning, !hookBacklog.isEmpty {
            let id = hookBacklog.removeFirst()
            guard let job = store.jobs[id], job.hookPending, let command = hookCommand(for: job) else {
                hooksQueued.remove(id)
                continue
            }
            CrashPoint.hookDue.reached()
            hooksRunning += 1
            let (url, urlRefusal) = Self.hookURL(of: job)
            let process = hookProcess(command, for: job, url: url)
            let name = job.state == .completed ? "on_complete" : "on_failure"
            Task {
                let outcome: Result<HelperProcess.Outcome, any Error>
                do {
                    try Self.checkProgram(process.executable, hook: name)
                    let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    defer { if devNull >= 0 { close(devNull) } }
                    outcome = .success(try await process.run(input: devNull, output: nil))
                } catch {
                    outcome = .failure(error)
                }
                await self.hookEnded(id, name: name, command: command, outcome: outcome, urlRefusal: urlRefusal)
            }
        }
    }

    private func hookEnded(
        _ id: JobID, name: String, command: HookCommand, outcome: Result<HelperProcess.Outcome, any Error>,
        urlRefusal: String?
    ) async {
        hooksRunning -= 1
        hooksQueued.remove(id)
        defer { startHooks() }
        let (level, summary): (LogLevel, String) =
            switch outcome {
            case .success(let ran):
                (.info, "\(name) hook \(command.arguments[0]) exited 0" + Self.outputSuffix(ran.stderr))
            case .failure(HelperProcess.Failure.timedOut(let limit)):
                (
                    .warning,
                    "\(name) hook \(command.arguments[0]) did not end within \(limit.components.seconds) s and was killed"
                )
            case .failure(HelperProcess.Failure.exited(let status, let output)):
                (.warning, "\(name) hook \(command.arguments[0]) exited \(status)" + Self.outputSuffix(output))
            case .failure(let error):
                (.warning, "\(name) hook \(command.arguments[0]): \(error)")
            }
        guard var job = store.jobs[id] else {
            Log.notice("job \(id) (removed): \(summary)")
            return
        }
        Log.job(level, JobLogContext(job), summary)
        guard !stopping else { return }  // the daemon's stop killed it: it runs again at the next start
        job.hookPending = false
        if let urlRefusal { job.record(urlRefusal, at: dependencies.now()) }
        job.record(String(summary.prefix(300)), at: dependencies.now())
        do {
            // Durable: a hook that ran must not run again after a crash.
            try await announceOnceSaved([job], store.saveDurably(job))
        } catch {
            Log.error("job \(id): cannot journal that its hook ran: \(error); it may run again after a restart")
        }
    }

    /// Checked again right before each run, not only when the config was loaded: the program, or a
    /// folder above it, may have been opened to others since. A program that is missing now is not
    /// run either, since whoever creates it first could be anyone where others may create files.
    private static func checkProgram(_ executable: String, hook name: String) throws {
        guard try TrustedPath.check(executable, what: "the \(name) program") else {
            throw HelperProcess.Failure.couldNotStart("\(executable) does not exist")
        }
    }

    /// ": its output", on one line, or nothing when it printed nothing.
    private static func outputSuffix(_ output: String) -> String {
        let line = output.split(whereSeparator: \.isNewline).joined(separator: " / ")
        return line.isEmpty ? "" : ": " + line
    }

    /// The hook as a process: no shell, the job in `UPLOAD_*` variables, the session's bus and
    /// display passed on (for notify-send), and killed with its process group at the timeout.
    private func hookProcess(_ command: HookCommand, for job: Job, url: String) -> HelperProcess {
        let environment = dependencies.environment
        var variables = [
            "PATH", "HOME", "USER", "LOGNAME", "LANG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
            "DISPLAY", "WAYLAND_DISPLAY",
        ].compactMap { name in environment[name].map { "\(name)=\($0)" } }
        if environment["PATH"] == nil { variables.append("PATH=\(HookCommand.defaultSearchPath)") }
        let upload: [(String, String)] = [
            ("UPLOAD_ID", job.id.description), ("UPLOAD_SOURCE", job.spec.source),
            ("UPLOAD_DESTINATION", Redaction.redactURL(job.spec.destination)),
            ("UPLOAD_URL", url), ("UPLOAD_STATE", job.state.rawValue),
            ("UPLOAD_ERROR", job.error?.message ?? ""), ("UPLOAD_BATCH", job.spec.batch?.description ?? ""),
            ("UPLOAD_CLIENT_TOKEN", job.spec.clientToken ?? ""),
            ("UPLOAD_METADATA", Self.metadataJSON(job.spec.metadata)),
        ]
        // NUL cannot travel in an environment; nothing a user names contains one, but be sure.
        variables += upload.map { "\($0.0)=\($0.1.replacingOccurrences(of: "\0", with: ""))" }
        var process = HelperProcess(
            executable: command.executable(searchPath: environment["PATH"]),
            arguments: Array(command.arguments.dropFirst()))
        process.environment = variables
        process.timeout = config.hooks.timeout
        return process
    }

    /// `UPLOAD_URL` (empty when the server named none), and, when the server's URL is not
    /// given to the hook, why, for the job's history. A file:// job's URL is uploadd's own, made
    /// from the destination and the file's name, as UPLOAD_DESTINATION and UPLOAD_SOURCE are.
    static func hookURL(of job: Job) -> (url: String, refusal: String?) {
        guard let url = job.result?.url, !url.isEmpty else { return ("", nil) }
        if !TransferRegistry.entry(job.effectiveProtocol).usesNetwork { return (url, nil) }
        guard let refusal = HookURL.refusal(of: url) else { return (url, nil) }
        let why = "UPLOAD_URL was left empty: the server's URL for the file is not a well-formed http(s) URL"
        return ("", "\(why) (\(refusal))")
    }

    /// The job's metadata as a JSON object (`{}` when none), for `UPLOAD_METADATA`.
    static func metadataJSON(_ metadata: [String: String]?) -> String {
        guard let metadata, let data = try? JSONCoding.encoder.encode(metadata) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
