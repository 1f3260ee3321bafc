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

/// An epoll set (EPOLL_CLOEXEC) and an eventfd (EFD_CLOEXEC | EFD_NONBLOCK). Return the fd or -1.
int CShims_epoll_create(void);
int CShims_eventfd(void);
/// Watches `fd` in `epoll` for what is asked (level-triggered): changed if `watched` (it is in the
/// set already), else added. Returns 0 or -1 with errno set.
int CShims_epoll_watch(int epoll, int fd, int readable, int writable, int watched);
/// Stops watching `fd`. Returns 0 or -1 with errno set.
int CShims_epoll_forget(int epoll, int fd);
/// What CShims_epoll_wait reports of each ready fd, or-ed together.
enum { CSHIMS_READABLE = 1, CSHIMS_WRITABLE = 2, CSHIMS_FAILED = 4 };
/// epoll_wait for at most `capacity` (≤ 64) fds: each ready fd and its CSHIMS_* readiness.
/// Returns the count, 0 on timeout, or -1 with errno set.
int CShims_epoll_wait(int epoll, int *fds, int *readiness, int capacity, int timeout_ms);
/// Arms `fd` in `epoll` for one report (EPOLLONESHOT, level-triggered) of what is asked, under
/// `token` rather than its number: changed, or added when not in the set yet. Errors and hang-ups
/// are reported even when neither is asked. Returns 0 or -1 with errno set.
int CShims_epoll_arm_once(int epoll, int fd, uint64_t token, int readable, int writable);
/// CShims_epoll_wait for descriptors armed with CShims_epoll_arm_once: each ready one's token.
int CShims_epoll_wait_tokens(int epoll, uint64_t *tokens, int *readiness, int capacity, int timeout_ms);

/// accept4 with SOCK_CLOEXEC | SOCK_NONBLOCK. Returns the fd or -1 with errno set.
int CShims_accept_nonblocking(int fd);

/// The peer's credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or -1 with errno set.
int CShims_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Clones `source_fd` into `dest_fd` with the FICLONE ioctl (a reflink). Returns 0 or -1 with errno set.
int CShims_reflink(int dest_fd, int source_fd);

/// copy_file_range from `source_fd` at `*source_offset` to `dest_fd` at its position. Returns bytes copied or -1.
ssize_t CShims_copy_file_range(int source_fd, off_t *source_offset, int dest_fd, size_t length);

/// Starts writing `fd`'s dirty pages from `offset` to disk without waiting (sync_file_range with
/// SYNC_FILE_RANGE_WRITE), `length` bytes of them (0: to the end of the file): an fsync later finds
/// them written. Durable only after that fsync. Returns 0 or -1 with errno set.
int CShims_start_writeback(int fd, long long offset, long long length);
/// fallocate(2) of bytes 0..<length (mode 0: blocks taken, the size grows). 0 or -1 with errno set.
int CShims_fallocate(int fd, long long length);

/// The inode number of socket `fd` (unique among open sockets), or 0 if `fd` is not a socket.
unsigned long long CShims_socket_inode(int fd);

/// Bytes written to TCP socket `fd` that the peer has not acknowledged yet (SIOCOUTQ), or -1; also
/// -1 when `fd` is no longer the socket of `inode` (`CShims_socket_inode`: closed, its number reused).
int CShims_unsent_bytes(int fd, unsigned long long inode);

/// O_PATH, which glibc hides from Swift unless _GNU_SOURCE is set: an fd that names a file or
/// directory for the *at() calls without opening it for reading.
int CShims_open_path_flag(void);
/// renameat2(RENAME_NOREPLACE): -1 with EEXIST when `new_name` exists (nothing is replaced).
int CShims_rename_noreplace(int old_dir, const char *old_name, int new_dir, const char *new_name);

/// statfs(2)'s f_type of the file system holding `path` (linux/magic.h), or -1 with errno.
long CShims_filesystem_type(const char *path);

/// On a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS: a crash, a Swift
/// trap, or systemd's watchdog abort), writes the marker (`CShims_write_crash_marker`) to `path`,
/// then lets the previous handler act. SIGKILL and power loss leave no marker: they are not the
/// job's doing. Returns 0 or -1 with errno set.
int CShims_install_crash_marker(const char *path);

/// Writes a crash marker's text to `fd`, async-signal-safely: `signal_number` on the first line,
/// then the ID of each job in the running set, one per line.
void CShims_write_crash_marker(int fd, int signal_number);

/// Puts job `id` (not 0) in the running set the crash marker lists; returns its slot, or -1 when
/// all 128 are taken. Thread-safe and lock-free.
int CShims_running_job_add(uint64_t id);

/// Takes the job in `slot` (from `CShims_running_job_add`) out of the running set.
void CShims_running_job_remove(int slot);

/// A NETLINK_ROUTE socket (non-blocking) subscribed to link, address and route changes: readable
/// whenever the network changes. Returns the fd or -1 with errno set.
int CShims_netlink_watch_socket(void);

/// Asks the kernel (RTM_GETROUTE) which interface a packet to `address` (4 or 16 bytes of an
/// AF_INET or AF_INET6 address) would leave through. 0 with `*interface_index` set, or -errno
/// (-ENETUNREACH: no route).
int CShims_route_interface(int family, const void *address, int *interface_index);

/// 1 when the interface is up and running (IFF_UP and IFF_RUNNING: administratively up, with a
/// carrier), 0 when not, -errno on error.
int CShims_interface_is_up(int interface_index);

/// Columns a character takes on a terminal (wcwidth in C.UTF-8): 2 for East Asian wide
/// characters and most emoji, 0 for combining marks, -1 for control characters.
int CShims_display_width(uint32_t scalar);

/// mallopt(M_ARENA_MAX): glibc makes up to 8 heaps per core for the threads that allocate, and
/// keeps what each one freed. Returns 0, or -1 when refused.
int CShims_limit_malloc_arenas(int count);

/// malloc_trim(0): gives the memory the heaps hold but no longer use back to the kernel.
/// Returns 1 when some was given back.
int CShims_trim_heap(void);

/// mallopt(M_MMAP_THRESHOLD): blocks of at least `bytes` are mapped on their own and unmapped
/// when freed. Setting it also stops glibc from raising the threshold as such blocks are freed.
/// 0, or -1 when malloc refused it.
int CShims_set_mmap_threshold(int bytes);

/// Starts `path` as a helper: stdin, stdout and stderr from the given descriptors, no other open
/// descriptor but `report_fd` as 3 (closed on exec), default signals, its own session, killed
/// when the daemon dies (PR_SET_PDEATHSIG), no core dumps, and RLIMIT_AS / RLIMIT_CPU when > 0,
/// all set before it runs a single instruction of its own. Returns the pid, or -1 when fork failed.
/// When the child could not exec, it writes its errno (4 bytes) to `report_fd` and exits 127.
pid_t CShims_spawn_limited(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
                           int stderr_fd, int report_fd, long long memory_limit, long long cpu_seconds);

/// pipe2 with O_CLOEXEC. Returns 0 or -1 with errno set.
int CShims_pipe_cloexec(int fds[2]);

/// Names the calling thread as the kernel shows it (at most 15 bytes; pthread_setname_np, which
/// glibc declares only with _GNU_SOURCE). Returns 0 or an error number (ERANGE: too long).
int CShims_name_this_thread(const char *name);

#endif
