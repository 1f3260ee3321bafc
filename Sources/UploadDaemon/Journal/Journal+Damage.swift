import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// Damage found at replay: its bytes set aside, and what it was, for `uploadctl status` and the log.
extension Journal {
    /// Copies the damaged regions of the journal at `path` into a new `journal.damaged-TIMESTAMP`
    /// beside it, each after a line naming its offset, length and reason, before the journal is
    /// rewritten or cut without them. Returns the copy's path. No damaged byte is ever dropped
    /// without its copy on disk: when the copy cannot be written, the daemon does not start.
    static func setAside(_ regions: [JournalDamage], of bytes: [UInt8], journal path: String) throws -> String {
        let copy = freshName(path + ".damaged-\(Int(Date().timeIntervalSince1970))")
        var contents: [UInt8] = []
        for region in regions {
            contents += Array(
                "uploadd journal: \(region.length) damaged bytes from byte \(region.offset) of \(path): \(region.reason)\n"
                    .utf8)
            contents += bytes[region.range]
        }
        do {
            try FileOps.writeAtomically(contents, to: copy)
        } catch {
            throw JournalOpenError(
                message:
                    "\(path) is damaged, and its damaged bytes cannot be set aside in \(copy): \(error); free some space there and start again (the journal is left as it was)"
            )
        }
        return copy
    }

    /// `path`, or with a number after it when that is taken (two damaged starts in one second).
    private static func freshName(_ path: String) -> String {
        var candidate = path
        var number = 1
        while access(candidate, F_OK) == 0 {
            number += 1
            candidate = "\(path)-\(number)"
        }
        return candidate
    }

    /// What was damaged, what replay kept, where the damaged bytes went and which jobs were paused
    /// or lost, in a few sentences.
    static func describe(_ recovery: JournalRecovery, recordCount: Int, fileSize: Int, copy: String) -> String {
        let regions = recovery.regions
        let shown = regions.prefix(4).map { "at byte \($0.offset) (\(detail($0)))" }
        let more = regions.count - shown.count
        var places = shown.count == 1 ? shown[0] : shown.dropLast().joined(separator: ", ")
        if shown.count > 1 { places += more > 0 ? ", \(shown.last!) and \(more) more places" : " and \(shown.last!)" }
        let damagedBytes = regions.reduce(0) { $0 + $1.length }
        let kept =
            recovery.recordsAfterDamage == 0
            ? "kept \(recordCount) records before it"
            : "kept \(recordCount) records, \(recovery.recordsAfterDamage) of them after the damage"
        var text =
            "journal damaged \(places), in a file of \(fileSize) bytes; \(kept); moved the \(damagedBytes) damaged bytes to \(copy) (each part after a line naming its offset and length)"
        if !recovery.paused.isEmpty {
            let one = recovery.paused.count == 1
            text +=
                "; paused \(jobs(recovery.paused)), which the damage may have changed (a lost completion or removal must not make \(one ? "it" : "them") upload again): check \(one ? "it (uploadctl show \(recovery.paused[0]))" : "each (uploadctl show ID)"), then resume or remove it"
        }
        if !recovery.lost.isEmpty {
            text +=
                recovery.lost.count == 1
                ? "; \(jobs(recovery.lost)) is gone (its only record was damaged): add its file again if it still needs uploading"
                : "; \(jobs(recovery.lost)) are gone (their only records were damaged): add their files again if they still need uploading"
        }
        return text
    }

    /// A region's length, why it is damaged and whose record it held.
    private static func detail(_ region: JournalDamage) -> String {
        let whose: String
        switch region.record {
        case _ where region.isTornTail: whose = ""
        case .job(let id, certain: true): whose = "; job \(id)'s record"
        case .job(let id, certain: false): whose = "; probably job \(id)'s record"
        case .noJob: whose = "; the record of the next job ID"
        case .unknown: whose = "; whose records they held cannot be told"
        }
        return "\(region.length) bytes: \(region.reason)\(whose)"
    }

    /// "job 3", "jobs 3, 5 and 8", "jobs 3, 5, ... and 40 more".
    private static func jobs(_ ids: [JobID]) -> String {
        guard ids.count > 1 else { return "job \(ids[0])" }
        let shown = ids.prefix(10).map(\.description)
        let more = ids.count - shown.count
        return more > 0
            ? "jobs \(shown.joined(separator: ", ")) and \(more) more"
            : "jobs \(shown.dropLast().joined(separator: ", ")) and \(shown.last!)"
    }
}
