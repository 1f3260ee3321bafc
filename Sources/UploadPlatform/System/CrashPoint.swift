import Glibc

/// Named moments at which the daemon kills itself when `UPLOADD_TEST_CRASH_AT` names them: the
/// power-loss test cuts the power at moments no outside SIGKILL can hit, such as between a
/// journal rewrite's rename and the next sync (as SQLite's and FoundationDB's crash tests do).
/// Unset, it costs one comparison.
package enum CrashPoint: String {
    /// A compaction's new journal has been renamed into place and its directory synced.
    case journalCompacted = "journal-compacted"
    /// A journal of an older format has been rewritten in the current one and renamed into place.
    case journalRewritten = "journal-rewritten"
    /// A job's end is journaled (durably) with its hook due, and the hook is about to start.
    case hookDue = "hook-due"
    /// A watched folder's job's end is journaled (durably), and its `after` action is about to run.
    case folderActionDue = "folder-action-due"
    /// A watched folder's `after` action was done, and its ledger entry is not written yet.
    case folderActionDone = "folder-action-done"

    private static let armed: CrashPoint? = Glibc.getenv("UPLOADD_TEST_CRASH_AT").flatMap {
        CrashPoint(rawValue: String(cString: $0))
    }

    /// SIGKILL, now, when this is the armed point.
    package func reached() {
        guard Self.armed == self else { return }
        Glibc.kill(Glibc.getpid(), SIGKILL)
    }
}
