import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// The watched folders paused with `uploadctl folders pause`, kept in the state directory so that
/// a paused folder stays paused across restarts until resumed. Not in the journal: it is a
/// setting, not the queue (as `BandwidthLimitFile`). One name a line.
struct PausedFoldersFile: Sendable {
    let path: String

    init(stateDirectory: String) { path = stateDirectory + "/paused-folders" }

    /// The names, or none when the file is missing or unreadable.
    func load() -> Set<String> {
        guard let bytes = try? FileOps.readFile(path, followSymlinks: false) else { return [] }
        return Set(String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init))
    }

    /// Saves `names`; a failure says that nothing changed.
    func keep(_ names: Set<String>) throws(RPCError) {
        do {
            if names.isEmpty {
                if unlink(path) != 0 && errno != ENOENT { throw SystemError("unlink", path: path) }
            } else {
                try FileOps.writeAtomically(Array(names.sorted().map { $0 + "\n" }.joined().utf8), to: path)
            }
        } catch {
            throw RPCError(
                code: RPCError.noSpaceCode,
                message: "cannot keep the paused folders in the state directory: \(error); nothing changed")
        }
    }
}
