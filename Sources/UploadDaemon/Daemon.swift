import Dispatch
import Foundation
import Glibc
import UploadCore
import UploadHTTP
import UploadPlatform
import UploadWire

/// uploadd's entry point: parse the command line, set up, serve until told to stop.
public enum UploadDaemonMain {
    /// `uploadd --check-config`: every problem of the file, each with its line, on stderr; 0 when it
    /// would load (warnings included), 1 when not. Nothing is started.
    static func checkConfig(at path: String) -> Int32 {
        do {
            let config = try DaemonConfig.load(path: path)
            for warning in config.warnings {
                FileHandle.standardError.write(Data("uploadd: \(path): warning: \(warning)\n".utf8))
            }
            let exists = FileManager.default.fileExists(atPath: path)
            print(
                exists
                    ? "\(path): OK (\(config.remotes.count) remote\(config.remotes.count == 1 ? "" : "s"))"
                    : "\(path) does not exist: the defaults apply")
            return 0
        } catch {
            FileHandle.standardError.write(Data("uploadd: \(error)\n".utf8))
            return 1
        }
    }

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
        if let missing = options.missingConfig {
            FileHandle.standardError.write(Data("uploadd: \(missing)\n".utf8))
            return 1
        }
        if options.checkConfig { return checkConfig(at: options.configPath) }
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
    /// Held for the daemon's life: no other uploadd may use its state or its cache directory.
    let stateLock: DirectoryLock
    let cacheLock: DirectoryLock
    let journal: Journal
    let http: HTTPClient
    let scheduler: Scheduler
    let server: ControlServer
    let socketPath: String
    /// Whether we bound the socket ourselves (and so remove it at exit).
    let ownsSocketFile: Bool
    let startedAt = Date()
    let journalDamage: String?
    let configReport: ConfigReport
    let crashMarker: CrashMarker
    let networkMonitor: NetworkMonitor?
    let conditionsWatcher: SystemConditionsWatcher?
    /// Watches the `[folder NAME]` rules' folders once the queue runs; nil when it cannot (no pipe).
    let folderWatcher: FolderWatcher?

    private init(
        options: DaemonOptions, environment: [String: String], notifier: SystemdNotifier, stateLock: DirectoryLock,
        cacheLock: DirectoryLock,
        journal: Journal, http: HTTPClient, scheduler: Scheduler, server: ControlServer, socketPath: String,
        ownsSocketFile: Bool, journalDamage: String?, configReport: ConfigReport, crashMarker: CrashMarker,
        networkMonitor: NetworkMonitor?, conditionsWatcher: SystemConditionsWatcher?, folderWatcher: FolderWatcher?
    ) {
        self.options = options
        self.environment = environment
        self.notifier = notifier
        self.stateLock = stateLock
        self.cacheLock = cacheLock
        self.journal = journal
        self.http = http
        self.scheduler = scheduler
        self.server = server
        self.socketPath = socketPath
        self.ownsSocketFile = ownsSocketFile
        self.journalDamage = journalDamage
        self.configReport = configReport
        self.crashMarker = crashMarker
        self.networkMonitor = networkMonitor
        self.conditionsWatcher = conditionsWatcher
        self.folderWatcher = folderWatcher
    }

    static func start(options: DaemonOptions, environment: [String: String], notifier: SystemdNotifier) throws -> Daemon
    {
        signal(SIGPIPE, SIG_IGN)
        HeapTrimmer.limitArenas()
        HeapTrimmer.releaseCaches.withLock { $0 = { EasyHandlePool.drain() } }
        LeftoverCopies.noteDaemonStart()
        // Our own files (journal, snapshots) are private; `file://` copies get the user's umask.
        let userUmask = umask(0o077)
        let descriptorLimit = raiseFileLimit()
        try FileOps.preparePrivateDirectory(options.stateDirectory, what: "the state directory", option: "--state-dir")
        try FileOps.preparePrivateDirectory(options.cacheDirectory, what: "the cache directory", option: "--cache-dir")
        let stateLock = try DirectoryLock.acquire(directory: options.stateDirectory, for: .state)
        // Before anything reads or sweeps the cache: a daemon with another state directory but
        // this cache would take the copies of its jobs 1, 2, ... for orphans, or make its own
        // in their place.
        let cacheLock = try DirectoryLock.acquire(directory: options.cacheDirectory, for: .cache)
        let crashMarker = CrashMarker(stateDirectory: options.stateDirectory)
        let previousCrash = crashMarker.previousCrash()
        if let previousCrash {
            Log.warning(
                "uploadd crashed last time (signal \(previousCrash.signal)); the jobs it was uploading run one at a time now"
            )
        }
        try crashMarker.install()
        let config = try DaemonConfig.load(path: options.configPath, environment: environment)
        for warning in config.warnings { Log.warning("\(options.configPath): \(warning)") }

        let replayStart = Date()
        var journalInfo = stat()
        if stat(options.stateDirectory + "/journal", &journalInfo) == 0, journalInfo.st_size > 64 << 20 {
            notifier.extendTimeout(seconds: 120)  // a big journal: ask systemd for time to replay it
        }
        let (journal, replay) = try Journal.open(directory: options.stateDirectory)
        if let damage = replay.damage { Log.warning(damage) }
        if !replay.state.foreignJobs.isEmpty {
            Log.warning(
                "\(replay.state.foreignJobs.count) jobs were written by a newer uploadd in a way this one does not understand; they are kept in the journal and left alone (run the newer uploadd to continue them)"
            )
        }
        Log.info(
            "journal replayed: \(replay.state.jobs.count) jobs from \(replay.recordCount) records in \(String(format: "%.0f", Date().timeIntervalSince(replayStart) * 1000)) ms"
        )

        let snapshots = SnapshotCache(cacheDirectory: options.cacheDirectory)
        try snapshots.prepare()
        HTTPClient.globalInit()
        let http = HTTPClient()
        let events = EventHub()
        let reachability = Reachability()
        let scheduler = Scheduler(
            replayed: replay.state, config: config,
            dependencies: Scheduler.Dependencies(
                journal: journal, http: HTTPSemantics(http), snapshots: snapshots, events: events,
                environment: environment,
                umask: userUmask,
                reportStatus: { notifier.status($0) },
                reachability: { url, fresh in
                    if let known = reachability.known(url: url, fresh: fresh) { return known }
                    return (try? await Blocking.run { reachability.check(url: url, fresh: fresh) }) ?? .unknown
                },
                bandwidthLimitFile: BandwidthLimitFile(stateDirectory: options.stateDirectory),
                pausedFoldersFile: PausedFoldersFile(stateDirectory: options.stateDirectory),
                applyBandwidthLimit: { http.setBandwidthLimit($0) },
                notifier: DesktopNotifier(environment: environment), smallAttemptExecutor: http),
            crashed: previousCrash != nil,
            crashSuspects: previousCrash?.runningJobs ?? [])
        // What replay read and decoded (the whole journal, once) and the survey's lists of every
        // job: trimmed before the survey, a million queued jobs kept ~55 MiB more than they take.
        HeapTrimmer.trim()
        let networkMonitor = NetworkMonitor {
            reachability.networkChanged()
            Task { await scheduler.networkChanged() }
        }
        let conditionsWatcher = SystemConditionsWatcher { state in
            Task { await scheduler.conditionsChanged(state) }
        }

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
            if let notice = SocketLocation.foreignRuntimeDirectory(option: options.socketPath, environment: environment)
            {
                Log.warning(notice)
            }
            listenFD = try ControlSocket.listen(at: socketPath)
            ownsSocketFile = true
            Log.info("serving on \(socketPath)")
        }
        let report = ConfigReport(warnings: config.warnings)
        let daemonBox = DaemonReference()
        let handler = ControlHandler(
            scheduler: scheduler, events: events,
            reload: { try await daemonBox.daemon?.reload() ?? [] },
            status: {
                await daemonBox.daemon?.status()
                    ?? DaemonStatus(
                        version: UploaddVersion.string, pid: getpid(), uptime: 0, jobs: [:], speed: 0, maxTransfers: 0,
                        stateDirectory: "", cacheDirectory: "", socket: "", journalBytes: 0, journalDamage: nil,
                        configWarnings: [], configErrors: [])
            },
            folders: { name, pause throws(RPCError) in
                guard let daemon = daemonBox.daemon else { return FolderList(folders: []) }
                return try await daemon.folders(name, pause: pause)
            })
        let server = ControlServer(
            listenFD: listenFD, handler: handler, budget: ControlBudget(descriptorLimit: descriptorLimit))
        let daemon = Daemon(
            options: options, environment: environment, notifier: notifier, stateLock: stateLock, cacheLock: cacheLock,
            journal: journal, http: http,
            scheduler: scheduler, server: server, socketPath: socketPath, ownsSocketFile: ownsSocketFile,
            journalDamage: replay.damage, configReport: report, crashMarker: crashMarker,
            networkMonitor: networkMonitor,
            conditionsWatcher: conditionsWatcher, folderWatcher: try? FolderWatcher())
        daemonBox.daemon = daemon
        server.start()
        return daemon
    }

    /// Runs until SIGTERM or SIGINT; SIGHUP reloads the config.
    /// Chunks of a watched folder's files being added at once.
    static let folderTakesAtOnce = 4

    func serveUntilStopped() async {
        let signals = SignalStream([SIGTERM, SIGINT, SIGHUP])
        // The journal is replayed and the socket listens: ready, then let the queue run.
        if let conditionsWatcher { await scheduler.conditionsChanged(conditionsWatcher.initial) }
        notifier.ready(status: await scheduler.takeStatusText())
        await scheduler.start()
        crashMarker.clear()  // its consequences are journaled now
        // After the queue runs (READY is sent already): the first scan of a large folder holds
        // neither the start nor the control socket.
        // The files are taken a chunk at a time in the order they settled, at most
        // `folderTakesAtOnce` chunks at once: a task per chunk would queue a hundred on the
        // scheduler at a large scan, and a status asked meanwhile would wait behind all of them;
        // one at a time, a large file's add (which may wait for its copy until its upload ends)
        // would hold up every other file.
        let (settled, handOver) = AsyncStream.makeStream(of: (FolderRule, [FolderWatcher.Settled]).self)
        let folderTakes = Task { [scheduler, folderWatcher] in
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await (rule, files) in settled {
                    if running == Self.folderTakesAtOnce {
                        await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask {
                        let retry = await scheduler.takeFolderFiles(rule, files)
                        folderWatcher?.retakeLater(rule.name, paths: retry)
                    }
                }
            }
        }
        folderWatcher?.start(await scheduler.folderRules) { rule, files in handOver.yield((rule, files)) }
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
        networkMonitor?.stop()
        conditionsWatcher?.stop()
        folderWatcher?.stop()
        handOver.finish()
        folderTakes.cancel()
        await scheduler.shutdown()
        http.shutdown()
        journal.close()
        if ownsSocketFile { unlink(socketPath) }
        Log.notice("stopped")
    }

    /// Re-reads the config file and applies it; the old config stays when the new one is broken.
    /// Returns the new config's warnings. On errors the config in use stays, and the errors are
    /// logged, thrown (for the reply) and kept for status.
    @discardableResult
    func reload() async throws -> [String] {
        notifier.reloading()
        let config: DaemonConfig
        do {
            config = try DaemonConfig.load(path: options.configPath, environment: environment)
        } catch {
            let errors = error.message.split(separator: "\n").map(String.init)
            configReport.refused(errors: errors)
            for line in errors { Log.error("\(options.configPath): \(line)") }
            Log.error("config not reloaded: the one loaded before stays in use")
            notifier.ready(status: await scheduler.takeStatusText())
            throw error
        }
        for warning in config.warnings { Log.warning("\(options.configPath): \(warning)") }
        configReport.applied(warnings: config.warnings)
        await scheduler.reload(config)
        folderWatcher?.apply(await scheduler.folderRules)
        notifier.ready(status: await scheduler.takeStatusText())
        Log.notice("config reloaded from \(options.configPath)")
        return config.warnings
    }

    /// `folder.list`, or with a name `folder.pause` (`pause`) or `folder.resume`: the watcher
    /// lets a paused folder go, and scans a resumed one again.
    func folders(_ name: String?, pause: Bool?) async throws(RPCError) -> FolderList {
        if let name, let pause {
            _ = try await scheduler.setFolder(name, paused: pause)
            folderWatcher?.apply(await scheduler.folderRules)
        }
        return await scheduler.folderList(states: folderWatcher?.ruleStates ?? [:])
    }

    func status() async -> DaemonStatus {
        let queue = await scheduler.queueStatus()
        var status = DaemonStatus(
            version: UploaddVersion.string, pid: getpid(), uptime: Date().timeIntervalSince(startedAt),
            jobs: queue.jobs,
            speed: queue.speed, maxTransfers: queue.transfers,
            stateDirectory: (journal.path as NSString).deletingLastPathComponent,
            // As the snapshot cache names it (`SnapshotCache.directory`'s folder): no symlink resolved.
            cacheDirectory: ((options.cacheDirectory + "/snapshots") as NSString).deletingLastPathComponent,
            socket: socketPath,
            journalBytes: journal.fileBytes, journalDamage: journalDamage, configWarnings: configReport.warnings,
            configErrors: configReport.errors, bandwidthLimit: queue.limit, conditions: queue.conditions)
        let problems = folderWatcher?.problems ?? []
        status.folderProblems = problems.isEmpty ? nil : problems
        return status
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
/// recommends for services (the 1024 soft default exists only for select()). Returns the soft
/// limit in force (RLIM_INFINITY, all ones, as the most an Int holds).
private func raiseFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    if limit.rlim_cur < limit.rlim_max {
        let soft = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            Log.warning("cannot raise the open files limit: \(SystemError("setrlimit"))")
            limit.rlim_cur = soft
        }
    }
    return Int(clamping: limit.rlim_cur)
}
