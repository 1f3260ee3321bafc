import CShims
import Foundation
import Glibc
import Synchronization

/// Whether the kernel could reach a destination now, asked without sending a packet: the route it
/// would take (rtnetlink RTM_GETROUTE) and whether that route's interface is up and has a carrier.
///
/// A route alone is not enough: with `lo` down the kernel keeps its local routes, and a connect
/// to 127.0.0.1 hangs until its timeout. Answers are remembered per host until the network changes
/// (`NetworkMonitor` calls `networkChanged`), so a queue of small files to one server costs one
/// look-up, not one per file.
final class Reachability: Sendable {
    enum Answer: Sendable, Equatable {
        case reachable
        /// No way out: the reason, for the job's history and `list`.
        case unreachable(String)
        /// The name does not resolve although the network is up: a real failure, not an outage.
        case unknown
    }

    /// A host's answer, and when it was looked up.
    private struct LookUp {
        var answer: Answer
        var at: ContinuousClock.Instant

        /// The answer, unless a `fresh` one is wanted and this is older than `recheckInterval`.
        func answer(fresh: Bool, now: ContinuousClock.Instant) -> Answer? {
            !fresh || now - at < Reachability.recheckInterval ? answer : nil
        }
    }

    private struct Cache {
        var answers: [String: LookUp] = [:]
        /// The host of each URL's text up to its path (`https://user@host:port`): `known` finds
        /// an answer without parsing the URL.
        var hosts: [Substring: String] = [:]
        var lookUps = 0
    }

    /// A look-up this recent stands for a fresh one: when a dead server fails a thousand jobs in
    /// a second, one look-up answers for all of them. A link that goes down is heard of sooner,
    /// through `networkChanged`.
    static let recheckInterval = Duration.milliseconds(250)

    private let cache = Mutex(Cache())

    /// Forgets every answer: routes, addresses or links changed.
    func networkChanged() {
        cache.withLock {
            $0.answers.removeAll()
            $0.hosts.removeAll()
        }
    }

    /// The answer for an http(s) URL's host when it is known (and, `fresh`, younger than
    /// `recheckInterval`), without blocking: each small file of a queue asks, and a hop to the
    /// blocking queue cost more than the answer.
    func known(url: String, fresh: Bool = false) -> Answer? {
        guard let origin = Self.origin(of: url) else { return nil }
        let now = ContinuousClock.now
        return cache.withLock { cache in
            cache.hosts[origin].flatMap { cache.answers[$0]?.answer(fresh: fresh, now: now) }
        }
    }

    /// The answer for an http(s) URL's host. `fresh` (an attempt to it just failed): looked up
    /// again unless a look-up of it is younger than `recheckInterval`; the other hosts' answers
    /// stay. Blocking (a name look-up): call it off the cooperative pool.
    func check(url: String, fresh: Bool = false) -> Answer {
        guard let host = URLComponents(string: url)?.host, !host.isEmpty else { return .unknown }
        let origin = Self.origin(of: url)
        let now = ContinuousClock.now
        let known = cache.withLock { cache -> Answer? in
            if let origin { cache.hosts[origin] = host }
            return cache.answers[host]?.answer(fresh: fresh, now: now)
        }
        if let known { return known }
        let answer = Self.lookUp(host)
        cache.withLock {
            $0.answers[host] = LookUp(answer: answer, at: now)
            $0.lookUps += 1
        }
        return answer
    }

    /// How many times a host was looked up (for tests).
    var lookUpsMade: Int { cache.withLock { $0.lookUps } }

    /// `scheme://authority` of a URL, nil when its scheme is not followed by `://`.
    static func origin(of url: String) -> Substring? {
        // On the UTF-8 bytes: Foundation's range(of:) went through CFString for every attempt.
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return nil
        }
        let rest = bytes[bytes.index(colon, offsetBy: 3)...]
        let end =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        return url[..<end]
    }

    private static func lookUp(_ host: String) -> Answer {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else {
            // No answer for the name: without any default route that is the outage itself.
            return hasDefaultRoute ? .unknown : .unreachable("no network (no route, and \(name) does not resolve)")
        }
        defer { freeaddrinfo(list) }
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr, isUp(address) { return .reachable }
            node = current.pointee.ai_next
        }
        return .unreachable("no network route to \(name) is up")
    }

    /// A default route whose interface is up, for IPv4 or IPv6 (asked for documentation addresses,
    /// which only a default route covers).
    private static var hasDefaultRoute: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        inet_pton(AF_INET, "192.0.2.1", &v4)
        inet_pton(AF_INET6, "2001:db8::1", &v6)
        return routeIsUp(AF_INET, &v4) || routeIsUp(AF_INET6, &v6)
    }

    private static func isUp(_ address: UnsafePointer<sockaddr>) -> Bool {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var ip = pointer.pointee.sin_addr
                return routeIsUp(AF_INET, &ip)
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var ip = pointer.pointee.sin6_addr
                return routeIsUp(AF_INET6, &ip)
            }
        default:
            return false
        }
    }

    /// False only when the kernel says there is no way out: no route, or its link down. When it
    /// cannot be asked (a sandbox without AF_NETLINK), the route counts as up: better a real
    /// attempt than a job that waits for a network it cannot see.
    private static func routeIsUp(_ family: Int32, _ address: UnsafeRawPointer) -> Bool {
        var interface: Int32 = 0
        let result = CShims_route_interface(family, address, &interface)
        if result == -ENETUNREACH || result == -EHOSTUNREACH { return false }
        guard result == 0 else { return true }
        return CShims_interface_is_up(interface) != 0
    }
}
