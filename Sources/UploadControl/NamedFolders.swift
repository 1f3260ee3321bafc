import CShims
import Glibc

/// The folder of the last path `add` was given, held open.
///
/// A shell expands `~/Pictures/trip/*.jpg` into thousands of paths in one folder. Checking each
/// path's components for another user's symlink (`FolderWalker.foreignSymlink`) took seven
/// look-ups of whole paths a file; the folder is opened once instead, one component at a time
/// from `/`, each checked as it is reached, and each file is then looked up in it by name.
///
/// Holding the folder open narrows the check's window rather than widening it: a component
/// swapped after the check cannot redirect the look-ups in the open folder, and the daemon holds
/// each path to the identity found in it (`SourceIdentity`), so a swapped path is refused.
final class NamedFolders {
    enum Opened {
        /// The folder, open (`O_PATH`: a folder the user may only search is fine).
        case folder(Int32)
        /// A symlink on the way that neither the user nor root owns, at `link`.
        case foreignSymlink(link: String, owner: uid_t)
        /// Missing, not a folder, or not searchable: looked up by its path instead.
        case unavailable
    }

    private var heldPath: String?
    private var held: Int32 = -1

    init() {}

    deinit { release() }

    /// The folder at the absolute path `path`, opened and checked, or the one held if it is the same.
    func open(_ path: String) -> Opened {
        if path == heldPath { return .folder(held) }
        release()
        let opened = Self.openChecked(path)
        if case .folder(let fd) = opened {
            held = fd
            heldPath = path
        }
        return opened
    }

    private func release() {
        if held >= 0 { close(held) }
        held = -1
        heldPath = nil
    }

    /// Opens `path` from `/`, component by component, refusing to pass another user's symlink.
    /// The user's own and root's symlinks are followed (`~/uploads -> /mnt/nas`), and their
    /// targets resolved by the kernel, as `foreignSymlink` does.
    static func openChecked(_ path: String) -> Opened {
        let flags = CShims_open_path_flag() | O_DIRECTORY | O_CLOEXEC
        var folder = Glibc.open("/", flags)
        guard folder >= 0 else { return .unavailable }
        var prefix = ""
        for component in path.utf8.split(separator: UInt8(ascii: "/")) {
            let name = String(decoding: component, as: UTF8.self)
            prefix += "/" + name
            var next = openat(folder, name, flags | O_NOFOLLOW)
            if next < 0, errno == ELOOP || errno == ENOTDIR {
                var info = stat()
                if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFLNK {
                    if let owner = FolderWalker.foreignOwner(info) {
                        close(folder)
                        return .foreignSymlink(link: prefix, owner: owner)
                    }
                    next = openat(folder, name, flags)
                }
            }
            close(folder)
            guard next >= 0 else { return .unavailable }
            folder = next
        }
        return .folder(folder)
    }
}
