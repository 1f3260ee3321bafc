import Glibc

/// Where the daemon's control socket is.
enum SocketPath {
    /// `--socket`, else `$UPLOADD_SOCKET`, else `$XDG_RUNTIME_DIR/uploadd/control.sock`, else
    /// `/run/user/UID/uploadd/control.sock`. Empty values count as unset.
    static func resolve(option: String?, environment: [String: String], userID: uid_t = getuid()) -> String {
        if let option, !option.isEmpty { return option }
        if let path = environment["UPLOADD_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime.hasSuffix("/") ? "\(runtime)uploadd/control.sock" : "\(runtime)/uploadd/control.sock"
        }
        return "/run/user/\(userID)/uploadd/control.sock"
    }
}
