import Glibc
import UploadWire

/// Finds the files `add` queues: the paths named, and the files inside named folders, with their
/// folders relative to the one named (`trip/day1` for `~/Pictures/trip/day1/a.jpg`).
///
/// Walked with `openat`/`fdopendir` from the folder's descriptor, names sorted in each folder.
/// Hand-written because glibc's fts(3) is not visible to Swift. Symlinks inside a folder are
/// skipped unless `followSymlinks`; followed ones are guarded against loops by device and inode.
///
/// Each file found carries the identity its check saw (`SourceIdentity`), which the daemon holds
/// the path to: in a folder others can write to, a symlink to one of the user's private files
/// renamed into a checked file's place is refused rather than uploaded.
struct FolderWalker: Equatable {
    /// A file to add: its path, the folder path to put it under at the destination (empty for a
    /// file named on its own), and the file its check found (nil: the check failed, and the
    /// daemon says why when it looks).
    struct Found: Equatable {
        var path: String
        var folder: String
        var identity: SourceIdentity?
    }

    /// Something that could not be read: it is reported and the walk goes on.
    struct Problem: Error, Equatable {
        var path: String
        var message: String
    }

    /// What the walk passed over on purpose: so that an add that found nothing can say why.
    enum Skip: Equatable {
        /// Left out by `--exclude`.
        case excluded
        /// A name starting with `.`, without `--hidden`.
        case hidden
        /// A symlink inside a folder, without `--follow`.
        case symlink
        /// Neither a file nor a folder (a socket, a FIFO, a device).
        case special
    }

    var excludes: [String] = []
    var includeHidden = false
    var followSymlinks = false

    /// Whether `--exclude` drops `name`, found at `relativePath` inside the folder named.
    func isExcluded(name: String, relativePath: String) -> Bool {
        excludes.contains { glob in
            fnmatch(glob, name, 0) == 0 || fnmatch(glob, relativePath, FNM_PATHNAME) == 0
        }
    }

    /// Visits what `path` (an absolute path) stands for: the file itself, or every file under the
    /// folder. `folders` holds the folder of the last path named open, so that the run of paths a
    /// shell expands into one folder has that folder's path checked once.
    func walk(
        _ path: String, folders: NamedFolders = NamedFolders(), visit: (Found) throws -> Void,
        problem: (Problem) -> Void, skipped: (Skip) -> Void = { _ in }
    ) rethrows {
        if !followSymlinks, let (parent, name) = Self.split(path) {
            switch folders.open(parent) {
            case .foreignSymlink(let link, let owner):
                problem(Self.foreignSymlinkProblem(path: path, link: link, owner: owner))
                return
            case .folder(let folder):
                try walkNamed(path, name: name, in: folder, visit: visit, problem: problem, skipped: skipped)
                return
            case .unavailable:
                break  // a missing or unreadable folder: by the path, so the daemon says why as before
            }
        }
        if !followSymlinks, let link = Self.foreignSymlink(in: path) {
            problem(Self.foreignSymlinkProblem(path: path, link: link.path, owner: link.owner))
            return
        }
        var info = stat()
        // Followed: a symlink of the user's own (or root's) named on the command line is the
        // user's choice, as with cp.
        guard stat(path, &info) == 0 else {
            // Not there (or unreadable): the daemon says why, as for any file named.
            try visit(Found(path: path, folder: "", identity: nil))
            return
        }
        try visitNamed(
            path, info: info, openFolder: { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }, visit: visit,
            problem: problem, skipped: skipped)
    }

    /// `path`, whose last component `name` is looked up in its open folder: one `fstatat` instead of
    /// a look-up of every component again.
    private func walkNamed(
        _ path: String, name: String, in folder: Int32, visit: (Found) throws -> Void, problem: (Problem) -> Void,
        skipped: (Skip) -> Void
    ) rethrows {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            try visit(Found(path: path, folder: "", identity: nil))
            return
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            if let owner = Self.foreignOwner(info) {
                problem(Self.foreignSymlinkProblem(path: path, link: path, owner: owner))
                return
            }
            guard fstatat(folder, name, &info, 0) == 0 else {
                try visit(Found(path: path, folder: "", identity: nil))
                return
            }
        }
        try visitNamed(
            path, info: info, openFolder: { openat(folder, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }, visit: visit,
            problem: problem, skipped: skipped)
    }

    /// A path named, found to be `info`: a file is visited, a folder walked.
    private func visitNamed(
        _ path: String, info: stat, openFolder: () -> Int32, visit: (Found) throws -> Void,
        problem: (Problem) -> Void, skipped: (Skip) -> Void
    ) rethrows {
        guard info.st_mode & S_IFMT == S_IFDIR else {
            let name = SafeFileName.lastComponent(of: path)
            if !isExcluded(name: name, relativePath: name) {
                try visit(Found(path: path, folder: "", identity: SourceIdentity(info)))
            } else {
                skipped(.excluded)
            }
            return
        }
        let fd = openFolder()
        guard fd >= 0 else {
            problem(Problem(path: path, message: "cannot open the folder: \(String(cString: strerror(errno)))"))
            return
        }
        let top = SafeFileName.lastComponent(of: path)
        var visited: Set<[UInt64]> = [[UInt64(info.st_dev), UInt64(info.st_ino)]]
        try walkFolder(
            fd, path: path, folder: top == "/" ? "" : top, relative: "", visited: &visited, visit: visit,
            problem: problem, skipped: skipped)
    }

    /// `/a/b/c` as (`/a/b`, `c`); nil for `/` and for a path with a trailing `/`, `.` or `..`,
    /// which are looked up by their whole path.
    static func split(_ path: String) -> (parent: String, name: String)? {
        guard path.utf8.first == UInt8(ascii: "/"), let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return nil
        }
        let name = String(path[path.index(after: slash)...])
        guard !name.isEmpty, name != ".", name != ".." else { return nil }
        return (slash == path.startIndex ? "/" : String(path[..<slash]), name)
    }

    static func foreignSymlinkProblem(path: String, link: String, owner: uid_t) -> Problem {
        Problem(
            path: path,
            message:
                "\(link) is a symlink of another user (uid \(owner)), who may have put it there to make you upload what it points to; add it with --follow if you trust it"
        )
    }

    /// The owner of the symlink `info`, if neither the user nor root.
    static func foreignOwner(_ info: stat) -> uid_t? {
        info.st_uid != getuid() && info.st_uid != 0 ? info.st_uid : nil
    }

    /// The first symlink on the way to `path` (an absolute path) that neither the user nor root
    /// owns: in a folder another user can write to, such a link (or one renamed over a file the
    /// user saw there) leads `add` to one of the user's own private files, which the user can read
    /// and the other user then gets from the destination. The kernel's `fs.protected_symlinks`
    /// guards only sticky world-writable folders such as /tmp; this guards every folder. One
    /// `lstat` per component, for the paths named (a symlink's target's own links are resolved
    /// by the kernel; the daemon's identity check still holds the file to the one found here).
    static func foreignSymlink(in path: String) -> (path: String, owner: uid_t)? {
        var prefix = ""
        for component in path.utf8.split(separator: UInt8(ascii: "/")) {
            prefix += "/" + String(decoding: component, as: UTF8.self)
            var info = stat()
            guard lstat(prefix, &info) == 0 else { return nil }  // not there: the daemon says so
            if info.st_mode & S_IFMT == S_IFLNK, let owner = foreignOwner(info) { return (prefix, owner) }
        }
        return nil
    }

    /// Walks the open folder `fd` (closing it): files first in name order, then each sub-folder.
    private func walkFolder(
        _ fd: Int32, path: String, folder: String, relative: String, visited: inout Set<[UInt64]>,
        visit: (Found) throws -> Void, problem: (Problem) -> Void, skipped: (Skip) -> Void
    ) rethrows {
        defer { close(fd) }
        guard let names = FolderNames.sorted(fd) else {
            problem(Problem(path: path, message: "cannot read the folder: \(String(cString: strerror(errno)))"))
            return
        }
        var subfolders: [String] = []
        for name in names {
            if name.hasPrefix(".") && !includeHidden {
                skipped(.hidden)
                continue
            }
            let relativePath = relative.isEmpty ? name : relative + "/" + name
            if isExcluded(name: name, relativePath: relativePath) {
                skipped(.excluded)
                continue
            }
            let fullPath = path.hasSuffix("/") ? path + name : path + "/" + name
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                problem(Problem(path: fullPath, message: String(cString: strerror(errno))))
                continue
            }
            if info.st_mode & S_IFMT == S_IFLNK {
                guard followSymlinks else {
                    skipped(.symlink)
                    continue
                }
                guard fstatat(fd, name, &info, 0) == 0 else {
                    problem(Problem(path: fullPath, message: "a broken symlink"))
                    continue
                }
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                // The entry itself (lstat), or what a symlink followed on purpose points to.
                try visit(Found(path: fullPath, folder: folder, identity: SourceIdentity(info)))
            case S_IFDIR:
                guard visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else {
                    problem(Problem(path: fullPath, message: "a symlink loop; skipped"))
                    continue
                }
                subfolders.append(name)
            default:
                skipped(.special)  // sockets, FIFOs, devices: nothing to upload
            }
        }
        // Opened one at a time, after the files: a folder of many folders holds one descriptor.
        for name in subfolders {
            let relativePath = relative.isEmpty ? name : relative + "/" + name
            let fullPath = path.hasSuffix("/") ? path + name : path + "/" + name
            let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followSymlinks ? 0 : O_NOFOLLOW)
            let child = openat(fd, name, flags)
            guard child >= 0 else {
                problem(Problem(path: fullPath, message: "cannot open the folder: \(String(cString: strerror(errno)))"))
                continue
            }
            try walkFolder(
                child, path: fullPath,
                folder: folder.isEmpty ? name : folder + "/" + name, relative: relativePath, visited: &visited,
                visit: visit, problem: problem, skipped: skipped)
        }
    }
}
