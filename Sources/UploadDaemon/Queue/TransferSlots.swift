import UploadCore

/// How many uploads run at once.
///
/// `transfers` (2 unless the config sets it) bounds uploads of any size. While the config does not
/// set it, small files also run beside them, up to `widest` at once, as long as what those small
/// ones had left to send stays under `smallBytesTogether`: a folder of photos is bound by round
/// trips and per-file work, not by bandwidth. On the 2-core test machine, 2,000 files of 64 KiB
/// to nginx went at about 940 files/s with 2 at once and 1,400 with 8. A `transfers` the user sets
/// is the exact limit, so `transfers = 1` still means one at a time.
struct TransferSlots: Equatable {
    /// A file with at most this much left to send is small.
    static let smallFile: Int64 = 1 << 20
    /// What the small files running beside the others may have left to send, together.
    static let smallBytesTogether: Int64 = 4 << 20
    static let widest = 8

    var transfers: Int
    var smallFilesRunWider: Bool

    /// The most uploads that may ever run at once.
    var mostAtOnce: Int { smallFilesRunWider ? max(transfers, Self.widest) : transfers }

    /// Whether an upload with `bytesLeft` to send may start beside `running` (what each running
    /// one had left to send when it started).
    func mayStart(bytesLeft: Int64, running: some Collection<Int64>) -> Bool {
        if running.count < transfers { return true }
        guard smallFilesRunWider, bytesLeft <= Self.smallFile, running.count < mostAtOnce else { return false }
        let smallOnes = running.reduce(0) { $1 <= Self.smallFile ? $0 + $1 : $0 }
        return smallOnes + bytesLeft <= Self.smallBytesTogether
    }
}

extension DaemonConfig {
    var transferSlots: TransferSlots {
        TransferSlots(transfers: maxTransfers, smallFilesRunWider: smallFilesRunWider)
    }
}

extension Job {
    /// What is left to send.
    var bytesLeft: Int64 { max(bytesTotal - bytesAcked, 0) }
}
