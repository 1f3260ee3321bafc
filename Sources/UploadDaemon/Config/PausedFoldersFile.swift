import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// The watched folders paused with `uploadctl folders pause`, each with the jobs its pause paused,
/// kept in the state directory so that a paused folder stays paused across restarts until
/// resumed, and its resume resumes those jobs only (not one the user paused by itself). Not in
/// the journal: it is a setting, not the queue (as `BandwidthLimitFile`). JSON: an object of
/// folder names, each with an array of job IDs.
struct PausedFoldersFile: Sendable {
    let path: String

    init(stateDirectory: String) { path = stateDirectory + "/paused-folders" }

    /// The paused folders, or none when the file is missing or unreadable.
    func load() -> [String: Set<JobID>] {
        guard let bytes = try? FileOps.readFile(path, followSymlinks: false),
            case .object(let folders)? = try? JSONValue(parsing: bytes)
        else { return [:] }
        var paused: [String: Set<JobID>] = [:]
        for (name, jobs) in folders {
            guard case .array(let ids) = jobs else { continue }
            paused[name] = Set(
                ids.compactMap { id in
                    guard case .number(let number) = id, number >= 1, number < 9e15, number == number.rounded() else {
                        return nil
                    }
                    return JobID(UInt64(number))
                })
        }
        return paused
    }

    /// Saves `paused`; a failure says that nothing changed.
    func keep(_ paused: [String: Set<JobID>]) throws(RPCError) {
        do {
            if paused.isEmpty {
                if unlink(path) != 0 && errno != ENOENT { throw SystemError("unlink", path: path) }
            } else {
                let object = JSONValue.object(
                    paused.mapValues { ids in .array(ids.sorted().map { .number(Double($0.rawValue)) }) })
                try FileOps.writeAtomically(try object.jsonBytes() + [10], to: path)
            }
        } catch {
            throw RPCError(
                code: RPCError.noSpaceCode,
                message: "cannot keep the paused folders in the state directory: \(error); nothing changed")
        }
    }
}
