import Foundation
import Glibc

/// A notify socket the test itself listens on, as systemd would: an abstract AF_UNIX datagram socket
/// (no path, so no length limit and nothing to clean up) whose datagrams are kept with their arrival
/// times. Pass `notifySocket` as NOTIFY_SOCKET.
final class NotifyListener: @unchecked Sendable {
    // Invariant: `received` is only touched under `lock`; `fd` is closed once, by close().
    struct Datagram: Sendable, CustomStringConvertible {
        var at: Date
        var text: String
        var fields: [String: String] {
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            return fields
        }
        var description: String {
            "\(String(format: "%.3f", at.timeIntervalSince1970)) \(text.replacingOccurrences(of: "\n", with: " | "))"
        }
    }

    let notifySocket: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [Datagram] = []
    private var closed = false
    private var thread: Thread?

    init() throws {
        let name = "uploadd-test-notify-\(getpid())-\(UUID().uuidString.prefix(8))"
        notifySocket = "@" + name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(AF_UNIX, SOCK_DGRAM): \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0  // abstract namespace
            for (index, byte) in bytes.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw TestFailure("bind \(notifySocket): \(message)")
        }
        let thread = Thread { [self] in receiveLoop() }
        thread.name = "notify-listener"
        self.thread = thread
        thread.start()
    }

    deinit { close() }

    func close() {
        lock.lock()
        let wasClosed = closed
        closed = true
        lock.unlock()
        if !wasClosed { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            lock.lock()
            let stop = closed
            lock.unlock()
            if stop { break }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { continue }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            lock.lock()
            received.append(Datagram(at: Date(), text: text))
            lock.unlock()
        }
        Glibc.close(fd)
    }

    var datagrams: [Datagram] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// Waits until a datagram from index `from` on satisfies `match`; returns its index.
    func waitFor(from: Int = 0, timeout: Double, _ match: (Datagram) -> Bool) -> Int? {
        var found: Int?
        _ = eventually(timeout: timeout) {
            let all = datagrams
            guard from < all.count else { return false }
            found = all[from...].firstIndex(where: match)
            return found != nil
        }
        return found
    }

    /// Every datagram, one a line, for failure messages.
    var transcript: String { datagrams.map(\.description).joined(separator: "\n") }
}

/// A throwaway systemd booted as PID 1 of a private PID and mount namespace, driven through
/// contrib/test/systemd-ns.sh (contrib/DESIGN.md, "Tests").
final class SystemdNamespace: @unchecked Sendable {
    // Invariant: used from one test at a time; stop() may run more than once.
    static var script: String { TestPaths.repository.appendingPathComponent("contrib/test/systemd-ns.sh").path }

    /// Nil when a namespace can be made here; the reason when namespaces are not permitted (not
    /// root, or unshare gets EPERM). Any other failure throws: it is a failure, not a skip.
    static func notPermittedReason() throws -> String? {
        if getuid() != 0 { return "not root (uid \(getuid())): booting systemd in a private namespace needs root" }
        let probe = try Command.run(script, ["probe"], timeout: 30)
        switch probe.status {
        case 0: return nil
        case 77: return probe.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        default: throw TestFailure("systemd-ns.sh probe failed: \(probe)")
        }
    }

    /// The namespace's PID 1, as a host PID.
    let pid: Int32
    /// The PID namespace's identity (`pid:[inode]`), to find anything left in it after the stop.
    let namespaceID: String
    let bootLog: String

    init(bootLog: String) throws {
        self.bootLog = bootLog
        let start = try Command.run(Self.script, ["start", bootLog], timeout: 60)
        guard start.status == 0, let pid = Int32(start.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("systemd did not boot in the namespace: \(start)")
        }
        self.pid = pid
        namespaceID = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/pid")) ?? ""
    }

    /// Runs a command inside (root, HOME=/root, XDG_RUNTIME_DIR=/run/user/0).
    @discardableResult
    func run(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try Command.run(Self.script, ["run", "\(pid)"] + arguments, timeout: timeout)
    }

    /// A shell script inside.
    @discardableResult
    func shell(_ script: String, timeout: Double = 60) throws -> CommandResult {
        try run(["/bin/sh", "-ec", script], timeout: timeout)
    }

    /// `systemctl --user ARGS...` inside.
    @discardableResult
    func user(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try Command.run(Self.script, ["user", "\(pid)"] + arguments, timeout: timeout)
    }

    /// `systemctl --user show UNIT -p ...` as a dictionary.
    func show(_ unit: String, _ properties: [String]) throws -> [String: String] {
        let result = try user(["show", unit] + properties.flatMap { ["-p", $0] })
        guard result.status == 0 else { throw TestFailure("systemctl --user show \(unit) failed: \(result)") }
        var values: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    private var stopped = false

    /// Whether host PID `pid` is still this namespace's PID 1 (and not a reused PID).
    var isRunning: Bool {
        !namespaceID.isEmpty
            && (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/pid")) == namespaceID
    }

    /// `systemctl poweroff` inside; PID 1 is killed when it is still there after 30 seconds, which
    /// ends every process in the namespace. Runs once.
    func stop() {
        guard !stopped else { return }
        stopped = true
        _ = try? Command.run(Self.script, ["stop", "\(pid)"], timeout: 60)
        if isRunning { kill(pid, SIGKILL) }
        _ = eventually(timeout: 10) { !isRunning && leftovers().isEmpty }
    }

    /// Host PIDs of processes still in the namespace (none once it is gone).
    func leftovers() -> [String] {
        guard !namespaceID.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return []
        }
        return entries.compactMap { entry -> String? in
            guard Int32(entry) != nil,
                let namespace = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/ns/pid"),
                namespace == namespaceID
            else { return nil }
            let command =
                (try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8))?
                .replacingOccurrences(of: "\0", with: " ") ?? ""
            return "\(entry) \(command)"
        }
    }
}

/// The `make install` substitutions: the units with @BINDIR@ and @DOCDIR@ filled in.
enum UnitFiles {
    static func substituted(_ name: String, bindir: String, docdir: String) throws -> String {
        let template = try String(
            contentsOf: TestPaths.repository.appendingPathComponent("systemd/\(name)"), encoding: .utf8)
        return template.replacingOccurrences(of: "@BINDIR@", with: bindir).replacingOccurrences(
            of: "@DOCDIR@", with: docdir)
    }
}
