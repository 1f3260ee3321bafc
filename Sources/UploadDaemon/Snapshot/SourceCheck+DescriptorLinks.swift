import CShims
import Glibc
import UploadPlatform

extension SourceCheck {
    /// procfs's magic number (linux/magic.h), as `statfs` reports it.
    static let procfs = 0x9fa0

    /// The link on `path`'s way that names an open file of whichever process follows it: a
    /// symlink whose own folder is in procfs (`/proc/self/fd/5`, `/dev/fd/5` through the
    /// `/dev/fd` link, a folder link to either), or a path in such a folder that does not exist
    /// here. Symlinks are followed, from `path` on, at most 8 deep; nil when none is found.
    ///
    /// `statfs` of the path itself does not tell: it follows the magic link to its target's file
    /// system. Asked only of symlinks and of paths that did not resolve, so that a plain file
    /// costs nothing more.
    static func descriptorLink(_ path: String) -> String? {
        var current = path
        for _ in 0..<8 {
            let folder = folder(of: current)
            if CShims_filesystem_type(folder) == procfs { return current }
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK,
                let target = FileOps.linkTarget(current), !target.isEmpty
            else { return nil }
            current = target.hasPrefix("/") ? target : (folder == "/" ? "" : folder) + "/" + target
        }
        return nil
    }

    /// What is before the last `/` of `path` ("/" for a file at the root, "." for a bare name).
    private static func folder(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }
}
