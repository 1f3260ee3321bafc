import Foundation
import Glibc
import Synchronization

/// A program the tests start: posix_spawn(3) and waitpid(2), with the few parts of Foundation's
/// `Process` the tests use, under the same names.
///
/// Why not `Process`: in Swift 6.3.1, `Process.run()` copies each `/proc/self/fd` entry's whole
/// 256-byte `d_name`, reading past glibc's readdir buffer, and now and then dies of SIGSEGV in
/// memmove (swift-corelibs-foundation PR #5472, fixed after 6.3.1). It took a CI run down.
///
/// The child gets an empty signal mask and default dispositions for the signals a test sends or
/// the test process ignores (a test thread may block SIGTERM, and its children would inherit
/// that), and no descriptor of the test process but 0, 1 and 2.
final class ChildProcess: Sendable {
    enum TerminationReason: Sendable { case exit, uncaughtSignal }

    private struct Settings {
        var executableURL: URL?
        var arguments: [String] = []
        var environment: [String: String]?
        var standardInput: FileHandle?
        var standardOutput: FileHandle?
        var standardError: FileHandle?
    }

    private enum State {
        case notStarted
        case running(pid_t)
        case exited(pid: pid_t, status: Int32)
    }

    /// glibc 2.34's posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc module does not
    /// declare.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(
        dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np"
    )
    .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    private let settings = Mutex(Settings())
    private let state = Mutex(State.notStarted)

    var executableURL: URL? {
        get { settings.withLock { $0.executableURL } }
        set { settings.withLock { $0.executableURL = newValue } }
    }
    var arguments: [String]? {
        get { settings.withLock { $0.arguments } }
        set { settings.withLock { $0.arguments = newValue ?? [] } }
    }
    /// nil: the test process's own environment.
    var environment: [String: String]? {
        get { settings.withLock { $0.environment } }
        set { settings.withLock { $0.environment = newValue } }
    }
    /// nil: inherited. `FileHandle.nullDevice`: /dev/null.
    var standardInput: FileHandle? {
        get { settings.withLock { $0.standardInput } }
        set { settings.withLock { $0.standardInput = newValue } }
    }
    var standardOutput: FileHandle? {
        get { settings.withLock { $0.standardOutput } }
        set { settings.withLock { $0.standardOutput = newValue } }
    }
    var standardError: FileHandle? {
        get { settings.withLock { $0.standardError } }
        set { settings.withLock { $0.standardError = newValue } }
    }

    /// The child's pid once started (0 before).
    var processIdentifier: Int32 {
        state.withLock {
            switch $0 {
            case .notStarted: return 0
            case .running(let pid), .exited(let pid, _): return pid
            }
        }
    }

    func run() throws {
        let settings = settings.withLock { $0 }
        guard let executable = settings.executableURL?.path else { throw TestFailure("ChildProcess: no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (handle, target) in [
            (settings.standardInput, 0), (settings.standardOutput, 1), (settings.standardError, 2),
        ] {
            guard let handle else { continue }
            if handle === FileHandle.nullDevice || handle.fileDescriptor < 0 {
                let flags = target == 0 ? O_RDONLY : O_WRONLY
                posix_spawn_file_actions_addopen(&actions, Int32(target), "/dev/null", flags, 0)
            } else {
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, Int32(target))
            }
        }
        guard let closeFrom = Self.addCloseFrom else {
            throw TestFailure("glibc lacks posix_spawn_file_actions_addclosefrom_np (2.34+)")
        }
        guard closeFrom(&actions, 3) == 0 else { throw TestFailure("posix_spawn_file_actions_addclosefrom_np failed") }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigmask(&attributes, &noMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environment = (settings.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = [executable] + settings.arguments
        var pid: pid_t = 0
        let result = withCStrings(argv) { argv in
            withCStrings(environment) { envp in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
        }
        guard result == 0 else { throw TestFailure("cannot start \(executable): \(String(cString: strerror(result)))") }
        state.withLock { $0 = .running(pid) }
    }

    /// Whether the child has not exited yet (reaping it when it has).
    var isRunning: Bool {
        state.withLock { state in
            guard case .running(let pid) = state else { return false }
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                state = .exited(pid: pid, status: status)
                return false
            }
            // -1 (ECHILD): someone else reaped it; nothing more will be learned.
            if reaped < 0 && errno == ECHILD { state = .exited(pid: pid, status: 0) }
            return reaped == 0
        }
    }

    func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    func terminate() {
        if isRunning { kill(processIdentifier, SIGTERM) }
    }

    /// The exit status, or the number of the signal that ended it (0 while running).
    var terminationStatus: Int32 {
        guard case .exited(_, let status) = state.withLock({ $0 }) else { return 0 }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    var terminationReason: TerminationReason {
        guard case .exited(_, let status) = state.withLock({ $0 }) else { return .exit }
        return status & 0x7f == 0 ? .exit : .uncaughtSignal
    }
}

/// `strings` as a NULL-terminated array of C strings, for the length of `body`.
private func withCStrings<Result>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> Result) -> Result {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return body(pointers)
}
