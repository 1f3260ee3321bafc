import Foundation
import Glibc

/// A raw client of the control socket, for sending what uploadctl never would: broken bytes, huge
/// lines, thousands of requests, or nothing at all.
///
/// Blocking descriptor; reads wait with poll(2) and a deadline. Writes use MSG_NOSIGNAL, so a daemon
/// that hung up gives an error instead of SIGPIPE.
final class RawClient: @unchecked Sendable {
    // Invariant: one thread uses a client at a time.
    enum Read: Equatable, CustomStringConvertible {
        case line([UInt8])
        case closed
        case timeout

        var description: String {
            switch self {
            case .line(let bytes): return "line(\(String(decoding: bytes.prefix(300), as: UTF8.self)))"
            case .closed: return "closed"
            case .timeout: return "timeout"
            }
        }
    }

    let fd: Int32
    private var pending: [UInt8] = []
    /// How much of `pending` holds no newline.
    private var scanned = 0
    private var sawEOF = false

    /// Connects to `path`. `receiveBuffer` shrinks SO_RCVBUF, for clients that never read.
    init(_ path: String, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(): \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        // A daemon that stops reading (back-pressure) fails a send after a while instead of
        // blocking the test forever.
        var sendTimeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw TestFailure("cannot connect to \(path): \(message)")
        }
    }

    deinit { Glibc.close(fd) }

    /// Writes everything; false when the daemon hung up (EPIPE, ECONNRESET) or stopped reading for 5 s.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    @discardableResult
    func send(line: String) -> Bool { send(Array((line + "\n").utf8)) }

    /// The next line (without its newline), or closed, or timeout.
    func readLine(timeout: Double = 10) -> Read {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            // Only the bytes not searched yet: an 18 MiB answer comes in about 72 reads.
            if let newline = pending[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                scanned = 0
                return .line(line)
            }
            scanned = pending.count
            if sawEOF { return .closed }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return .timeout }
            switch fill(timeout: left) {
            case .some(true): continue
            case .some(false): sawEOF = true
            case .none: return .timeout
            }
        }
    }

    /// The next line decoded as JSON (nil when it is not JSON), or throws on close/timeout.
    func readJSON(timeout: Double = 10) throws -> Any {
        switch readLine(timeout: timeout) {
        case .line(let bytes):
            guard let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
                throw TestFailure(
                    "the daemon sent a line that is not JSON: \(String(decoding: bytes.prefix(300), as: UTF8.self))")
            }
            return value
        case .closed: throw TestFailure("the daemon closed the connection")
        case .timeout: throw TestFailure("no answer within \(timeout) s")
        }
    }

    /// A JSON-RPC response object.
    func readResponse(timeout: Double = 10) throws -> [String: Any] {
        guard let object = try readJSON(timeout: timeout) as? [String: Any] else {
            throw TestFailure("the answer is not a JSON object")
        }
        return object
    }

    /// Reads and discards until the daemon closes the connection; the bytes read, or nil on timeout.
    func drainUntilClosed(timeout: Double) -> Int? {
        var total = pending.count
        pending.removeAll()
        scanned = 0
        if sawEOF { return total }
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            guard poll(events: Int16(POLLIN), timeout: left) else { return nil }
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                sawEOF = true
                return total
            }
            total += count
        }
    }

    /// Whether the daemon closed the connection within `timeout` (pending data is discarded).
    func isClosed(within timeout: Double) -> Bool { drainUntilClosed(timeout: timeout) != nil }

    /// Reads what is there within `timeout`: true when bytes came, false at EOF, nil when nothing came.
    private func fill(timeout: Double) -> Bool? {
        guard poll(events: Int16(POLLIN), timeout: timeout) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }  // EOF, or ECONNRESET: the daemon is gone either way
            pending += buffer[0..<count]
            return true
        }
    }

    private func poll(events: Int16, timeout: Double) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let result = Glibc.poll(&entry, 1, Int32(max(0, min(timeout, 3600)) * 1000))
        return result > 0
    }
}

/// What /proc says about a process.
enum ProcStats {
    /// Resident set size in KiB (VmRSS), or 0 when the process is gone.
    static func rssKiB(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }

    /// User plus system CPU seconds the process has used.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Open descriptors.
    static func openFiles(_ pid: Int32) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// The soft and hard RLIMIT_NOFILE ("unlimited" as Int.max).
    static func fileLimits(_ pid: Int32) -> (soft: Int, hard: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Max open files") {
            let words = line.dropFirst("Max open files".count).split(separator: " ")
            guard words.count >= 2 else { return nil }
            func value(_ word: Substring) -> Int { word == "unlimited" ? Int.max : Int(word) ?? 0 }
            return (value(words[0]), value(words[1]))
        }
        return nil
    }
}

/// Samples a process's RSS every 50 ms in the background and keeps the peak.
final class RSSSampler: @unchecked Sendable {
    // Invariant: `peak` and `running` are touched only under `lock`.
    private let pid: Int32
    private let lock = NSLock()
    private var peak = 0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(pid: Int32) {
        self.pid = pid
        peak = ProcStats.rssKiB(pid)
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                let rss = ProcStats.rssKiB(pid)
                lock.withLock { peak = max(peak, rss) }
                usleep(50_000)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops sampling; the highest RSS seen, in KiB.
    func stop() -> Int {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { max(peak, ProcStats.rssKiB(pid)) }
    }
}

/// RSS before, at the peak and after a hostile case, with the bounds every case must keep.
struct MemoryReport: CustomStringConvertible {
    var name: String
    var before: Int
    var peak: Int
    var after: Int

    var description: String {
        func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
        return
            "RSS \(name): before \(mib(before)), peak \(mib(peak)) (+\(mib(peak - before))), after \(mib(after)) (\(after >= before ? "+" : "")\(mib(after - before)))"
    }

    /// Measures `body` against the daemon `pid`; `after` is taken once RSS settles (up to `settle` s).
    static func measure(
        _ name: String, pid: Int32, settle: Double = 5, afterLimitKiB: Int = 24 << 10, _ body: () throws -> Void
    ) rethrows -> MemoryReport {
        let before = ProcStats.rssKiB(pid)
        let sampler = RSSSampler(pid: pid)
        do {
            try body()
        } catch {
            _ = sampler.stop()
            throw error
        }
        let peak = sampler.stop()
        var after = ProcStats.rssKiB(pid)
        let deadline = Date().addingTimeInterval(settle)
        while after - before > afterLimitKiB && Date() < deadline {
            usleep(200_000)
            after = ProcStats.rssKiB(pid)
        }
        let report = MemoryReport(name: name, before: before, peak: peak, after: after)
        print(report)
        return report
    }
}

/// The process's own descriptor limit.
enum FileLimit {
    /// Raises the soft RLIMIT_NOFILE to at least `wanted` (within the hard limit); the new soft limit.
    @discardableResult
    static func raise(to wanted: Int) -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if Int(limit.rlim_cur) < wanted {
            limit.rlim_cur = rlim_t(min(wanted, Int(clamping: limit.rlim_max)))
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }

    static var hard: Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(clamping: limit.rlim_max)
    }
}

extension DaemonProcess {
    /// `uploadctl status`, timed: (seconds, result).
    func timedStatus() throws -> (seconds: Double, result: CommandResult) {
        let started = Date()
        let result = try ctl(["status"], timeout: 30)
        return (Date().timeIntervalSince(started), result)
    }

    /// Lines of the daemon's log that contain `text`.
    func logLines(containing text: String) -> [String] {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").map(String.init).filter { $0.contains(text) }
    }
}
