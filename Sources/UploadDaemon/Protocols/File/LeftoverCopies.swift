import Foundation
import Glibc
import Synchronization
import UploadCore
import UploadPlatform
import UploadWire

/// The temporary files of copies a crash (or a kill) interrupted: each attempt writes under a new
/// random name and removes it when it fails, but a daemon that dies leaves it in the user's folder.
/// The first copy into a folder after the daemon starts removes those it finds there: ours by name
/// and owner, and last written before this daemon started (another uploadd of the user may be
/// writing one into the same folder right now).
enum LeftoverCopies {
    private static let prefix = ".uploadd-"
    private static let suffix = ".part"
    private static let swept = Mutex<Set<String>>([])
    /// When this daemon started (a global, set at its first use: `noteDaemonStart`).
    private static let started = time(nil)

    /// Sets `started` now. Left to the first copy, the time was that copy's, and a file another
    /// daemon wrote between this one's start and its first copy into the folder went as a leftover.
    static func noteDaemonStart() { _ = started }

    /// `.uploadd-7-0123456789abcdef.part`.
    static func temporaryName(for job: JobID) -> String {
        "\(prefix)\(job)-\(UInt64.random(in: .min ... .max).hexadecimal)\(suffix)"
    }

    static func isTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return false }
        let parts = name.dropFirst(prefix.count).dropLast(suffix.count).split(
            separator: "-", omittingEmptySubsequences: false)
        return parts.count == 2 && JobID(String(parts[0])) != nil && parts[1].count == 16
            && parts[1].allSatisfy(\.isHexDigit)
    }

    /// Removes the leftovers in `directory`, once per folder while the daemon runs.
    static func sweepOnce(_ directory: OpenDirectory) {
        guard swept.withLock({ $0.insert(directory.path).inserted }) else { return }
        let listing = fcntl(directory.fd, F_DUPFD_CLOEXEC, 0)
        guard listing >= 0, let stream = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            return
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = FolderNames.name(of: entry)
            guard isTemporaryName(name), let info = try? directory.entryStatus(name),
                info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid(), info.st_mtim.tv_sec < started
            else { continue }
            if unlinkat(directory.fd, name, 0) == 0 {
                Log.notice("removed \(directory.path)/\(name), left by a copy uploadd did not finish")
            }
        }
    }
}
