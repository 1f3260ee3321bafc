import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// The bandwidth limit set with `uploadctl limit`, kept in the state directory so that it holds
/// across restarts until changed. Not in the journal: it is a setting, not the queue.
struct BandwidthLimitFile: Sendable {
    let path: String

    init(stateDirectory: String) { path = stateDirectory + "/bandwidth-limit" }

    /// Bytes per second, or nil when none is set (or the file does not say a number).
    func load() -> Int64? {
        guard let bytes = try? FileOps.readFile(path, followSymlinks: false),
            let rate = Int64(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            rate > 0
        else { return nil }
        return rate
    }

    func save(_ rate: Int64?) throws {
        guard let rate else {
            if unlink(path) != 0 && errno != ENOENT { throw SystemError("unlink", path: path) }
            return
        }
        try FileOps.writeAtomically(Array("\(rate)\n".utf8), to: path)
    }

    /// `save`, for `uploadctl limit`: a failure says that nothing changed.
    func keep(_ rate: Int64?) throws(RPCError) {
        do {
            try save(rate)
        } catch {
            throw RPCError(
                code: RPCError.noSpaceCode,
                message: "cannot keep the bandwidth limit in the state directory: \(error); nothing changed")
        }
    }
}
