import CShims
import Foundation
import Glibc
import UploadCore
import UploadPlatform
import UploadWire

/// `after = delete` and `after = move:DIR`: what is done to a watched folder's file once the end
/// of its upload is durable, and only to the version that was uploaded.
///
/// Linux has no "unlink this name if it is still this inode", so the name is first renamed
/// aside (into DIR for a move; to a hidden name beside it for a delete), which takes whatever is
/// there at that instant, and what was taken is then checked: the uploaded version is deleted
/// or stays moved; anything else (a new version saved in the same instant) is put back. A crash
/// in between leaves the aside name, which the next try finishes. Folders are opened by walking
/// their paths (`OpenDirectory`): another user's symlink on the way is not followed.
enum FolderAfterUpload {
    /// The version of a file a folder's job uploaded.
    struct Version: Sendable, Equatable {
        var path: String
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedNanoseconds: Int64

        init(path: String, device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64) {
            self.path = path
            self.device = device
            self.inode = inode
            self.size = size
            self.modifiedNanoseconds = modifiedNanoseconds
        }

        init?(_ file: FolderFile) {
            self.init(
                path: file.path, device: file.key.device, inode: file.key.inode, size: file.size,
                modifiedNanoseconds: file.modifiedNanoseconds)
        }

        init?(of job: Job) {
            guard let snapshot = job.snapshot else { return nil }
            self.init(
                path: job.spec.source, device: snapshot.device, inode: snapshot.inode, size: snapshot.size,
                modifiedNanoseconds: snapshot.modificationTimeNanoseconds)
        }

        /// Whether `info` (of the file, a symlink followed) is this version.
        func matches(_ info: stat) -> Bool {
            info.st_mode & S_IFMT == S_IFREG && UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
                && Int64(info.st_size) == size && FolderScan.modified(info) == modifiedNanoseconds
        }
    }

    enum Outcome: Sendable, Equatable {
        case deleted
        case moved(to: String)
        /// Not there any more: nothing to do.
        case gone
        /// Another version is there now: left alone (the folder takes it as a new version).
        case changed
        /// A symlink (`follow = yes`): left where it is, link and target; a moved relative link
        /// would lead elsewhere, and deleting the link would leave the file.
        case symlink
        /// Could not be done (why); the file is where it was.
        case failed(String)

        var isMove: Bool {
            if case .moved = self { return true }
            return false
        }

        /// Whether nothing is owed any more: all but a failure that may pass.
        var isFinal: Bool {
            if case .failed = self { return false }
            return true
        }
    }

    /// The prefix of a name renamed aside to be deleted: hidden, so the default `exclude` leaves it.
    static let asidePrefix = ".uploadd-deleting."

    static func perform(_ after: FolderAfter, on version: Version) -> Outcome {
        guard let slash = version.path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return .failed("\(version.path) is not an absolute path")
        }
        let name = String(version.path[version.path.utf8.index(after: slash)...])
        let parentPath = slash == version.path.startIndex ? "/" : String(version.path[..<slash])
        let parent: OpenDirectory
        do {
            parent = try OpenDirectory.open(parentPath)
        } catch {
            return access(parentPath, F_OK) != 0 && errno == ENOENT ? .gone : .failed("\(error)")
        }
        switch after {
        case .keep: return .changed
        case .delete: return delete(name, in: parent, version)
        case .move(let folder):
            do {
                return move(
                    name, from: parent, into: try OpenDirectory.open(folder, creatingMissingWith: 0o700), version)
            } catch {
                return .failed("cannot open \(folder) to move it there: \(error)")
            }
        }
    }

    /// What is at `name` in `folder`: whether it is `version` (a regular file: never through a
    /// symlink), a symlink, or missing.
    private static func look(_ name: String, in folder: OpenDirectory, _ version: Version) -> (
        found: Bool, matches: Bool, symlink: Bool
    ) {
        var info = stat()
        guard fstatat(folder.fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return (false, false, false) }
        return (true, version.matches(info), info.st_mode & S_IFMT == S_IFLNK)
    }

    private static func delete(_ name: String, in parent: OpenDirectory, _ version: Version) -> Outcome {
        let aside = asidePrefix + name
        // Renamed aside by a try that a crash cut off: finish it, whatever is at the name now.
        if look(aside, in: parent, version).matches {
            return unlinkat(parent.fd, aside, 0) == 0 ? .deleted : .failed(error("delete", aside))
        }
        let here = look(name, in: parent, version)
        guard here.found else { return .gone }
        if here.symlink { return .symlink }
        guard here.matches else { return .changed }
        guard renameat(parent.fd, name, parent.fd, aside) == 0 else { return .failed(error("rename", name)) }
        guard look(aside, in: parent, version).matches else {
            // A new version came in the instant between the look and the rename: put it back.
            _ = CShims_rename_noreplace(parent.fd, aside, parent.fd, name)
            return .changed
        }
        return unlinkat(parent.fd, aside, 0) == 0 ? .deleted : .failed(error("delete", aside))
    }

    private static func move(_ name: String, from parent: OpenDirectory, into target: OpenDirectory, _ version: Version)
        -> Outcome
    {
        let here = look(name, in: parent, version)
        guard here.found else { return .gone }
        if here.symlink { return .symlink }
        guard here.matches else { return .changed }
        for candidate in candidates(for: name) {
            guard CShims_rename_noreplace(parent.fd, name, target.fd, candidate) == 0 else {
                switch errno {
                case EEXIST: continue
                case EXDEV:
                    return .failed(
                        "\(target.path) is on another file system than \(parent.path): after = move:DIR needs one file system; the file stays"
                    )
                default: return .failed(error("move", name))
                }
            }
            guard look(candidate, in: target, version).matches else {
                _ = CShims_rename_noreplace(target.fd, candidate, parent.fd, name)
                return .changed
            }
            _ = fsync(target.fd)  // the move survives a power cut: the file is not taken again
            return .moved(to: target.path + "/" + candidate)
        }
        return .failed("\(target.path) has a file of every name tried for \(name)")
    }

    /// `name`, then `name (2)`, `name (3)`, ... before its extension, as file managers name copies.
    static func candidates(for name: String) -> [String] {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { String(name[..<$0]) } ?? name
        let suffix = dot.map { String(name[$0...]) } ?? ""
        return [name] + (2...100).map { "\(stem) (\($0))\(suffix)" }
    }

    private static func error(_ verb: String, _ name: String) -> String {
        "cannot \(verb) \(name): \(String(cString: strerror(errno)))"
    }
}
