import CShims
import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadWire

/// A program the daemon runs for work it must not do in its own process, such as decoding an
/// image a stranger made: a decoder that crashes, loops or eats memory ends that helper, and the
/// daemon fails the one job. The helper reads its input from stdin and writes its result to
/// stdout (descriptors the daemon opened: it needs no path of its own), and runs under limits set
/// before it starts (`CShims_spawn_limited`): address space, CPU time, wall time, no core dump.
/// With `temporaryRoot`, each run has a temporary folder of its own, removed after it.
package struct HelperProcess: Sendable {
    package var executable: String
    package var arguments: [String]
    /// RLIMIT_AS in bytes; nil: none.
    package var memoryLimit: Int64?
    /// RLIMIT_CPU in seconds; nil: none.
    package var cpuSeconds: Int?
    /// Killed (SIGKILL) after this long.
    package var timeout: Duration = .seconds(120)
    /// The helper's environment; the daemon's own is not passed on.
    package var environment: [String] = ["PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"]
    /// Where each run gets a fresh folder (0700, `run-XXXXXX`), passed as TMPDIR and removed with
    /// whatever is in it once the helper has exited, however it ended: a helper may write only
    /// there (uploadd-image's Landlock rules), never in /tmp, which every process of the user shares
    /// and where what it left would outlive it. nil: no TMPDIR (uploadd-image then writes nowhere).
    package var temporaryRoot: String?
    /// At most this much of what the helper writes to stderr is kept, for the job's error.
    package static let stderrLimit = 8 << 10

    package init(
        executable: String, arguments: [String], memoryLimit: Int64? = nil, cpuSeconds: Int? = nil,
        timeout: Duration = .seconds(120)
    ) {
        self.executable = executable
        self.arguments = arguments
        self.memoryLimit = memoryLimit
        self.cpuSeconds = cpuSeconds
        self.timeout = timeout
    }

    package enum Failure: Error, Equatable, CustomStringConvertible {
        case couldNotStart(String)
        /// It exited with a status other than 0; `message` is the end of its stderr.
        case exited(status: Int32, message: String)
        /// A signal ended it: a crash (SIGSEGV, SIGABRT), the CPU limit (SIGXCPU, SIGKILL).
        case killed(signal: Int32, message: String)
        case timedOut(Duration)

        package var description: String {
            switch self {
            case .couldNotStart(let why): return "could not start the helper: \(why)"
            case .exited(let status, let message):
                return message.isEmpty ? "the helper failed (exit status \(status))" : message
            case .killed(let signal, let message):
                let name = String(cString: strsignal(signal))
                let limit = signal == SIGXCPU ? " (over its CPU time limit)" : ""
                return "the helper was killed by signal \(signal) (\(name))\(limit)"
                    + (message.isEmpty ? "" : ": \(message)")
            case .timedOut(let limit):
                return "the helper took longer than \(limit.components.seconds) s and was stopped"
            }
        }
    }

    /// What a helper that succeeded left: its stderr, and what it used.
    package struct Outcome: Sendable {
        package var stderr: String
        /// Peak resident memory (ru_maxrss).
        package var maxResidentKiB: Int
        /// User + system time.
        package var cpuSeconds: Double
    }

    /// Runs the helper to its end with `input` as stdin and `output` as stdout (nil: stdout goes
    /// where stderr goes, kept with it). Cancelling the task kills it.
    package func run(input: Int32, output: Int32?) async throws -> Outcome {
        guard let temporaryRoot else { return try await run(input: input, output: output, environment: environment) }
        let folder: String
        do {
            folder = try FileOps.makeTemporaryDirectory(in: temporaryRoot, prefix: "run")
        } catch {
            throw Failure.couldNotStart("no temporary folder for it: \(error)")
        }
        // The helper has been reaped whenever `run` returns or throws: nothing writes here anymore.
        defer { FileOps.removeTree(folder) }
        return try await run(input: input, output: output, environment: environment + ["TMPDIR=\(folder)"])
    }

    private func run(input: Int32, output: Int32?, environment: [String]) async throws -> Outcome {
        var pipeFDs: [Int32] = [0, 0]
        var reportFDs: [Int32] = [0, 0]
        guard CShims_pipe_cloexec(&pipeFDs) == 0 else { throw Failure.couldNotStart(SystemError("pipe").description) }
        guard CShims_pipe_cloexec(&reportFDs) == 0 else {
            close(pipeFDs[0])
            close(pipeFDs[1])
            throw Failure.couldNotStart(SystemError("pipe").description)
        }
        // Forked, and its exec awaited, on the spawner thread (see `Spawner`).
        let (stderrWrite, reportRead, reportWrite) = (pipeFDs[1], reportFDs[0], reportFDs[1])
        let (pid, forkErrno, exec) = await Spawner.shared.run { [self] in
            let pid = spawn(
                input: input, output: output ?? stderrWrite, stderr: stderrWrite, report: reportWrite,
                environment: environment)
            let forkErrno = errno
            close(stderrWrite)
            close(reportWrite)
            let exec = pid > 0 ? readAll(reportRead, limit: 4) : []
            close(reportRead)
            return (pid, forkErrno, exec)
        }
        guard pid > 0 else {
            close(pipeFDs[0])
            throw Failure.couldNotStart(SystemError("fork", errno: forkErrno).description)
        }
        if exec.count == 4 {
            let code = exec.withUnsafeBytes { $0.load(as: Int32.self) }
            close(pipeFDs[0])
            _ = Self.reap(pid)
            throw Failure.couldNotStart("\(executable): \(String(cString: strerror(code)))")
        }
        let stderrFD = pipeFDs[0]
        let watch = Watch()
        let timeout = self.timeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { watch.killUnlessReaped(pid, timedOut: true) }
        }
        defer { timer.cancel() }
        let (status, usage, message) = try await withTaskCancellationHandler {
            try await Blocking.run { () -> (Int32, rusage, String) in
                let bytes = Self.collectStderr(stderrFD, of: pid)
                close(stderrFD)
                watch.markReaped()
                let (status, usage) = Self.reap(pid)
                return (status, usage, String(decoding: bytes, as: UTF8.self))
            }
        } onCancel: {
            watch.killUnlessReaped(pid, timedOut: false)
        }
        try Task.checkCancellation()
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        // WIFEXITED / WTERMSIG, which Swift does not import as functions.
        if status & 0x7f == 0 {
            let code = (status >> 8) & 0xff
            if code == 0 {
                let cpu =
                    Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
                return Outcome(stderr: text, maxResidentKiB: usage.ru_maxrss, cpuSeconds: cpu)
            }
            throw Failure.exited(status: code, message: String(text.suffix(2000)))
        }
        let signal = status & 0x7f
        if signal == SIGKILL, watch.timedOut { throw Failure.timedOut(timeout) }
        throw Failure.killed(signal: signal, message: String(text.suffix(2000)))
    }

    /// What the timer, a cancellation and the reaper tell each other: a kill after the reaping
    /// could reach another process that got the same pid.
    private final class Watch: Sendable {
        private let state = Mutex((reaped: false, timedOut: false))

        func killUnlessReaped(_ pid: pid_t, timedOut: Bool) {
            state.withLock { state in
                guard !state.reaped else { return }
                if timedOut { state.timedOut = true }
                kill(-pid, SIGKILL)  // its whole process group: it is the leader of its own session
            }
        }

        func markReaped() { state.withLock { $0.reaped = true } }
        var timedOut: Bool { state.withLock { $0.timedOut } }
    }

    private func spawn(input: Int32, output: Int32, stderr: Int32, report: Int32, environment: [String]) -> pid_t {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        return CShims_spawn_limited(
            executable, argv, envp, input, output, stderr, report, memoryLimit ?? 0, Int64(cpuSeconds ?? 0))
    }

    /// What the helper writes to stderr (at most `stderrLimit`), read until it exits: a child it
    /// left behind holding the pipe open does not keep the job waiting. On return the helper has
    /// exited and is not reaped yet (so that no kill can reach another process with its pid).
    private static func collectStderr(_ fd: Int32, of pid: pid_t) -> [UInt8] {
        var kept: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var open = true
        while true {
            var info = siginfo_t()
            let exited =
                waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
                && info._sifields._sigchld.si_pid == pid
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if open && poll(&poller, 1, exited ? 0 : 100) > 0 {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    // The end is what matters (the report, the error): keep the last `stderrLimit` bytes.
                    kept += buffer.prefix(count)
                    if kept.count > stderrLimit { kept.removeFirst(kept.count - stderrLimit) }
                    continue
                }
                if count == 0 || errno != EINTR { open = false }
            }
            if exited {
                // What it left behind in its process group goes with it (its pid is not reaped yet,
                // so the group cannot be another's).
                kill(-pid, SIGKILL)
                return kept
            }
            if !open { usleep(20_000) }
        }
    }

    /// wait4 until the child is gone: its raw status and what it used.
    private static func reap(_ pid: pid_t) -> (Int32, rusage) {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        return (status, usage)
    }
}

/// Reads `fd` to its end, keeping at most `limit` bytes (the rest is read and dropped, so that the
/// writer never blocks on a full pipe).
private func readAll(_ fd: Int32, limit: Int) -> [UInt8] {
    var kept: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { return kept }
        kept += buffer.prefix(min(count, max(limit - kept.count, 0)))
    }
}

/// The one thread that forks helpers. Linux sends PR_SET_PDEATHSIG when the *thread* that forked
/// exits, and the cooperative pool's threads come and go: forked from a pool thread, a helper was
/// killed whenever its thread was retired. This thread lives as long as the daemon.
private final class Spawner: @unchecked Sendable {
    // Invariant: `work` is guarded by `lock`; only the spawner thread runs the closures.
    static let shared = Spawner()
    private let lock = NSLock()
    private var work: [() -> Void] = []
    private let ready = DispatchSemaphore(value: 0)

    private init() {
        NamedThread.start("uploadd-spawn") { [self] in
            while true {
                ready.wait()
                lock.lock()
                let next = work.removeFirst()
                lock.unlock()
                next()
            }
        }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            lock.lock()
            work.append { continuation.resume(returning: body()) }
            lock.unlock()
            ready.signal()
        }
    }
}
