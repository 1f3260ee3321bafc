import Dispatch
import Synchronization
import Testing

@testable import UploadDaemon

/// Copies checked at the same time take the room they need one at a time: together they never
/// take more than the free space less the reserve.
@Suite("SpaceClaims")
struct SpaceClaimsTests {
    private static let mebibyte: Int64 = 1 << 20

    /// A file system's free space, which a reservation (fallocate) takes from at once.
    final class FreeSpace: Sendable {
        let bytes: Mutex<Int64>
        init(_ bytes: Int64) { self.bytes = Mutex(bytes) }
        var free: Int64 { bytes.withLock { $0 } }
        func take(_ count: Int64) -> Bool {
            bytes.withLock { $0 -= count }
            return true
        }
    }

    @Test func copiesCheckedTogetherGetOnlyTheRoomThereIs() {
        // 200 MiB free, 64 MiB kept: three copies of 40 MiB, never four, whatever the timing.
        let disk = FreeSpace(200 * Self.mebibyte)
        let claims = SpaceClaims { disk.free }
        let taken = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: 5) { _ in
            let outcome = claims.claim(40 * Self.mebibyte, keeping: 64 * Self.mebibyte) {
                disk.take(40 * Self.mebibyte)
            }
            if outcome == .taken { taken.add(1, ordering: .relaxed) }
        }
        #expect(taken.load(ordering: .relaxed) == 3)
        #expect(disk.free == 80 * Self.mebibyte)
    }

    /// Where the file system cannot take room ahead, the bytes stay claimed until released, and
    /// the refusal says what was free for the copy.
    @Test func roomNotTakenAheadStaysClaimedUntilReleased() {
        let disk = FreeSpace(100)
        let claims = SpaceClaims { disk.free }
        #expect(claims.claim(30, keeping: 20) { false } == .claimed)
        #expect(claims.claim(30, keeping: 20) { false } == .claimed)
        var ran = false
        #expect(
            claims.claim(30, keeping: 20) {
                ran = true; return false
            } == .noRoom(free: 40))
        #expect(!ran, "a copy that does not fit takes nothing")
        // The first copy is written: the free space counts it, its claim goes.
        _ = disk.take(30)
        claims.release(30)
        #expect(claims.claim(30, keeping: 20) { false } == .noRoom(free: 40))
        claims.release(30)
        #expect(claims.claim(30, keeping: 20) { disk.take(30) } == .taken)
    }

    @Test func aFailureToTakeTheRoomClaimsNothing() {
        struct Full: Error {}
        let claims = SpaceClaims { 100 }
        #expect(throws: Full.self) { try claims.claim(10, keeping: 0) { () throws(Full) -> Bool in throw Full() } }
        #expect(claims.claim(90, keeping: 10) { false } == .claimed, "the failed one left all 100 free")
    }

    @Test func anUnknownFreeSpaceLetsEveryCopyTry() {
        let claims = SpaceClaims { nil }
        #expect(claims.claim(1 << 40, keeping: 0) { true } == .taken)
    }
}
