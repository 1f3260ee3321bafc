import Foundation
import Glibc
import UploadPlatform
import UploadWire

/// A walk of a watched folder: every subfolder it watches (when the rule is recursive) and every
/// file the rule takes, by `openat`/`fdopendir` from the folder's descriptor and `fstatat`
/// without following symlinks, names in sorted order.
struct FolderScan {
    let rule: FolderRule
    /// The quiet files found, to hand over.
    private(set) var settled: [FolderWatcher.Settled] = []
    /// What was left out and why (another user's file or folder), for the log.
    private(set) var problems: [String] = []

    init(rule: FolderRule) { self.rule = rule }

    /// Walks the open folder `fd` (closing it), at `folder` inside the rule's: `watch` is called for
    /// it before its names are read (a file made meanwhile is then seen by an event, or by both),
    /// then `file` for each file the rule takes, which returns it when it is quiet.
    mutating func walk(
        _ fd: Int32, folder: String, watch: (String) -> Bool,
        file: (String, stat) -> FolderWatcher.Settled?
    ) {
        _ = watch(folder)
        defer { close(fd) }
        guard let names = FolderNames.sorted(fd) else {
            problems.append("cannot read \(folder.isEmpty ? rule.path : folder): \(String(cString: strerror(errno)))")
            return
        }
        var subfolders: [String] = []
        for name in names {
            let relativePath = folder.isEmpty ? name : folder + "/" + name
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                guard rule.recursive, !rule.skipsFolder(name: name, relativePath: relativePath) else { continue }
                if let refusal = Self.untrusted(info, rule: rule, what: "folder") {
                    problems.append("\(relativePath): \(refusal)")
                    continue
                }
                subfolders.append(name)
                continue
            }
            guard rule.takes(name: name, relativePath: relativePath) else { continue }
            let path = rule.path + "/" + relativePath
            guard
                let found = Self.fileToTake(
                    rule, path: path, info: info, problem: { problems.append("\(relativePath): \($0)") })
            else { continue }
            if let quiet = file(relativePath, found) { settled.append(quiet) }
        }
        for name in subfolders {
            let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
            guard child >= 0 else { continue }  // gone since
            walk(child, folder: folder.isEmpty ? name : folder + "/" + name, watch: watch, file: file)
        }
    }

    /// What to take of the entry `info` (not followed) at `path`: a regular file, or with `follow`
    /// the file a symlink of the user's (or root's) leads to; nil for anything else, and for
    /// another user's file unless the rule trusts others (`problem` says why). Another user's
    /// symlink is never followed, not even with `trust_others`: it could lead to the user's own
    /// private files, which the upload would then hand to the destination.
    static func fileToTake(_ rule: FolderRule, path: String, info: stat, problem: (String) -> Void) -> stat? {
        var file = info
        if info.st_mode & S_IFMT == S_IFLNK {
            guard rule.followSymlinks else { return nil }
            if info.st_uid != geteuid() && info.st_uid != 0 {
                problem(
                    "a symlink of another user (uid \(info.st_uid)), never followed: it could lead to your own files")
                return nil
            }
            guard stat(path, &file) == 0 else { return nil }  // broken
        }
        guard file.st_mode & S_IFMT == S_IFREG else { return nil }
        if let refusal = untrusted(file, rule: rule, what: "file") {
            problem(refusal)
            return nil
        }
        return file
    }

    /// Why an entry another user owns, or a folder others may write to, is left alone; nil when it
    /// is the user's or root's (or the rule trusts others).
    static func untrusted(_ info: stat, rule: FolderRule, what: String) -> String? {
        guard !rule.trustOthers else { return nil }
        if info.st_uid != geteuid() && info.st_uid != 0 {
            return "a \(what) of another user (uid \(info.st_uid)), not taken; trust_others = yes takes it"
        }
        if what == "folder", info.st_mode & 0o022 != 0 {
            return
                "a folder others may write to (mode \(String(info.st_mode & 0o7777, radix: 8))), not watched; chmod go-w it, or set trust_others = yes"
        }
        return nil
    }

    static func modified(_ info: stat) -> Int64 {
        Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    static func quietness(_ info: stat, rule: FolderRule) -> FileQuietness {
        let changed = max(modified(info), Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return FileQuietness.of(
            changedNanoseconds: changed, now: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec),
            settle: rule.settleNanoseconds)
    }
}

/// Whether a watched folder may be watched: other users must not be able to put files in it
/// (they would be uploaded as the user), unless the rule trusts them. Stricter than
/// `TrustedPath`, which lets sticky folders such as /tmp through: anyone may still add files there.
enum FolderTrust {
    static func refusal(of rule: FolderRule) -> String? {
        guard !rule.trustOthers else { return nil }
        do {
            guard try TrustedPath.check(rule.path, what: "the watched folder") else { return nil }
        } catch {
            return "\(error)"
        }
        var info = stat()
        guard stat(rule.path, &info) == 0 else { return nil }  // missing: the open says so
        if info.st_mode & 0o022 != 0 {
            return
                "refusing to watch \(rule.path): other users may write to it (mode \(String(info.st_mode & 0o7777, radix: 8))), and what they put there would be uploaded as you; chmod go-w \(rule.path), or set trust_others = yes"
        }
        return nil
    }
}

extension FolderRule {
    /// Whether a subfolder is left out: by `exclude` (hidden folders, by default); `include`
    /// names files only.
    func skipsFolder(name: String, relativePath: String) -> Bool {
        exclude.contains { glob in
            fnmatch(glob, name, 0) == 0 || fnmatch(glob, relativePath, FNM_PATHNAME) == 0
        }
    }
}
