import CShims
import Glibc
import Testing

/// The stall detector asks a socket how much it has not sent yet, by the number libcurl gave it;
/// libcurl may have closed that socket since, and the number may name another file or socket.
@Suite("Socket shims")
struct SocketShimTests {
    @Test func aSocketNumberGivenToAnotherSocketIsNotAsked() throws {
        var first: [Int32] = [-1, -1]
        var second: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &first) == 0)
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &second) == 0)
        defer { for fd in first + second { close(fd) } }
        let inode = CShims_socket_inode(first[0])
        #expect(inode != 0)
        #expect(CShims_unsent_bytes(first[0], inode) >= 0)

        // The number now names the other socket (as after a close and a new socket): not asked.
        #expect(dup2(second[0], first[0]) == first[0])
        #expect(CShims_unsent_bytes(first[0], inode) == -1)
        #expect(CShims_unsent_bytes(first[0], CShims_socket_inode(second[0])) >= 0)
    }

    @Test func aFileIsNotASocket() throws {
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        #expect(CShims_socket_inode(fd) == 0)
        #expect(CShims_unsent_bytes(fd, 0) == -1)
    }
}
