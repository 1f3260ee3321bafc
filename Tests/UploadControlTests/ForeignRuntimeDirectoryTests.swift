import Glibc
import Testing
import UploadWire

/// `su user` keeps the first user's `XDG_RUNTIME_DIR`: uploadd could not make its folder there
/// and uploadctl asked whether it was running. Both pass it over as if it were unset, and say why.
@Suite struct ForeignRuntimeDirectoryTests {
    /// `/` belongs to root: to any other user it is another user's folder.
    let others = ["XDG_RUNTIME_DIR": "/"]
    let someone: uid_t = 4321

    @Test func anotherUsersRuntimeDirectoryIsPassedOverForTheFallback() {
        #expect(
            SocketLocation.resolve(option: nil, environment: others, userID: someone)
                == "/tmp/uploadd-4321/control.sock")
    }

    @Test func passingItOverIsExplained() throws {
        let notice = try #require(
            SocketLocation.foreignRuntimeDirectory(option: nil, environment: others, userID: someone))
        #expect(notice.contains("XDG_RUNTIME_DIR=/ belongs to uid 0, not to you (uid 4321)"), "\(notice)")
        #expect(notice.contains("/tmp/uploadd-4321/control.sock"), "\(notice)")
        #expect(notice.contains("Unset XDG_RUNTIME_DIR"), "\(notice)")
    }

    @Test func ownRuntimeDirectoryOrAnExplicitSocketSaysNothing() {
        #expect(SocketLocation.foreignRuntimeDirectory(option: nil, environment: others, userID: 0) == nil)
        #expect(SocketLocation.resolve(option: nil, environment: others, userID: 0) == "/uploadd/control.sock")
        #expect(SocketLocation.foreignRuntimeDirectory(option: "/s.sock", environment: others, userID: someone) == nil)
        var withSocket = others
        withSocket["UPLOADD_SOCKET"] = "/env.sock"
        #expect(SocketLocation.foreignRuntimeDirectory(option: nil, environment: withSocket, userID: someone) == nil)
    }
}
