import Foundation
import Glibc
import UploadCore
import UploadWire

/// Whether anyone but the user and root could have written a file: ssh's StrictModes, applied to
/// every file whose content decides what uploadd runs, sends or believes (the config, the hooks'
/// programs, secret files, CA bundles) and to the folders above the state, cache and socket folders.
///
/// The rules, for each element of the path from `/` down to the file:
/// - It belongs to the user (getuid) or root. Anyone else could change it, or replace it.
/// - A file is not writable by its group or others. Group-writable is refused too, as ssh does,
///   with user private groups (umask 002) as well: the group is not checked for members.
/// - A folder is not writable by its group or others, unless it has the sticky bit (/tmp): there
///   only an entry's owner, the folder's owner and root may rename or remove the entry, and the
///   first rule makes both of them the user or root.
/// - A symlink's own mode means nothing; its owner must be the user or root, and the path it
///   points to is then checked the same way, from the folder it is in (or from `/`).
///
/// The walk goes up to `/`, not only to the home folder as ssh's does: uploadd's files can be
/// anywhere (`--config /srv/...`, a unit's ConfigurationDirectory, /tmp), and a folder above the
/// home folder that others can write (a group-writable /home) lets them rename the home folder
/// itself away and put their own in its place. On a sane system those folders are root's, 755.
///
/// An element that does not exist ends the walk (nothing to trust yet): the caller learns that the
/// file is missing and must not then use it, since a missing name in a sticky folder could be
/// created by anyone. Once every element exists and passes, nobody but the user and root can
/// change what the path leads to, so what is opened next is what was checked.
package enum TrustedPath {
    /// The user and root: the owners whose files are trusted, whose symlinks are followed.
    package static func isTrusted(owner: uid_t) -> Bool { owner == getuid() || owner == 0 }

    /// Why a path is not trusted: the message names what it is, the element at fault, and the
    /// command that fixes it.
    package struct Refusal: Error, Equatable, CustomStringConvertible {
        /// What the path is for, as the user knows it: "the config file", "the [remote nas] password_file".
        package var what: String
        package var path: String
        /// Everything after "refusing WHAT PATH: ".
        package var problem: String
        package var description: String { "refusing \(what) \(path): \(problem)" }
    }

    /// Symlinks followed at most on one walk, as the kernel's MAXSYMLINKS.
    private static let maxSymlinks = 40

    /// Checks `path` and every element on its way (relative paths start at the working folder, as
    /// open and execve would read them). True when it exists and may be trusted, false when an
    /// element is missing (everything before it passed); throws when an element fails a rule.
    package static func check(_ path: String, what: String) throws(Refusal) -> Bool {
        let walk = Walk(what: what, path: path)
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var walked: [String] = []  // the real path so far: symlinks replaced by where they lead
        var pending = components(of: absolute)
        var symlinks = 0
        guard let root = try walk.status(of: "/") else { return false }
        try walk.check(root, at: "/", role: .folderAbove)
        while !pending.isEmpty {
            let name = pending.removeFirst()
            if name == "." { continue }
            if name == ".." {
                _ = walked.popLast()
                continue
            }
            let here = "/" + (walked + [name]).joined(separator: "/")
            guard let info = try walk.status(of: here) else { return false }
            if info.st_mode & S_IFMT == S_IFLNK {
                try walk.checkOwner(info, at: here, role: .symlink)
                symlinks += 1
                guard symlinks <= maxSymlinks else {
                    throw walk.refusal("too many symlinks on its way (a loop?) at \(here)")
                }
                let target = try walk.symlinkTarget(here)
                if target.hasPrefix("/") { walked = [] }
                pending = components(of: target) + pending
                continue
            }
            let role: Role = !pending.isEmpty ? .folderAbove : symlinks == 0 ? .itself : .whereItLeads
            try walk.check(info, at: here, role: role)
            walked.append(name)
        }
        return true
    }

    /// The whole file at `path`, read only when `check` trusts it; a missing file is ENOENT.
    package static func readFile(_ path: String, what: String) throws -> [UInt8] {
        guard try check(path, what: what) else { throw SystemError("open", path: path, errno: ENOENT) }
        return try FileOps.readFile(path)
    }

    /// Where an element is, seen from the path checked: for the messages and their fixes.
    private enum Role {
        case itself, whereItLeads, folderAbove, symlink

        /// How the message names the element at `here`.
        func subject(_ here: String) -> String {
            switch self {
            case .itself: "it"
            case .whereItLeads: "\(here), where it leads"
            case .folderAbove: "\(here), a folder above it"
            case .symlink: "\(here), a symlink on its way"
            }
        }
    }

    /// One check's walk: the rules for each element, and refusals that name the path checked.
    private struct Walk {
        var what: String
        var path: String

        func refusal(_ problem: String) -> Refusal { Refusal(what: what, path: path, problem: problem) }

        /// lstat of `here`; nil when it does not exist (or a file stands where a folder should).
        func status(of here: String) throws(Refusal) -> stat? {
            var info = stat()
            if lstat(here, &info) == 0 { return info }
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw refusal("cannot check \(here): \(String(cString: strerror(errno)))")
        }

        func check(_ info: stat, at here: String, role: Role) throws(Refusal) {
            try checkOwner(info, at: here, role: role)
            try checkWriters(info, at: here, role: role)
        }

        func checkOwner(_ info: stat, at here: String, role: Role) throws(Refusal) {
            guard !isTrusted(owner: info.st_uid) else { return }
            let me = getuid()
            let chown = "as root, chown \(userName(me) ?? String(me)) \(here)"
            let fix =
                switch role {
                case .symlink: "replace it with a symlink of your own"
                case .folderAbove: "\(chown), or move it to a folder of your own"
                case .itself, .whereItLeads: "\(chown), or use a file of your own"
                }
            let owner = userName(info.st_uid).map { "uid \(info.st_uid) (\($0))" } ?? "uid \(info.st_uid)"
            let subject = role == .itself ? "it" : role.subject(here) + ","
            throw refusal("\(subject) belongs to \(owner), not to you (uid \(me)) or root; \(fix)")
        }

        /// Group or others may write only to a sticky folder.
        func checkWriters(_ info: stat, at here: String, role: Role) throws(Refusal) {
            let writers = info.st_mode & 0o022
            guard writers != 0 else { return }
            if info.st_mode & S_IFMT == S_IFDIR && info.st_mode & S_ISVTX != 0 { return }
            let (who, bits) =
                switch writers {
                case 0o020: ("its group", "g-w")
                case 0o002: ("others", "o-w")
                default: ("its group and others", "go-w")
                }
            let mode = String(info.st_mode & 0o7777, radix: 8)
            let consequence = role == .folderAbove ? ", and so could replace what is in it" : ""
            throw refusal(
                "\(who) can write to \(role.subject(here)) (mode \(mode))\(consequence); chmod \(bits) \(here)")
        }

        func symlinkTarget(_ here: String) throws(Refusal) -> String {
            guard let target = FileOps.linkTarget(here) else {
                throw refusal("cannot read the symlink \(here): \(String(cString: strerror(errno)))")
            }
            return target
        }
    }

    private static func components(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// The login name of `uid`, for messages (getpwuid_r: getpwuid's buffer is shared by threads).
    package static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        return buffer.withUnsafeMutableBufferPointer { strings in
            // The entry's strings live in `strings`: read them before it goes.
            guard getpwuid_r(uid, &entry, strings.baseAddress!, strings.count, &result) == 0, result != nil,
                let name = entry.pw_name
            else { return nil }
            return String(cString: name)
        }
    }
}
