import Foundation
import Glibc

/// Where the control socket is: one set of rules for the daemon, uploadctl and client libraries.
///
/// `--socket`, else `$UPLOADD_SOCKET`, else `$XDG_RUNTIME_DIR/uploadd/control.sock`. Without a
/// usable runtime directory (containers, `su`, cron, SSH without pam_systemd) both sides fall
/// back to `/tmp/uploadd-UID/control.sock`, in the manner of tmux and ssh-agent: a folder of the
/// user's own, mode 0700, which the daemon creates and both sides refuse when it is a symlink,
/// belongs to someone else, or lets group or others in.
public enum SocketLocation {
    public static let fileName = "control.sock"

    /// The socket path. Empty values count as unset, and so does a runtime directory of another
    /// user's (`foreignRuntimeDirectory` says why); `isDirectory` is a seam for tests.
    public static func resolve(
        option: String?, environment: [String: String], userID: uid_t = getuid(),
        isDirectory: (String) -> Bool = SocketLocation.isDirectory
    ) -> String {
        if let option, !option.isEmpty { return option }
        if let path = environment["UPLOADD_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), isDirectory(runtime),
            owner(of: runtime).map({ $0 == userID }) ?? true
        {
            return (runtime.hasSuffix("/") ? runtime : runtime + "/") + "uploadd/" + fileName
        }
        return fallbackDirectory(userID: userID) + "/" + fileName
    }

    /// What to tell the user when `resolve` passed over `$XDG_RUNTIME_DIR` because it belongs to
    /// another user (`su user` keeps the first user's): nil when it was not passed over for that.
    public static func foreignRuntimeDirectory(
        option: String?, environment: [String: String], userID: uid_t = getuid()
    ) -> String? {
        guard option?.isEmpty ?? true, environment["UPLOADD_SOCKET"]?.isEmpty ?? true,
            let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), isDirectory(runtime),
            let owner = owner(of: runtime), owner != userID
        else { return nil }
        return "XDG_RUNTIME_DIR=\(runtime) belongs to uid \(owner), not to you (uid \(userID)); it is left over from "
            + "another user (as after su without -l), so the socket is \(fallbackDirectory(userID: userID))/\(fileName) "
            + "instead. Unset XDG_RUNTIME_DIR, or log in as this user with su -l or machinectl shell, to silence this"
    }

    /// The owner of the file at `path`, or nil when it cannot be found out.
    static func owner(of path: String) -> uid_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_uid : nil
    }

    /// `/tmp/uploadd-UID`: the folder used without a runtime directory.
    public static func fallbackDirectory(userID: uid_t = getuid()) -> String { "/tmp/uploadd-\(userID)" }

    /// Why the folder at `path` must not hold our socket, or nil when it is fine: it must be a real
    /// folder (not a symlink), ours, with no access for group or others. Nil too when it does not
    /// exist (the daemon creates it).
    public static func problem(withFolder path: String, userID: uid_t = getuid()) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        if info.st_mode & S_IFMT == S_IFLNK { return "\(path) is a symlink" }
        if info.st_mode & S_IFMT != S_IFDIR { return "\(path) is not a folder" }
        if info.st_uid != userID { return "\(path) belongs to uid \(info.st_uid), not to uid \(userID)" }
        if info.st_mode & 0o077 != 0 {
            return "\(path) lets group or others in (mode \(String(info.st_mode & 0o7777, radix: 8)), not 700)"
        }
        return nil
    }

    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
