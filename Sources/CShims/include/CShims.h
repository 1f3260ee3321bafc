#ifndef CSHIMS_H
#define CSHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// CRC-32C (Castagnoli), as used by the journal framing and S3's x-amz-checksum-crc32c.
/// Uses the SSE4.2 crc32 instruction when the CPU has it, else a table. `crc` is the running
/// value (0 to start); the result is the finished checksum, ready to pass back in for more data.
uint32_t CShims_crc32c(uint32_t crc, const void *data, size_t length);

/// CRC-32 (IEEE 802.3, zlib's crc32), as used by the chunked block protocol.
uint32_t CShims_crc32(uint32_t crc, const void *data, size_t length);

/// accept4 with SOCK_CLOEXEC | SOCK_NONBLOCK. Returns the fd or -1 with errno set.
int CShims_accept_nonblocking(int fd);

/// The peer's credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or -1 with errno set.
int CShims_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Clones `source_fd` into `dest_fd` with the FICLONE ioctl (a reflink). Returns 0 or -1 with errno set.
int CShims_reflink(int dest_fd, int source_fd);

/// copy_file_range from `source_fd` at `*source_offset` to `dest_fd` at its position. Returns bytes copied or -1.
ssize_t CShims_copy_file_range(int source_fd, off_t *source_offset, int dest_fd, size_t length);

/// Bytes written to a TCP socket that the peer has not acknowledged yet (SIOCOUTQ), or -1.
int CShims_unsent_bytes(int fd);

#endif
