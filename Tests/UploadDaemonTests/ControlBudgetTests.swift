import Foundation
import Glibc
import Testing
import UploadCore
import UploadWire

@testable import UploadDaemon

/// The rules of what all control clients may cost together.
@Suite("ControlBudget: rules")
struct ControlBudgetRuleTests {
    @Test func halfTheDescriptorsGoToClientsWithinBounds() {
        #expect(ControlBudget(descriptorLimit: 1024).maxClients == 512)
        #expect(ControlBudget(descriptorLimit: 1 << 20).maxClients == 4096)
        #expect(ControlBudget(descriptorLimit: 10).maxClients == 16)
    }

    @Test func oneRequestAlwaysFitsAndTheRestWithinCountAndBytes() {
        let budget = ControlBudget(descriptorLimit: 1024, maxRequests: 3, maxRequestBytes: 100)
        #expect(budget.hasRoom(forRequestOf: 1_000), "a line over the byte budget still runs alone")
        budget.requestStarted(bytes: 60)
        #expect(budget.hasRoom(forRequestOf: 40))
        #expect(!budget.hasRoom(forRequestOf: 41))
        budget.requestStarted(bytes: 10)
        budget.requestStarted(bytes: 10)
        #expect(!budget.hasRoom(forRequestOf: 1), "three requests are the most")
        budget.requestEnded(bytes: 60)
        #expect(budget.hasRoom(forRequestOf: 80))
        #expect(budget.requests == 2 && budget.requestBytes == 20)
    }

    @Test func waitingClientsAreLetOnOldestFirstWhileThereIsRoom() {
        let budget = ControlBudget(descriptorLimit: 1024, maxRequests: 2)
        budget.requestStarted(bytes: 1)
        budget.requestStarted(bytes: 1)
        var order: [String] = []
        for name in ["a", "b", "c"] {
            budget.waitForRoom {
                order.append(name)
                budget.requestStarted(bytes: 1)  // each takes the room it was given
            }
        }
        budget.requestEnded(bytes: 1)
        #expect(order == ["a"], "one request ended: room for one")
        budget.requestEnded(bytes: 1)
        budget.requestEnded(bytes: 1)
        #expect(order == ["a", "b", "c"])
        #expect(budget.requests == 2)
    }

    /// A client let on whose line still does not fit waits again, behind the others: the budget
    /// does not call it again within the same ending (which would never end).
    @Test func aClientThatStillDoesNotFitWaitsAgainWithoutSpinning() {
        let budget = ControlBudget(descriptorLimit: 1024, maxRequests: 8, maxRequestBytes: 100)
        budget.requestStarted(bytes: 90)
        budget.requestStarted(bytes: 5)
        var calls = 0
        func waitForBigLine() {
            budget.waitForRoom {
                calls += 1
                if budget.hasRoom(forRequestOf: 50) { budget.requestStarted(bytes: 50) } else { waitForBigLine() }
            }
        }
        waitForBigLine()
        budget.requestEnded(bytes: 5)
        #expect(calls == 1, "called once, and waiting again")
        budget.requestEnded(bytes: 90)
        #expect(calls == 2)
        #expect(budget.requests == 1 && budget.requestBytes == 50)
    }

    @Test func heldBytesPastTheBudgetAreReportedEachTimeTheyGrow() {
        let budget = ControlBudget(descriptorLimit: 1024, maxHeldBytes: 100)
        var reports = 0
        budget.onOverspent = { reports += 1 }
        budget.heldChanged(by: 100)
        #expect(reports == 0 && !budget.isOverspent)
        budget.heldChanged(by: 1)
        #expect(reports == 1 && budget.isOverspent)
        budget.heldChanged(by: -1)
        #expect(reports == 1 && !budget.isOverspent, "shrinking reports nothing")
        budget.heldChanged(by: 5)
        #expect(reports == 2)
    }
}

/// The budget on a real control socket: clients over it are refused, wait, or are disconnected.
@Suite("ControlBudget: on the socket")
struct ControlBudgetServerTests {
    typealias Sockets = ControlServerTests

    private static func answerLine(_ fd: Int32) -> [String: Any]? {
        guard let line = Sockets.readLine(from: fd) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// A client whose reads wait up to 60 s: the other suites of this process run beside these
    /// tests and may hold the threads that answer for seconds.
    private static func connect(to path: String) throws -> Int32 {
        let fd = try Sockets.connect(to: path)
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Serves a control socket with `budget` (and the handler as `adjust` leaves it), runs `body`
    /// with the socket's path on a thread of its own, and stops the server.
    private static func serving<Result: Sendable>(
        _ budget: ControlBudget, adjust: (inout ControlHandler) -> Void = { _ in },
        _ body: @escaping @Sendable (String) throws -> Result
    ) async throws -> Result {
        let harness = try await SchedulerHarness(start: false)
        let path = harness.directory.path + "/run/control.sock"
        var handler = ControlHandlerTests.handler(harness)
        adjust(&handler)
        let server = ControlServer(listenFD: try ControlSocket.listen(at: path), handler: handler, budget: budget)
        server.start()
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await Sockets.offThePool { try body(path) })
        } catch {
            result = .failure(error)
        }
        server.stop()
        await harness.stop()
        return try result.get()
    }

    /// Whether the daemon closed `fd` (nothing is left to read on it), without waiting.
    private static func isClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test func aClientOverTheLimitIsToldSoAndTheNextIsServedOnceOneLeaves() async throws {
        let budget = ControlBudget(descriptorLimit: 32)
        let seen = try await Self.serving(budget) { path throws -> (served: Int, refusal: String, later: String) in
            var clients: [Int32] = []
            var served = 0
            for index in 0..<16 {
                let fd = try Self.connect(to: path)
                clients.append(fd)
                Sockets.send(#"{"jsonrpc":"2.0","id":\#(index),"method":"daemon.hello"}"#, to: fd)
                if Sockets.readLine(from: fd)?.contains(#""id":\#(index)"#) == true { served += 1 }
            }
            let extra = try Self.connect(to: path)
            let refusal = Sockets.readLine(from: extra) ?? ""
            let extraClosed = Sockets.eventually { Self.isClosed(extra) }
            close(extra)
            close(clients.removeFirst())
            // The daemon sees the hang-up in a moment; until then the next may be refused too.
            var later = ""
            _ = Sockets.eventually {
                guard let fd = try? Self.connect(to: path) else { return false }
                defer { close(fd) }
                Sockets.send(#"{"jsonrpc":"2.0","id":"later","method":"daemon.hello"}"#, to: fd)
                later = Sockets.readLine(from: fd) ?? ""
                return later.contains(#""id":"later""#)
            }
            for fd in clients { close(fd) }
            return (served, refusal + (extraClosed ? " (closed)" : " (left open)"), later)
        }
        #expect(budget.maxClients == 16)
        #expect(seen.served == 16, "16 clients are served at once")
        #expect(seen.refusal.contains("\(RPCError.busyCode)"), "\(seen.refusal)")
        #expect(seen.refusal.contains("(16)") && seen.refusal.contains("try again"), "says why: \(seen.refusal)")
        #expect(seen.refusal.hasSuffix("(closed)"), "the 17th is closed: \(seen.refusal)")
        #expect(seen.later.contains("\"result\""), "one left: the next is served: \(seen.later)")
    }

    @Test func requestsOverTheBudgetWaitTheirTurnAndAreThenAnswered() async throws {
        let reload = ControlServerTests.HeldReload()
        let seen = try await Self.serving(
            ControlBudget(descriptorLimit: 1024, maxRequests: 2), adjust: { $0.reload = { await reload.run() } }
        ) {
            path throws -> (early: String, late: String, reloads: [String]) in
            let holder = try Self.connect(to: path)
            let other = try Self.connect(to: path)
            defer {
                close(holder)
                close(other)
            }
            Sockets.send(#"{"jsonrpc":"2.0","id":"r1","method":"daemon.reload"}"#, to: holder)
            Sockets.send(#"{"jsonrpc":"2.0","id":"r2","method":"daemon.reload"}"#, to: holder)
            _ = Sockets.eventually { reload.started.load(ordering: .sequentiallyConsistent) }
            usleep(100_000)
            Sockets.send(#"{"jsonrpc":"2.0","id":"waits","method":"daemon.hello"}"#, to: other)
            usleep(300_000)
            let early = Sockets.pending(on: other)
            reload.released.store(true, ordering: .sequentiallyConsistent)
            let late = Sockets.readLine(from: other) ?? ""
            let reloads = [Sockets.readLine(from: holder) ?? "", Sockets.readLine(from: holder) ?? ""]
            return (early, late, reloads)
        }
        #expect(seen.early.isEmpty, "two requests held the whole budget, yet another was answered: \(seen.early)")
        #expect(seen.late.contains(#""id":"waits""#) && seen.late.contains("\"result\""), "\(seen.late)")
        #expect(seen.reloads.allSatisfy { $0.contains("\"result\"") }, "\(seen.reloads)")
    }

    /// One answer bigger than the whole budget (`job.list` of a million jobs is ~140 MB, over the
    /// daemon's 128 MiB) is what its request costs, not a backlog: it arrives whole. The full
    /// benchmark's queue of a million jobs found the budget cutting it off.
    @Test func anAnswerBiggerThanTheHeldBudgetArrivesWhole() async throws {
        let count = 2_000
        let answer = try await Self.serving(ControlBudget(descriptorLimit: 1024, maxHeldBytes: 256 << 10)) {
            path throws -> String in
            let fd = try Self.connect(to: path)
            defer { close(fd) }
            let batch = (0..<count).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"daemon.hello"}"# }
            Sockets.send("[" + batch.joined(separator: ",") + "]", to: fd)
            usleep(300_000)  // unread meanwhile: the whole answer waits in the daemon
            return Sockets.readLine(from: fd) ?? ""
        }
        #expect(answer.utf8.count > 256 << 10, "the test needs an answer over the budget: \(answer.utf8.count) bytes")
        let replies = (try? JSONSerialization.jsonObject(with: Data(answer.utf8))) as? [[String: Any]]
        #expect(replies?.count == count, "the whole answer arrived")
    }

    @Test func pastTheHeldBudgetTheClientHoldingTheMostIsDisconnected() async throws {
        let seen = try await Self.serving(ControlBudget(descriptorLimit: 1024, maxHeldBytes: 1 << 20)) {
            path throws -> (greedyClosed: Bool, other: String) in
            let greedy = try Self.connect(to: path)
            let modest = try Self.connect(to: path)
            defer {
                close(greedy)
                close(modest)
            }
            // Lines begun and never ended: 700 KiB and 400 KiB, 1.1 MiB together.
            let spaces = { (count: Int) in [UInt8](repeating: UInt8(ascii: " "), count: count) }
            _ = spaces(700 << 10).withUnsafeBytes { Glibc.send(greedy, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            usleep(200_000)
            _ = spaces(400 << 10).withUnsafeBytes { Glibc.send(modest, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let greedyClosed = Sockets.eventually { Self.isClosed(greedy) }
            Sockets.send("", to: modest)  // ends the blank line
            Sockets.send(#"{"jsonrpc":"2.0","id":"still","method":"daemon.hello"}"#, to: modest)
            return (greedyClosed, Sockets.readLine(from: modest) ?? "")
        }
        #expect(seen.greedyClosed, "the client holding 700 KiB is disconnected")
        #expect(seen.other.contains(#""id":"still""#) && seen.other.contains("\"result\""), "\(seen.other)")
    }
}
