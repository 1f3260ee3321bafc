#define _GNU_SOURCE
#include "CShims.h"

#include <linux/fs.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int CShims_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int CShims_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int CShims_reflink(int dest_fd, int source_fd) {
    return ioctl(dest_fd, FICLONE, source_fd);
}

ssize_t CShims_copy_file_range(int source_fd, off_t *source_offset, int dest_fd, size_t length) {
    return copy_file_range(source_fd, source_offset, dest_fd, NULL, length, 0);
}

unsigned long long CShims_socket_inode(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
    return (unsigned long long)st.st_ino;
}

int CShims_unsent_bytes(int fd, unsigned long long inode) {
    // The number may have been closed and given to another file or socket since: ask only the
    // socket it was (sockets' inode numbers are unique while they are open).
    if (inode == 0 || CShims_socket_inode(fd) != inode) return -1;
    int pending = 0;
    if (ioctl(fd, SIOCOUTQ, &pending) != 0) return -1;
    return pending;
}
