import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// One run of a job's `on_complete` or `on_failure` command: which command a job's end calls
/// for, the process (no shell, the job in `UPLOAD_*` variables), and what its end says.
struct HookRun {
    let job: Job
    let command: HookCommand
    /// `on_complete` or `on_failure`.
    let name: String
    /// `UPLOAD_URL`, and, when the server's URL is not given to the hook, why (for the history).
    let url: (value: String, refusal: String?)

    init(_ job: Job, command: HookCommand) {
        self.job = job
        self.command = command
        name = job.state == .completed ? "on_complete" : "on_failure"
        url = Self.hookURL(of: job)
    }

    /// The command a job's end calls for: its remote's, else `[daemon]`'s.
    static func command(for job: Job, config: DaemonConfig) -> HookCommand? {
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

    /// Runs the hook, its input /dev/null, killed with its process group at `timeout`.
    func run(environment: [String: String], timeout: Duration) async -> Result<HelperProcess.Outcome, any Error> {
        let process = self.process(environment: environment, timeout: timeout)
        do {
            try Self.checkProgram(process.executable, hook: name)
            let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
            defer { if devNull >= 0 { close(devNull) } }
            return .success(try await process.run(input: devNull, output: nil))
        } catch {
            return .failure(error)
        }
    }

    /// What the run's end says, for the log and the job's history.
    func summary(of outcome: Result<HelperProcess.Outcome, any Error>) -> (level: LogLevel, text: String) {
        let program = command.arguments[0]
        switch outcome {
        case .success(let ran):
            return (.info, "\(name) hook \(program) exited 0" + Self.outputSuffix(ran.stderr))
        case .failure(HelperProcess.Failure.timedOut(let limit)):
            return (.warning, "\(name) hook \(program) did not end within \(limit.components.seconds) s and was killed")
        case .failure(HelperProcess.Failure.exited(let status, let output)):
            return (.warning, "\(name) hook \(program) exited \(status)" + Self.outputSuffix(output))
        case .failure(let error):
            return (.warning, "\(name) hook \(program): \(error)")
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
    /// display passed on (for notify-send).
    func process(environment: [String: String], timeout: Duration) -> HelperProcess {
        var variables = [
            "PATH", "HOME", "USER", "LOGNAME", "LANG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
            "DISPLAY", "WAYLAND_DISPLAY",
        ].compactMap { name in environment[name].map { "\(name)=\($0)" } }
        if environment["PATH"] == nil { variables.append("PATH=\(HookCommand.defaultSearchPath)") }
        let upload: [(String, String)] = [
            ("UPLOAD_ID", job.id.description), ("UPLOAD_SOURCE", job.spec.source),
            ("UPLOAD_DESTINATION", Redaction.redactURL(job.spec.destination)),
            ("UPLOAD_URL", url.value), ("UPLOAD_STATE", job.state.rawValue),
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
        process.timeout = timeout
        return process
    }

    /// `UPLOAD_URL` (empty when the server named none), and, when the server's URL is not
    /// given to the hook, why, for the job's history. A file:// job's URL is uploadd's own, made
    /// from the destination and the file's name, as UPLOAD_DESTINATION and UPLOAD_SOURCE are.
    static func hookURL(of job: Job) -> (value: String, refusal: String?) {
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
