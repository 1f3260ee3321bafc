import Synchronization

/// Room in the snapshot folder for the copies being made: the check that a copy fits and the
/// taking of its room are one step.
///
/// An add's copies are made several at once, and each used to check the free space before any had
/// taken its room: five 40 MiB files added together once got four copies where three fit (two saw
/// the same free space), and the cache was left with less than `SnapshotCache.copyReserve`. Here
/// the check and the taking (`fallocate`, after which the free space itself counts the copy) run
/// under one lock. Where the file system cannot take blocks ahead (NFS, FUSE), the copy's bytes
/// stay claimed until it is written.
final class SpaceClaims: Sendable {
    enum Outcome: Equatable {
        /// The free space counts the copy's room now: nothing to release.
        case taken
        /// The room is promised, not taken: call `release` once the copy is written (or dropped).
        case claimed
        /// Not enough room beside the reserve and the other claims: what was free for this one.
        case noRoom(free: Int64)
    }

    private let claimed = Mutex<Int64>(0)
    private let freeBytes: @Sendable () -> Int64?

    /// `freeBytes`: the free space of the file system that holds the copies (nil: unknown, and
    /// then every copy is let try).
    init(freeBytes: @escaping @Sendable () -> Int64?) {
        self.freeBytes = freeBytes
    }

    /// When the free space, less the other claims, holds `bytes` and `reserve` more, runs `take`,
    /// which takes the room where it can and says whether it did.
    func claim<Failure: Error>(
        _ bytes: Int64, keeping reserve: Int64, take: () throws(Failure) -> Bool
    ) throws(Failure) -> Outcome {
        try claimed.withLock { (claimed: inout Int64) throws(Failure) -> Outcome in
            if let free = freeBytes() {
                let available = free - claimed
                guard available >= bytes + reserve else { return .noRoom(free: max(available, 0)) }
            }
            if try take() { return .taken }
            claimed += bytes
            return .claimed
        }
    }

    func release(_ bytes: Int64) {
        claimed.withLock { $0 -= bytes }
    }
}
