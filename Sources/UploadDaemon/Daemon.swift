import Dispatch
import Foundation
import Glibc
import UploadCore

/// uploadd's entry point: parse the command line, set up, serve until told to stop.
public enum UploadDaemonMain {
    public static func run(arguments: [String]) async -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let options: DaemonOptions
        do {
            options = try DaemonOptions.parse(arguments, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("uploadd: \(error)\nTry 'uploadd --help'.\n".utf8))
            return 64
        }
        if options.showHelp {
            print(DaemonOptions.usage)
            return 0
        }
        if options.showVersion {
            print("uploadd \(UploaddVersion.string)")
            return 0
        }
        Log.configure(level: options.logLevel, environment: environment)
        let notifier = SystemdNotifier()
        let daemon: Daemon
        do {
            daemon = try Daemon.start(options: options, environment: environment, notifier: notifier)
        } catch {
            Log.error("cannot start: \(error)")
            let code = (error as? SystemError)?.errno ?? EINVAL
            notifier.failed(errno: code, status: "failed to start: \(error)")
            return 1
        }
        await daemon.serveUntilStopped()
        return 0
    }
}

/// A running daemon: its parts, started in order and stopped in reverse.
final class Daemon: Sendable {
    let options: DaemonOptions
    let environment: [String: String]
    let notifier: SystemdNotifier
    let lock: StateLock
    let journal: Journal
    let http: HTTPClient
    let scheduler: Scheduler
    let server: ControlServer
    let socketPath: String
    /// Whether we bound the socket ourselves (and so remove it at exit).
    let ownsSocketFile: Bool
    let startedAt = Date()
    let journalDamage: String?
    let configWarnings: ConfigWarnings

    private init(
        options: DaemonOptions, environment: [String: String], notifier: SystemdNotifier, lock: StateLock,
        journal: Journal, http: HTTPClient, scheduler: Scheduler, server: ControlServer, socketPath: String,
        ownsSocketFile: Bool, journalDamage: String?, configWarnings: ConfigWarnings
    ) {
        self.options = options
        self.environment = environment
        self.notifier = notifier
        self.lock = lock
        self.journal = journal
        self.http = http
        self.scheduler = scheduler
        self.server = server
        self.socketPath = socketPath
        self.ownsSocketFile = ownsSocketFile
        self.journalDamage = journalDamage
        self.configWarnings = configWarnings
    }

    static func start(options: DaemonOptions, environment: [String: String], notifier: SystemdNotifier) throws -> Daemon {
        signal(SIGPIPE, SIG_IGN)
        umask(0o077)
        raiseFileLimit()
        try FileOps.makeDirectory(options.stateDirectory)
        try FileOps.makeDirectory(options.cacheDirectory)
        let lock = try StateLock.acquire(directory: options.stateDirectory)
        let config = try DaemonConfig.load(path: options.configPath)
        for warning in config.warnings { Log.warning("\(options.configPath): \(warning)") }

        let replayStart = Date()
        var journalInfo = stat()
        if stat(options.stateDirectory + "/journal", &journalInfo) == 0, journalInfo.st_size > 64 << 20 {
            notifier.extendTimeout(seconds: 120)  // a big journal: ask systemd for time to replay it
        }
        let (journal, replay) = try Journal.open(directory: options.stateDirectory)
        if let damage = replay.damage { Log.warning(damage) }
        Log.info(
            "journal replayed: \(replay.state.jobs.count) jobs from \(replay.recordCount) records in \(String(format: "%.0f", Date().timeIntervalSince(replayStart) * 1000)) ms")

        let snapshots = SnapshotCache(cacheDirectory: options.cacheDirectory)
        try snapshots.prepare()
        HTTPClient.globalInit()
        let http = HTTPClient()
        let events = EventHub()
        let scheduler = Scheduler(
            replayed: replay.state, config: config,
            dependencies: Scheduler.Dependencies(
                journal: journal, http: http, snapshots: snapshots, events: events, environment: environment,
                reportStatus: { notifier.status($0) }))

        let listenFD: Int32
        let socketPath: String
        let ownsSocketFile: Bool
        if options.socketPath == nil, let inherited = try SocketActivation.inheritedControlSocket() {
            listenFD = inherited
            socketPath = ControlSocket.path(of: inherited) ?? DaemonOptions.defaultSocketPath(environment: environment)
            ownsSocketFile = false
            Log.info("serving on the socket systemd passed")
        } else {
            socketPath = options.socketPath ?? DaemonOptions.defaultSocketPath(environment: environment)
            listenFD = try ControlSocket.listen(at: socketPath)
            ownsSocketFile = true
            Log.info("serving on \(socketPath)")
        }
        let warnings = ConfigWarnings(config.warnings)
        let daemonBox = DaemonReference()
        let handler = ControlHandler(
            scheduler: scheduler, events: events,
            reload: { try await daemonBox.daemon?.reload() },
            status: {
                await daemonBox.daemon?.status()
                    ?? DaemonStatus(
                        version: UploaddVersion.string, pid: getpid(), uptime: 0, jobs: [:], speed: 0, maxTransfers: 0,
                        stateDirectory: "", cacheDirectory: "", socket: "", journalBytes: 0, journalDamage: nil,
                        configWarnings: [])
            })
        let server = ControlServer(listenFD: listenFD, handler: handler)
        let daemon = Daemon(
            options: options, environment: environment, notifier: notifier, lock: lock, journal: journal, http: http,
            scheduler: scheduler, server: server, socketPath: socketPath, ownsSocketFile: ownsSocketFile,
            journalDamage: replay.damage, configWarnings: warnings)
        daemonBox.daemon = daemon
        server.start()
        return daemon
    }

    /// Runs until SIGTERM or SIGINT; SIGHUP reloads the config.
    func serveUntilStopped() async {
        let signals = SignalStream([SIGTERM, SIGINT, SIGHUP])
        // The journal is replayed and the socket listens: ready, then let the queue run.
        notifier.ready(status: await scheduler.takeStatusText())
        await scheduler.start()
        Log.notice("uploadd \(UploaddVersion.string) ready (pid \(getpid()))")
        let watchdog = startWatchdog()
        for await signal in signals.stream {
            if signal == SIGHUP {
                do {
                    try await reload()
                } catch {
                    Log.error("config not reloaded: \(error)")
                }
                continue
            }
            Log.notice("received \(signal == SIGTERM ? "SIGTERM" : "SIGINT"); stopping")
            break
        }
        notifier.stopping()
        watchdog?.cancel()
        server.stop()
        await scheduler.shutdown()
        http.shutdown()
        journal.close()
        if ownsSocketFile { unlink(socketPath) }
        Log.notice("stopped")
    }

    /// Re-reads the config file and applies it; the old config stays when the new one is broken.
    func reload() async throws {
        notifier.reloading()
        let config: DaemonConfig
        do {
            config = try DaemonConfig.load(path: options.configPath)
        } catch {
            notifier.ready(status: await scheduler.takeStatusText())
            throw error
        }
        for warning in config.warnings { Log.warning("\(options.configPath): \(warning)") }
        configWarnings.replace(config.warnings)
        await scheduler.reload(config)
        notifier.ready(status: await scheduler.takeStatusText())
        Log.notice("config reloaded from \(options.configPath)")
    }

    func status() async -> DaemonStatus {
        await scheduler.status(
            socket: socketPath, startedAt: startedAt, journalDamage: journalDamage, configWarnings: configWarnings.current)
    }

    /// WATCHDOG=1 at half the interval systemd asks for, and only after the scheduler answered:
    /// a hung scheduler stops the pings and systemd restarts us.
    private func startWatchdog() -> Task<Void, Never>? {
        guard let interval = notifier.watchdogInterval else { return nil }
        let scheduler = scheduler
        let notifier = notifier
        return Task {
            while !Task.isCancelled {
                if await scheduler.heartbeat() { notifier.watchdogPing() }
                try? await Task.sleep(for: interval / 2)
            }
        }
    }
}

/// Lets the control handler reach the daemon that owns it, once both exist.
private final class DaemonReference: @unchecked Sendable {
    // Invariant: set once in Daemon.start before the server starts; read-only afterwards.
    var daemon: Daemon?
}

/// Many clients at once need many descriptors: raise the soft limit to the hard one, as systemd
/// recommends for services (the 1024 soft default exists only for select()).
private func raiseFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
        Log.warning("cannot raise the open files limit: \(SystemError("setrlimit"))")
    }
}
