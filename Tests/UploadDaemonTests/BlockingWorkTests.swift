import Foundation
import Synchronization
import Testing

@testable import UploadDaemon
@testable import UploadPlatform

/// What the add path does off the cooperative pool, in few hops: `Blocking.inChunks`,
/// and the reachability answers a job finds without one (`Reachability.known`).
@Suite("Blocking work in chunks, known reachability")
struct BlockingWorkTests {
    struct Odd: Error, Equatable { let value: Int }

    @Test(arguments: [0, 1, 5, 16, 17, 500])
    func everyItemIsWorkedOnceAndItsResultKeepsItsPlace(count: Int) async {
        let seen = Mutex<[Int]>([])
        let results = await Blocking.inChunks(Array(0..<count)) { item in
            seen.withLock { $0.append(item) }
            if item % 2 == 1 { throw Odd(value: item) }
            return item * 10
        }
        #expect(results.count == count)
        #expect(seen.withLock { $0 }.sorted() == Array(0..<count))
        for (item, result) in results.enumerated() {
            switch result {
            case .success(let value): #expect(item % 2 == 0 && value == item * 10)
            case .failure(let error): #expect(error as? Odd == Odd(value: item))
            }
        }
    }

    @Test func aSlowItemHoldsUpOnlyItsShare() async {
        // 32 items in 16 shares of 2: the first share waits; the others all finish meanwhile.
        let finished = Mutex(0)
        let gate = DispatchSemaphore(value: 0)
        async let results = Blocking.inChunks(Array(0..<32)) { item in
            if item == 0 { gate.wait() }
            finished.withLock { $0 += 1 }
            return item
        }
        var waited = 0
        while finished.withLock({ $0 }) < 30 && waited < 500 {
            try? await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(finished.withLock { $0 } == 30, "every share but the slow one is done")
        gate.signal()
        #expect(await results.map { try? $0.get() } == Array(0..<32))
    }

    @Test func theOriginOfAURLIsItsTextUpToThePath() {
        #expect(Reachability.origin(of: "https://user@example.org:8443/a/b?c#d") == "https://user@example.org:8443")
        #expect(Reachability.origin(of: "http://127.0.0.1:9/") == "http://127.0.0.1:9")
        #expect(Reachability.origin(of: "http://[::1]:9?x") == "http://[::1]:9")
        #expect(Reachability.origin(of: "http://host") == "http://host")
        #expect(Reachability.origin(of: "not a url") == nil)
    }

    @Test func anAnswerIsKnownWithoutALookUpOnceCheckedAndForgottenWhenTheNetworkChanges() {
        let reachability = Reachability()
        #expect(reachability.known(url: "http://127.0.0.1:1/a") == nil)
        #expect(reachability.check(url: "http://127.0.0.1:1/a") == .reachable)
        #expect(reachability.known(url: "http://127.0.0.1:1/other/file") == .reachable)
        #expect(reachability.known(url: "http://127.0.0.1:2/a") == nil, "another origin")
        reachability.networkChanged()
        #expect(reachability.known(url: "http://127.0.0.1:1/a") == nil)
    }

    /// After a failed attempt the host is looked up again, but a thousand jobs failing together
    /// share one look-up, and the other hosts keep their answers.
    @Test func aFreshCheckLooksUpOneHostAtMostOncePerInterval() async throws {
        let reachability = Reachability()
        #expect(reachability.check(url: "http://127.0.0.1:1/a") == .reachable)
        #expect(reachability.check(url: "http://127.0.0.2:1/a") == .reachable)
        #expect(reachability.lookUpsMade == 2)
        try await Task.sleep(for: Reachability.recheckInterval + .milliseconds(50))
        for _ in 0..<100 { #expect(reachability.check(url: "http://127.0.0.1:1/b", fresh: true) == .reachable) }
        #expect(reachability.lookUpsMade == 3)
        #expect(reachability.known(url: "http://127.0.0.2:1/x") == .reachable, "another host's answer stays")
        #expect(reachability.known(url: "http://127.0.0.1:1/x", fresh: true) == .reachable)
        try await Task.sleep(for: Reachability.recheckInterval + .milliseconds(50))
        #expect(reachability.known(url: "http://127.0.0.1:1/x") == .reachable)
        #expect(reachability.known(url: "http://127.0.0.1:1/x", fresh: true) == nil, "too old for a fresh answer")
        #expect(reachability.check(url: "http://127.0.0.1:1/b", fresh: true) == .reachable)
        #expect(reachability.lookUpsMade == 4)
    }
}
