import Dispatch
import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// Watches the folders of the `[folder NAME]` rules and hands over the files that settled in
/// them: closed after writing or moved in, then quiet for the rule's `settle` time.
///
/// Threading: one thread of its own (`uploadd-folders`) owns the inotify instance and blocks in
/// poll(2) on it and on a pipe that `apply` and `stop` write to; scans of whole folders (at start,
/// after a queue overflow, for a folder made again) run there too, never on the scheduler or the
/// control socket. `onSettled` is called on that thread, with at most `FolderWatcher.chunk` files.
final class FolderWatcher: Sendable {
    /// A file that settled, as the watcher checked it: the add holds the path to this file.
    struct Settled: Sendable, Equatable {
        var relativePath: String
        var identity: SourceIdentity
        var size: Int64
        var modifiedNanoseconds: Int64

        /// The file, as the folder's ledger knows it.
        var key: FolderFileKey { FolderFileKey(device: identity.device, inode: identity.inode) }
    }

    /// What the watcher says of a rule.
    enum RuleState: Sendable, Equatable {
        case watching
        /// Its folder is missing: it is watched again once it is there.
        case waiting(String)
        /// It cannot be watched (refused, or a limit reached), and why.
        case failing(String)
    }

    static let chunk = 1_000

    private struct Inbox {
        var rules: [FolderRule]?
        var stop = false
        var retakes: [(folder: String, paths: [String])] = []
    }

    private let inbox = Mutex(Inbox())
    private let states = Mutex<[String: RuleState]>([:])
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    init() throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw SystemError("make a pipe") }
        for end in pipeFDs {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts watching `rules`: each folder is scanned first (files that appeared while uploadd
    /// was not running), then watched.
    func start(_ rules: [FolderRule], onSettled: @escaping @Sendable (FolderRule, [Settled]) -> Void) {
        apply(rules)
        started.store(true, ordering: .sequentiallyConsistent)
        NamedThread.start("uploadd-folders") { [self] in
            FolderWatchLoop(watcher: self, onSettled: onSettled).run()
            finished.signal()
        }
    }

    /// The rules of a reloaded config: new ones are scanned and watched, removed ones let go,
    /// changed ones scanned again.
    func apply(_ rules: [FolderRule]) {
        inbox.withLock { $0.rules = rules }
        wake()
    }

    /// Files of `folder` whose add failed for a reason that may pass (a full disk, a read error):
    /// looked at again later, at a growing interval (10 s, doubling up to an hour), as long as
    /// they are there.
    func retakeLater(_ folder: String, paths: [String]) {
        guard !paths.isEmpty else { return }
        inbox.withLock { $0.retakes.append((folder, paths)) }
        wake()
    }

    func stop() {
        inbox.withLock { $0.stop = true }
        wake()
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
    }

    /// Each rule's state, by name.
    var ruleStates: [String: RuleState] { states.withLock { $0 } }

    /// The rules not watched, or not wholly, each with why, for `daemon.status`.
    var problems: [String] {
        ruleStates.sorted { $0.key < $1.key }.compactMap { name, state in
            switch state {
            case .watching: return nil
            case .waiting(let why), .failing(let why):
                return "[folder \(name)] \(why)"
            }
        }
    }

    // MARK: - For the thread

    fileprivate var wakeDescriptor: Int32 { wakeRead }

    /// What `apply`, `retakeLater` and `stop` left: the rules to use now (nil: unchanged), the
    /// files to look at again later, and whether to stop.
    fileprivate func takeInbox() -> (rules: [FolderRule]?, retakes: [(folder: String, paths: [String])], stop: Bool) {
        var drained = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &drained, drained.count) > 0 {}
        return inbox.withLock { inbox in
            defer {
                inbox.rules = nil
                inbox.retakes = []
            }
            return (inbox.rules, inbox.retakes, inbox.stop)
        }
    }

    fileprivate func setState(_ state: RuleState?, of rule: String) {
        states.withLock { $0[rule] = state }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }
}

/// The watcher's thread: its inotify instance, its watches and the files settling.
private final class FolderWatchLoop {
    private let watcher: FolderWatcher
    private let onSettled: (FolderRule, [FolderWatcher.Settled]) -> Void
    private var inotify: Inotify?
    private var rules: [String: FolderRule] = [:]
    /// Each watch's rule and folder (a path inside the rule's folder; "" for the folder itself).
    private var watches: [Int32: (rule: String, folder: String)] = [:]
    private var tracker = SettleTracker()
    /// Rules to scan (and watch) again: new, changed, overflowed, or waiting for their folder.
    private var toScan: Set<String> = []
    /// Subfolders made or moved in since the last look, by rule: each is scanned by itself.
    private var newFolders: [(rule: String, folder: String)] = []
    /// When rules that wait or fail are tried again.
    private var nextRetry: Int64 = .max
    /// Files whose add failed, by how many times in a row: each waits twice as long as the last.
    private var failedAdds: [SettleTracker.Key: Int] = [:]

    static let retryNanoseconds: Int64 = 5_000_000_000
    static let mask =
        UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE) | UInt32(IN_DELETE)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)

    init(watcher: FolderWatcher, onSettled: @escaping (FolderRule, [FolderWatcher.Settled]) -> Void) {
        self.watcher = watcher
        self.onSettled = onSettled
    }

    func run() {
        while true {
            let (newRules, retakes, stop) = watcher.takeInbox()
            if stop { return }
            if let newRules { use(newRules) }
            for (folder, paths) in retakes where rules[folder] != nil { retakeLater(folder, paths) }
            let now = MonotonicClock.nanoseconds()
            if now >= nextRetry {
                nextRetry = .max
                for (name, _) in rules where watcher.ruleStates[name] != .watching { toScan.insert(name) }
            }
            for name in toScan.sorted() { if let rule = rules[name] { rescan(rule) } }
            for (name, folder) in newFolders where !toScan.contains(name) {
                if let rule = rules[name] { scanNewFolder(rule, folder) }
            }
            toScan.removeAll()
            newFolders.removeAll()
            settleDue()
            wait()
            if Self.isStalled {
                usleep(50_000)  // the kernel's queue fills, and overflows
                continue
            }
            if let inotify { handle(inotify.readEvents()) }
        }
    }

    /// A seam for the overflow test: while the file `UPLOADD_TEST_FOLDER_STALL` names exists, no
    /// event is read, so the kernel's queue of events (`fs.inotify.max_queued_events`, which is
    /// not per namespace and must not be lowered in a test) overflows for real. Unset, it costs
    /// one comparison.
    private static let stallFile: String? = getenv("UPLOADD_TEST_FOLDER_STALL").map { String(cString: $0) }

    private static var isStalled: Bool {
        guard let stallFile else { return false }
        return access(stallFile, F_OK) == 0
    }

    /// Blocks until an event, a wake, or the next file or retry is due.
    private func wait() {
        let deadline = min(tracker.nextDeadline ?? .max, nextRetry)
        let timeout: Int32 =
            deadline == .max ? -1 : Int32(clamping: max(0, (deadline - MonotonicClock.nanoseconds()) / 1_000_000 + 1))
        var descriptors = [pollfd(fd: watcher.wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        if let inotify { descriptors.append(pollfd(fd: inotify.descriptor, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
    }

    private func retakeLater(_ folder: String, _ paths: [String]) {
        let now = MonotonicClock.nanoseconds()
        for path in paths {
            let key = SettleTracker.Key(folder: folder, path: path)
            let failures = failedAdds[key, default: 0] + 1
            failedAdds[key] = failures
            let seconds = min(Int64(10) << Int64(min(failures - 1, 9)), 3600)
            tracker.arm(key, at: now, after: seconds * 1_000_000_000)
        }
    }

    // MARK: - Rules

    private func use(_ newRules: [FolderRule]) {
        let byName = Dictionary(newRules.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, old) in rules where byName[name] != old {
            unwatch(name)
            tracker.forget(folder: name)
            failedAdds = failedAdds.filter { $0.key.folder != name }
            watcher.setState(nil, of: name)
        }
        for (name, rule) in byName where rules[name] != rule { toScan.insert(name) }
        rules = byName
    }

    /// The inotify instance, made when a rule first needs one. When the user's instances
    /// (`fs.inotify.max_user_instances`) or the process's descriptors are used up, the rules fail
    /// with why, their folders are scanned without watches, and all is tried again in
    /// `retryNanoseconds`, as when watches run out.
    private func instance() -> Result<Inotify, Inotify.Failure> {
        if let inotify { return .success(inotify) }
        do throws(Inotify.Failure) {
            let made = try Inotify()
            inotify = made
            return .success(made)
        } catch {
            return .failure(error)
        }
    }

    private func unwatch(_ rule: String) {
        for (watch, owner) in watches where owner.rule == rule {
            inotify?.removeWatch(watch)
            watches[watch] = nil
        }
    }

    /// Watches `rule`'s folder (and its subfolders) anew and looks at every file in it: what
    /// appeared while nothing watched (uploadd not running, a queue overflow, a folder made again)
    /// is found this way.
    private func rescan(_ rule: FolderRule) {
        unwatch(rule.name)
        if let refusal = FolderTrust.refusal(of: rule) {
            fail(rule, .failing(refusal))
            return
        }
        let root = open(rule.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else {
            let error = errno
            let reason =
                error == ENOENT
                ? "\(rule.path) does not exist" : "cannot open \(rule.path): \(String(cString: strerror(error)))"
            fail(rule, error == ENOENT ? .waiting(reason) : .failing(reason))
            return
        }
        if let problem = scan(rule, root, folder: "", with: instance()) {
            fail(rule, .failing(problem))
        } else {
            if watcher.ruleStates[rule.name] != .watching { Log.info("[folder \(rule.name)] watching \(rule.path)") }
            watcher.setState(.watching, of: rule.name)
        }
    }

    /// Watches and scans the open folder `fd` (closing it), at `folder` inside the rule's, and its
    /// subfolders; hands over the quiet files. Returns why a watch could not be added, if one
    /// could not (the scan goes on: the files are found all the same).
    private func scan(
        _ rule: FolderRule, _ fd: Int32, folder: String, with inotify: Result<Inotify, Inotify.Failure>
    ) -> String? {
        var scan = FolderScan(rule: rule)
        var problem: String?
        scan.walk(fd, folder: folder) { folder in
            guard problem == nil else { return false }
            do throws(Inotify.Failure) {
                let path = folder.isEmpty ? rule.path : rule.path + "/" + folder
                watches[try inotify.get().addWatch(path, mask: Self.mask)] = (rule.name, folder)
                return true
            } catch {
                problem =
                    "\(error.description); until then its folders are scanned every \(Self.retryNanoseconds / 1_000_000_000) s"
                return false
            }
        } file: { relativePath, info in
            consider(rule, relativePath: relativePath, info: info)
        }
        let settled = scan.settled
        for chunk in stride(from: 0, to: settled.count, by: FolderWatcher.chunk) {
            onSettled(rule, Array(settled[chunk..<min(chunk + FolderWatcher.chunk, settled.count)]))
        }
        for note in scan.problems { Log.warning("[folder \(rule.name)] \(note)") }
        return problem
    }

    /// A subfolder made or moved in: watched and scanned by itself (files may have landed in it
    /// before its watch), not the whole folder again.
    private func scanNewFolder(_ rule: FolderRule, _ folder: String) {
        guard let inotify, watcher.ruleStates[rule.name] == .watching else { return }
        let fd = open(rule.path + "/" + folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }  // gone already, or a symlink
        var info = stat()
        if fstat(fd, &info) != 0 || FolderScan.untrusted(info, rule: rule, what: "folder") != nil {
            close(fd)
            Log.warning(
                "[folder \(rule.name)] \(folder): \(FolderScan.untrusted(info, rule: rule, what: "folder") ?? "gone")")
            return
        }
        if let problem = scan(rule, fd, folder: folder, with: .success(inotify)) { fail(rule, .failing(problem)) }
    }

    private func fail(_ rule: FolderRule, _ state: FolderWatcher.RuleState) {
        if watcher.ruleStates[rule.name] != state {
            if case .failing(let why) = state { Log.error("[folder \(rule.name)] \(why)") }
            if case .waiting(let why) = state { Log.warning("[folder \(rule.name)] \(why); watched once it is there") }
        }
        watcher.setState(state, of: rule.name)
        nextRetry = min(nextRetry, MonotonicClock.nanoseconds() + Self.retryNanoseconds)
    }

    // MARK: - Events

    private func handle(_ events: [Inotify.Event]) {
        let now = MonotonicClock.nanoseconds()
        for event in events {
            if event.has(IN_Q_OVERFLOW) {
                Log.warning("watched folders: the kernel's event queue overflowed; scanning every folder again")
                toScan.formUnion(rules.keys)
                continue
            }
            guard let (name, folder) = watches[event.watch], let rule = rules[name] else { continue }
            if event.has(IN_IGNORED) || event.has(IN_DELETE_SELF) || event.has(IN_MOVE_SELF) {
                // The folder itself went: a subfolder is let go (its parent says so too); the
                // rule's own folder is waited for.
                if event.has(IN_IGNORED) { watches[event.watch] = nil }
                if folder.isEmpty { toScan.insert(name) }
                continue
            }
            guard !event.name.isEmpty else { continue }
            let relativePath = folder.isEmpty ? event.name : folder + "/" + event.name
            let key = SettleTracker.Key(folder: name, path: relativePath)
            if event.has(IN_ISDIR) {
                if event.has(IN_MOVED_FROM) || event.has(IN_DELETE) {
                    tracker.forget(folder: name, under: relativePath)
                }
                if event.has(IN_MOVED_FROM), rule.recursive {
                    // The watches under a folder moved away (or within) name old paths: all are
                    // made again. Rare, and simpler than renaming watches.
                    toScan.insert(name)
                } else if rule.recursive, event.has(IN_CREATE) || event.has(IN_MOVED_TO),
                    !rule.skipsFolder(name: event.name, relativePath: relativePath)
                {
                    newFolders.append((name, relativePath))
                }
                continue
            }
            if event.has(IN_CLOSE_WRITE) || event.has(IN_MOVED_TO) {
                if rule.takes(name: event.name, relativePath: relativePath) {
                    tracker.arm(key, at: now, after: rule.settleNanoseconds)
                    failedAdds[key] = nil  // written again: its add starts over
                }
            } else if event.has(IN_MOVED_FROM) || event.has(IN_DELETE) {
                tracker.forget(key)
                failedAdds[key] = nil
            }
        }
    }

    /// Looks at the files that are due: each that is still there, a regular file the rule takes,
    /// and quiet, is handed over; one still changing waits the rest of its quiet time.
    private func settleDue() {
        let due = tracker.takeDue(at: MonotonicClock.nanoseconds())
        guard !due.isEmpty else { return }
        var settled: [String: [FolderWatcher.Settled]] = [:]
        for key in due {
            guard let rule = rules[key.folder] else { continue }
            var info = stat()
            let path = rule.path + "/" + key.path
            guard fstatat(AT_FDCWD, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }  // gone
            guard
                let file = FolderScan.fileToTake(
                    rule, path: path, info: info,
                    problem: { note in
                        Log.info("[folder \(rule.name)] \(key.path): \(note)")
                    })
            else { continue }
            switch FolderScan.quietness(file, rule: rule) {
            case .quiet:
                settled[rule.name, default: []].append(
                    FolderWatcher.Settled(
                        relativePath: key.path, identity: SourceIdentity(file), size: Int64(file.st_size),
                        modifiedNanoseconds: FolderScan.modified(file)))
            case .changing(let wait):
                tracker.arm(key, at: MonotonicClock.nanoseconds(), after: wait)
            }
        }
        for (name, files) in settled {
            guard let rule = rules[name] else { continue }
            for chunk in stride(from: 0, to: files.count, by: FolderWatcher.chunk) {
                onSettled(rule, Array(files[chunk..<min(chunk + FolderWatcher.chunk, files.count)]))
            }
        }
    }

    /// A file the scan found: handed over if quiet, else armed for the rest of its quiet time.
    private func consider(_ rule: FolderRule, relativePath: String, info: stat) -> FolderWatcher.Settled? {
        switch FolderScan.quietness(info, rule: rule) {
        case .quiet:
            return FolderWatcher.Settled(
                relativePath: relativePath, identity: SourceIdentity(info), size: Int64(info.st_size),
                modifiedNanoseconds: FolderScan.modified(info))
        case .changing(let wait):
            tracker.arm(
                SettleTracker.Key(folder: rule.name, path: relativePath), at: MonotonicClock.nanoseconds(), after: wait)
            return nil
        }
    }
}

extension FolderRule {
    var settleNanoseconds: Int64 {
        let (seconds, attoseconds) = settle.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
