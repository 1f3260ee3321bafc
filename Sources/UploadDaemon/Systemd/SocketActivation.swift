import CSystemd
import Glibc
import UploadPlatform
import UploadWire

/// Sockets handed over by systemd's socket activation.
enum SocketActivation {
    /// The listening Unix stream socket passed by systemd, or nil when not socket-activated.
    /// Throws when systemd passed something else, which is a unit misconfiguration.
    static func inheritedControlSocket() throws -> Int32? {
        let count = sd_listen_fds(1)
        if count < 0 { throw SystemError("sd_listen_fds", errno: -count) }
        guard count > 0 else { return nil }
        let fd = SD_LISTEN_FDS_START
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            throw ControlSocket.SetupError(
                message: "systemd passed fd \(fd), which is not a listening Unix stream socket; check uploadd.socket")
        }
        if count > 1 { Log.warning("systemd passed \(count) sockets; using the first one") }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        return fd
    }
}
