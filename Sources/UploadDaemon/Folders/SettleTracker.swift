/// When the files of watched folders are to be looked at again: a value with no clock and no
/// files, driven by what the watcher saw (times in monotonic nanoseconds) and asked what is due.
///
/// A file is armed by each close after writing and each move into a folder: a file written in
/// several opens, or saved by write-then-rename, is looked at once, `settle` after its last event.
/// What is due is then checked against the file itself (`FileQuietness`): one still changing is
/// armed again, for the rest of its quiet time.
struct SettleTracker {
    /// A file: its folder's name and its path inside the folder.
    struct Key: Hashable, Comparable {
        var folder: String
        var path: String

        static func < (a: Key, b: Key) -> Bool { (a.folder, a.path) < (b.folder, b.path) }
    }

    private var deadlines: [Key: Int64] = [:]

    var isEmpty: Bool { deadlines.isEmpty }
    var count: Int { deadlines.count }

    /// `key` is looked at `after` nanoseconds from `now`, whatever was planned for it before.
    mutating func arm(_ key: Key, at now: Int64, after delay: Int64) {
        deadlines[key] = now + max(delay, 0)
    }

    /// The file left (moved out, deleted): nothing is due for it.
    mutating func forget(_ key: Key) { deadlines[key] = nil }

    /// Every file of `folder`, or of its subfolder `prefix` (a folder moved out or removed).
    mutating func forget(folder: String, under prefix: String? = nil) {
        deadlines = deadlines.filter { key, _ in
            key.folder != folder || (prefix.map { !(key.path == $0 || key.path.hasPrefix($0 + "/")) } ?? false)
        }
    }

    /// The files due at `now`, in folder and path order; they are no longer armed.
    mutating func takeDue(at now: Int64) -> [Key] {
        let due = deadlines.filter { $0.value <= now }.keys.sorted()
        for key in due { deadlines[key] = nil }
        return due
    }

    /// When the next file is due; nil when none is armed.
    var nextDeadline: Int64? { deadlines.values.min() }
}

/// Whether a file has been quiet for its folder's settle time, by what the kernel says of it:
/// its last change of contents (mtime) or of name and modes (ctime, which a rename sets).
enum FileQuietness: Equatable {
    case quiet
    /// Not yet: looked at again after this many nanoseconds.
    case changing(waitNanoseconds: Int64)

    /// `changedNanoseconds`: the later of the file's mtime and ctime; `now`: the real-time clock's
    /// (both are wall-clock times). A change "in the future" (the clock was set back) counts as
    /// quiet: the file was armed `settle` after its last event already, and holding it for as long
    /// as the clock is off would hold it for hours.
    static func of(changedNanoseconds: Int64, now: Int64, settle: Int64) -> FileQuietness {
        let quietFor = now - changedNanoseconds
        return quietFor >= settle || quietFor < 0 ? .quiet : .changing(waitNanoseconds: settle - quietFor)
    }
}
