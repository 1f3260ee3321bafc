#define _GNU_SOURCE
#include "CImagePrep.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vips/vips.h>

/* `what`, then libvips's own explanation (its last line), into `error`; clears libvips's buffer. */
static int fail(char *error, size_t error_size, const char *what) {
    char detail[512];
    snprintf(detail, sizeof detail, "%s", vips_error_buffer());
    vips_error_clear();
    size_t length = strlen(detail);
    while (length > 0 && (detail[length - 1] == '\n' || detail[length - 1] == ' ')) detail[--length] = 0;
    char *last = strrchr(detail, '\n');
    const char *shown = last ? last + 1 : detail;
    snprintf(error, error_size, "%s%s%s", what, *shown ? ": " : "", shown);
    return -1;
}

int uploadd_image_start(const char *argv0, int threads, int allow_untrusted, char *error, size_t error_size) {
    if (VIPS_INIT(argv0)) return fail(error, error_size, "cannot start libvips");
    vips_cache_set_max(0);
    if (threads > 0) vips_concurrency_set(threads);
    vips_block_untrusted_set(allow_untrusted ? FALSE : TRUE);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
   The sandbox, applied by main.swift in this order before the helper reads a byte of the image:
   its own namespaces (uploadd_image_isolate, while it has one thread), the system call allow-list
   (uploadd_image_restrict_syscalls), libvips's start (which loads its modules), then Landlock
   (uploadd_image_confine). uploadd set its resource limits before the exec (HelperProcess).
   ------------------------------------------------------------------------------------------------ */

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t length = strlen(text);
    ssize_t written = write(fd, text, length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == (ssize_t)length ? 0 : -1;
}

void uploadd_image_isolate(UploaddIsolation *isolation) {
    memset(isolation, 0, sizeof *isolation);
    uid_t uid = geteuid();
    gid_t gid = getegid();
    /* With CAP_SETGID (uploadd run as root) the supplementary groups go outright. A user's own
       process cannot shed them: see the header. */
    isolation->groups_dropped = setgroups(0, NULL) == 0;
    /* A user namespace of its own, and in it a network namespace with nothing but a loopback that
       is down. The one call does both or neither: where the kernel refuses (user namespaces
       turned off, AppArmor's restriction on them, systemd's RestrictNamespaces=) nothing changed
       and the helper goes on without. */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
        isolation->unshare_errno = errno;
        return;
    }
    isolation->namespaces = 1;
    /* Its own IDs mapped to themselves, so that what it makes in its temporary folder is the
       user's as before (an unmapped ID cannot create files). An unprivileged process may write
       its gid_map only once setgroups(2) is denied in the namespace ("deny"); denied it is then
       for good, which is the point. Kernels before 3.19 have no /proc/self/setgroups. */
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_text("/proc/self/uid_map", map) != 0) goto unmapped;
    if (write_text("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) goto unmapped;
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_text("/proc/self/gid_map", map) != 0) goto unmapped;
    return;
unmapped:
    isolation->map_errno = errno;
}

/* The system calls the helper may make; every other one fails with EPERM.

   An allow-list rather than a list of what is refused: a refusal list misses what nobody thought
   of (it once let through prlimit64 and setpriority on uploadd itself). Taken from strace -f -c
   over runs of every format the helper reads (JPEG, PNG, WebP, GIF, TIFF, HEIC; shrinking,
   keeping the format, a size goal; libvips 8.14, libheif 1.15, glibc 2.36, Swift 6), then widened
   to the neighbours of each call that a newer glibc or libvips may use instead (statx for
   newfstatat, preadv2 for pread64, openat2, faccessat2, close_range, memfd_create for ORC's code
   buffer, PR_SET_VMA for glibc's malloc): it is a list of kinds of work, not of one build's calls.
   What a newer library needs beyond it fails with "Operation not permitted" rather than
   crashing the helper: a job failing with that after an upgrade of libvips or glibc means the
   list needs what `strace -f -c uploadd-image < image > /dev/null` shows there (the integration
   tests cover every format).

   Refused and harmless: getpeername, with which GLib asks whether stderr is journald's socket
   (it is uploadd's pipe; refused, GLib writes plain lines, which is what uploadd reads).

   What it leaves out on purpose: sockets (not even AF_UNIX: uploadd's control socket is one) and
   connect, io_uring (which can open files and sockets without the calls below), programs
   (execve), new processes and namespaces (clone without CLONE_THREAD, clone3's flags being out
   of seccomp's reach, unshare, setns), anything aimed at another process (kill, tgkill, prlimit64,
   setpriority, sched_setaffinity and the scheduler's setters, ioprio_set, process_vm_readv and
   _writev, ptrace, pidfd_*, get_robust_list, move_pages, migrate_pages), perf_event_open, bpf,
   the key rings, mount and its relatives, userfaultfd, personality, file names being changed or
   made other than regular files (rename, link, symlink, mkdir, mknod, chmod, chown, utimes),
   flock and leases (which would hold up uploadd's own opens), and fcntl's F_SETOWN (signals
   through I/O). */
static const char *const allowed_syscalls[] = {
    /* Files, through descriptors it has or opens (Landlock decides which paths). */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
    "lseek", "close", "close_range", "dup", "dup2", "dup3", "open", "openat", "openat2", "stat", "fstat",
    "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2", "readlink",
    "readlinkat", "getdents64", "getcwd", "ftruncate", "fallocate", "fsync", "fdatasync", "fadvise64",
    "unlink", "unlinkat", "umask", "pipe", "pipe2", "eventfd2", "memfd_create",
    "poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
    /* Memory. */
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "membarrier",
    "get_mempolicy", "set_mempolicy", "mbind",
    /* Threads (clone, restricted below), waiting, time. */
    "futex", "futex_waitv", "set_robust_list", "rseq", "set_tid_address", "gettid", "sched_yield",
    "sched_get_priority_max", "sched_get_priority_min", "getcpu", "nanosleep", "clock_nanosleep",
    "clock_gettime", "clock_getres", "gettimeofday", "time", "exit", "exit_group", "restart_syscall",
    /* Signals to itself (the senders are restricted below). */
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
    "sigaltstack",
    /* What it may know about itself and the machine. */
    "getpid", "getppid", "getpgrp", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
    "getgroups", "getrlimit", "setrlimit", "getrusage", "times", "sysinfo", "uname", "getrandom", "arch_prctl",
    /* Landlock, applied after libvips has started (it can only take rights away). */
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
    /* Newer glibc: shadow stacks, sealed mappings. */
    "map_shadow_stack", "mseal",
};

int uploadd_image_restrict_syscalls(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    scmp_filter_ctx context = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!context) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof allowed_syscalls / sizeof allowed_syscalls[0]; i++) {
        int number = seccomp_syscall_resolve_name(allowed_syscalls[i]);
        /* A call newer than this libseccomp (or of another architecture) stays refused. */
        if (number != __NR_SCMP_ERROR) rc = seccomp_rule_add(context, SCMP_ACT_ALLOW, number, 0);
    }
    /* Process IDs compare as the 64-bit registers the kernel reads: only these exact values pass. */
    scmp_datum_t self = (scmp_datum_t)getpid();
#define ALLOW(name, ...)                                                                           \
    if (rc == 0) rc = seccomp_rule_add(context, SCMP_ACT_ALLOW, SCMP_SYS(name), __VA_ARGS__)
    /* Its own limits (glibc's getrlimit is prlimit64(0, ...)), never uploadd's. */
    ALLOW(prlimit64, 1, SCMP_A0(SCMP_CMP_EQ, 0));
    ALLOW(prlimit64, 1, SCMP_A0(SCMP_CMP_EQ, self));
    /* Signals: abort() and raise() to itself (tgkill(getpid(), ...)); Landlock's scope adds the
       same where the kernel has it (ABI 6). */
    ALLOW(kill, 1, SCMP_A0(SCMP_CMP_EQ, self));
    ALLOW(tgkill, 1, SCMP_A0(SCMP_CMP_EQ, self));
    /* x265 (HEIC encoding) lowers its own threads' priority and pins them: each only to itself,
       the calling thread (who = 0). */
    ALLOW(getpriority, 2, SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS), SCMP_A1(SCMP_CMP_EQ, 0));
    ALLOW(setpriority, 2, SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS), SCMP_A1(SCMP_CMP_EQ, 0));
    ALLOW(sched_setaffinity, 1, SCMP_A0(SCMP_CMP_EQ, 0));
    ALLOW(sched_getaffinity, 1, SCMP_A0(SCMP_CMP_EQ, 0)); /* GLib's count of CPUs */
    ALLOW(sched_getaffinity, 1, SCMP_A0(SCMP_CMP_EQ, self));
    ALLOW(sched_getparam, 1, SCMP_A0(SCMP_CMP_EQ, 0));
    ALLOW(sched_getscheduler, 1, SCMP_A0(SCMP_CMP_EQ, 0));
    /* Threads only: no new process, no namespace. */
    scmp_datum_t forbidden_clone = CLONE_THREAD | CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                   CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
    ALLOW(clone, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, forbidden_clone, CLONE_THREAD));
    /* isatty() and friends; not TIOCSTI (typing into a terminal), nor any other request. */
    ALLOW(ioctl, 1, SCMP_A1(SCMP_CMP_EQ, TCGETS));
    ALLOW(ioctl, 1, SCMP_A1(SCMP_CMP_EQ, TIOCGWINSZ));
    ALLOW(ioctl, 1, SCMP_A1(SCMP_CMP_EQ, FIONREAD));
    ALLOW(ioctl, 1, SCMP_A1(SCMP_CMP_EQ, FIOCLEX));
    ALLOW(ioctl, 1, SCMP_A1(SCMP_CMP_EQ, FIONCLEX));
    static const int fcntl_commands[] = {F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD,     F_SETFD,
                                         F_GETFL, F_SETFL,         F_GET_SEALS, F_ADD_SEALS};
    for (size_t i = 0; i < sizeof fcntl_commands / sizeof fcntl_commands[0]; i++) {
        ALLOW(fcntl, 1, SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)fcntl_commands[i]));
    }
    /* Thread names (libvips's workers), glibc's names for its mappings, and the no_new_privs
       Landlock wants (set already). */
    static const int prctl_options[] = {PR_SET_NAME, PR_GET_NAME, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS,
                                        PR_GET_DUMPABLE, PR_SET_VMA};
    for (size_t i = 0; i < sizeof prctl_options / sizeof prctl_options[0]; i++) {
        ALLOW(prctl, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)prctl_options[i]));
    }
#undef ALLOW
    /* clone3 keeps its flags in memory, out of the filter's sight: ENOSYS, on which glibc creates
       its threads with clone() (checked above) instead. */
    if (rc == 0) rc = seccomp_rule_add(context, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0) rc = seccomp_load(context);
    seccomp_release(context);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* Landlock's ABI, declared here: Debian 12's headers stop at ABI 2, and the kernel's structures
   only grow (a shorter size tells it what an older caller knows). */
#define UPLOADD_LANDLOCK_TRUNCATE (1ULL << 14)           /* ABI 3 */
#define UPLOADD_LANDLOCK_NET_BIND_TCP (1ULL << 0)        /* ABI 4 */
#define UPLOADD_LANDLOCK_NET_CONNECT_TCP (1ULL << 1)     /* ABI 4 */
#define UPLOADD_LANDLOCK_IOCTL_DEV (1ULL << 15)          /* ABI 5 */
#define UPLOADD_LANDLOCK_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define UPLOADD_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)        /* ABI 6 */
struct uploadd_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

/* What the helper reads once libvips has started, found with strace -f over every format (see
   the allow-list above): of its own accord no file at all but glibc's /proc/sys/vm/overcommit_memory
   (malloc), encoding HEIC x265's look at /sys/devices/system/node, and, for a temporary image,
   GLib's /dev/urandom (its random seed); CPU counts come from /sys/devices/system/cpu. The
   folders of libraries and their data stay readable for what loads late in other builds:
   libvips's modules (8.15 loads a loader's on first use), iconv's gconv modules, gettext's
   catalogues, ICC profiles, fonts. SVG with text (untrusted-loaders only) reads fontconfig's
   /etc/fonts and /var/cache/fontconfig, and gettext /usr/share/locale/locale.alias, a symlink to
   /etc/locale.alias. Nothing else of /etc (the dynamic loader needs ld.so.cache only at the
   start, and searches /lib and /usr/lib without it), no home, no /tmp: the image and the output
   come as descriptors, which Landlock leaves alone. */
static const char *const readable_paths[] = {
    "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share", "/sys/devices/system/cpu", "/sys/devices/system/node",
    "/proc/sys/vm/overcommit_memory", "/dev/urandom", "/etc/fonts", "/var/cache/fontconfig", "/etc/locale.alias",
};

/* Adds a rule granting `access` beneath `path` (on the file itself when it is one: only the rights
   a file has). A path that does not exist here is skipped. */
static int allow_beneath(int ruleset, const char *path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    struct stat info;
    if (fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) {
        access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                  UPLOADD_LANDLOCK_TRUNCATE | UPLOADD_LANDLOCK_IOCTL_DEV;
    }
    struct landlock_path_beneath_attr beneath = {.allowed_access = access, .parent_fd = fd};
    int rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* The threads of this process (entries of /proc/self/task), or -1. */
static int thread_count(void) {
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(tasks));) count += entry->d_name[0] != '.';
    closedir(tasks);
    return count;
}

int uploadd_image_confine(const char *temporary) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0; /* no Landlock in this kernel, or it is turned off */
    /* Landlock binds the calling thread and those it starts later, not threads already running.
       libvips 8.14 starts none before its first operation; one that did would escape it. */
    if (thread_count() != 1) return -2;
    /* Every access this kernel's Landlock knows is handled: what no rule grants is refused. */
    uint64_t handled = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                       LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                       LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                       LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                       LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) handled |= UPLOADD_LANDLOCK_TRUNCATE;
    if (abi >= 5) handled |= UPLOADD_LANDLOCK_IOCTL_DEV;
    struct uploadd_landlock_ruleset_attr attributes = {.handled_access_fs = handled};
    size_t size = sizeof attributes.handled_access_fs;
    if (abi >= 4) {
        /* No TCP either (seccomp refuses sockets already). */
        attributes.handled_access_net = UPLOADD_LANDLOCK_NET_BIND_TCP | UPLOADD_LANDLOCK_NET_CONNECT_TCP;
        size = offsetof(struct uploadd_landlock_ruleset_attr, scoped);
    }
    if (abi >= 6) {
        /* No signal to a process outside this one (uploadd, the user's others), no abstract socket. */
        attributes.scoped = UPLOADD_LANDLOCK_SCOPE_SIGNAL | UPLOADD_LANDLOCK_SCOPE_ABSTRACT_UNIX;
        size = sizeof attributes;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, size, 0);
    if (ruleset < 0) return -1;
    uint64_t reads = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof readable_paths / sizeof readable_paths[0]; i++) {
        rc = allow_beneath(ruleset, readable_paths[i], reads);
    }
    /* libvips's own folder, wherever it is installed (/usr/local/lib, /opt/...): its modules. */
    Dl_info library;
    if (rc == 0 && dladdr((void *)vips_init, &library) && library.dli_fname && strchr(library.dli_fname, '/')) {
        char folder[4096];
        snprintf(folder, sizeof folder, "%s", library.dli_fname);
        *strrchr(folder, '/') = 0;
        if (folder[0]) rc = allow_beneath(ruleset, folder, reads);
    }
    /* The private temporary folder uploadd made for this run: regular files only (libvips's
       temporary images, ORC's code buffer), made, written, read back, truncated, removed. */
    if (rc == 0 && temporary) {
        uint64_t temporary_files = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                   LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE;
        if (abi >= 3) temporary_files |= UPLOADD_LANDLOCK_TRUNCATE;
        int folder = open(temporary, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (folder < 0) {
            rc = -1;
        } else {
            struct landlock_path_beneath_attr beneath = {.allowed_access = temporary_files, .parent_fd = folder};
            rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
            close(folder);
        }
    }
    if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) rc = -1;
    if (rc == 0) rc = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
    int saved = errno;
    close(ruleset);
    errno = saved;
    return rc == 0 ? (int)abi : -1;
}

typedef struct {
    const char *format, *extension, *mime;
} Kind;

static const Kind JPEG = {"jpeg", "jpg", "image/jpeg"};
static const Kind WEBP = {"webp", "webp", "image/webp"};
static const Kind PNG = {"png", "png", "image/png"};
static const Kind GIF = {"gif", "gif", "image/gif"};
static const Kind HEIF = {"heif", "heic", "image/heic"};
static const Kind TIFF = {"tiff", "tif", "image/tiff"};

/* What `keep` writes for an image read by `loader`: its own format where libvips can write it. */
static Kind kept_kind(const char *loader) {
    if (vips_isprefix("jpegload", loader)) return JPEG;
    if (vips_isprefix("webpload", loader)) return WEBP;
    if (vips_isprefix("pngload", loader)) return PNG;
    if (vips_isprefix("gifload", loader)) return GIF;
    if (vips_isprefix("heifload", loader)) return HEIF;
    if (vips_isprefix("tiffload", loader)) return TIFF;
    return JPEG;
}

/* The photo formats uploadd prepares. Anything else libvips could read (a matrix of numbers in a
   text file, SVG, PDF, FITS, ...) is not taken for a photo: it goes as it is, unless the SPEC
   says untrusted-loaders (libvips's own untrusted ones stay blocked otherwise). */
static int is_photo_loader(const char *loader) {
    static const char *photos[] = {"jpegload", "pngload", "webpload", "gifload", "tiffload", "heifload"};
    for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
        if (vips_isprefix(photos[i], loader)) return 1;
    }
    return 0;
}

/* The loader's nickname ("jpegload_source") from the type name libvips gives back. */
static const char *nickname(const char *type_name) {
    GType type = g_type_from_name(type_name);
    const char *name = type ? vips_nickname_find(type) : NULL;
    return name ? name : type_name;
}

/* Encodes `image` as `kind` into `target`. */
static int save(VipsImage *image, VipsTarget *target, Kind kind, int quality, int strip) {
    int rc;
    /* Optimised Huffman tables save a few per cent but make libjpeg hold every coefficient of the
       image: only for images of up to 12 megapixels (36 MB of them at the most). */
    int optimize = (long long)vips_image_get_width(image) * vips_image_get_height(image) <= 12000000;
    if (kind.format == JPEG.format)
        rc = vips_jpegsave_target(image, target, "Q", quality, "strip", strip, "optimize_coding", optimize, NULL);
    else if (kind.format == WEBP.format)
        rc = vips_webpsave_target(image, target, "Q", quality, "strip", strip, NULL);
    else if (kind.format == PNG.format)
        rc = vips_pngsave_target(image, target, "strip", strip, NULL);
    else if (kind.format == GIF.format)
        rc = vips_gifsave_target(image, target, "strip", strip, NULL);
    else if (kind.format == HEIF.format)
        rc = vips_heifsave_target(image, target, "Q", quality, "strip", strip, NULL);
    else
        rc = vips_tiffsave_target(image, target, "Q", quality, "strip", strip, NULL);
    return rc;
}

/* Encodes `image` as `kind` into memory; the bytes stay valid while *blob is referenced. */
static int encode(VipsImage *image, Kind kind, int quality, int strip, VipsBlob **blob) {
    VipsTarget *target = vips_target_new_to_memory();
    if (!target) return -1;
    int rc = save(image, target, kind, quality, strip);
    if (rc == 0) g_object_get(target, "blob", blob, NULL);
    g_object_unref(target);
    return rc == 0 && *blob ? 0 : -1;
}

/* Drops the location: the EXIF GPS directory (ifd3) and XMP, which can carry it too. */
static void *remove_location_field(VipsImage *image, const char *name, GValue *value, void *removed) {
    (void)value;
    if (vips_isprefix("exif-ifd3-", name) || strcmp(name, "xmp-data") == 0) {
        char **list = removed;
        for (int i = 0; i < 255; i++) {
            if (!list[i]) {
                list[i] = g_strdup(name);
                break;
            }
        }
    }
    (void)image;
    return NULL;
}

static void strip_location(VipsImage *image) {
    char *removed[256] = {0};
    vips_image_map(image, remove_location_field, removed);
    for (int i = 0; removed[i]; i++) {
        vips_image_remove(image, removed[i]);
        g_free(removed[i]);
    }
}

/* Whether the file system under `fd` has no room left (under 64 KiB for us): a streamed save that
   failed there most likely failed writing, whatever libvips's words for it. */
static int output_is_full(int fd) {
    struct statvfs info;
    if (fstatvfs(fd, &info) != 0) return 0;
    return (unsigned long long)info.f_bavail * info.f_frsize < 64 * 1024;
}

static int write_all(int fd, const void *bytes, size_t length) {
    const char *at = bytes;
    while (length > 0) {
        ssize_t written = write(fd, at, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        at += written;
        length -= (size_t)written;
    }
    return 0;
}

/* Converts to what JPEG and WebP hold: 8-bit sRGB (or grey), alpha flattened on white for JPEG.
   Takes over *image: on success it is the converted image, on failure it is unreffed and NULL. */
static int normalise(VipsImage **image, Kind kind) {
    VipsImage *in = *image, *out = NULL;
    *image = NULL;
    VipsInterpretation space = vips_image_get_interpretation(in);
    if (space != VIPS_INTERPRETATION_sRGB && space != VIPS_INTERPRETATION_B_W) {
        int rc = vips_colourspace(in, &out, VIPS_INTERPRETATION_sRGB, NULL);
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    if (vips_image_get_format(in) != VIPS_FORMAT_UCHAR) {
        int rc = vips_cast(in, &out, VIPS_FORMAT_UCHAR, NULL);
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    if (kind.format == JPEG.format && vips_image_hasalpha(in)) {
        int colours = vips_image_get_bands(in) - 1;
        VipsArrayDouble *white = colours >= 3 ? vips_array_double_newv(3, 255.0, 255.0, 255.0)
                                              : vips_array_double_newv(1, 255.0);
        int rc = vips_flatten(in, &out, "background", white, NULL);
        vips_area_unref(VIPS_AREA(white));
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    *image = in;
    return 0;
}

int uploadd_image_prepare(int in_fd, int out_fd, const UploaddImageOptions *options, UploaddImageResult *result,
                          char *error, size_t error_size) {
    memset(result, 0, sizeof *result);
    VipsSource *source = vips_source_new_from_descriptor(in_fd);
    if (!source) return fail(error, error_size, "cannot read the file");
    const char *loader = vips_foreign_find_load_source(source);
    if (!loader) {
        /* Not an image this build reads (or one of the loaders kept blocked): sent as it is. */
        vips_error_clear();
        g_object_unref(source);
        return 0;
    }
    loader = nickname(loader);
    if (!options->allow_untrusted && !is_photo_loader(loader)) {
        g_object_unref(source);
        return 0;
    }
    snprintf(result->loader, sizeof result->loader, "%s", loader);
    VipsImage *header = vips_image_new_from_source(source, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    g_object_unref(source);
    if (!header) return fail(error, error_size, "not a readable image");
    result->original_width = vips_image_get_width(header);
    result->original_height = vips_image_get_height(header);
    int upright = vips_image_get_orientation(header) <= 1;
    g_object_unref(header);
    long long pixels = (long long)result->original_width * result->original_height;
    if (pixels > options->max_pixels) {
        snprintf(error, error_size,
                 "the image declares %dx%d pixels, more than the limit of %lld megapixels (max-pixels=)",
                 result->original_width, result->original_height, options->max_pixels / 1000000);
        return -1;
    }
    result->is_image = 1;

    if (lseek(in_fd, 0, SEEK_SET) < 0) return fail(error, error_size, "cannot read the file again");
    source = vips_source_new_from_descriptor(in_fd);
    if (!source) return fail(error, error_size, "cannot read the file");
    VipsImage *image = NULL;
    int rc;
    if (options->max_side > 0) {
        /* Shrink-on-load where the format can (JPEG decodes at 1/2, 1/4, 1/8): memory stays small. */
        /* A truncated file fails rather than arrive with a grey bottom (the loader's own option). */
        rc = vips_thumbnail_source(source, &image, options->max_side, "height", options->max_side, "size",
                                   VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", NULL);
    } else {
        /* Full size: streamed line by line, unless it must be turned (which needs all of it). */
        VipsImage *loaded =
            vips_image_new_from_source(source, "", "access", upright ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
                                       "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
        rc = loaded ? vips_autorot(loaded, &image, NULL) : -1;
        if (loaded) g_object_unref(loaded);
    }
    g_object_unref(source);
    if (rc) return fail(error, error_size, "cannot decode the image");

    Kind kind = options->format == UPLOADD_FORMAT_WEBP ? WEBP
                : options->format == UPLOADD_FORMAT_KEEP ? kept_kind(loader)
                                                         : JPEG;
    if (kind.format == JPEG.format || kind.format == WEBP.format) {
        if (normalise(&image, kind)) return fail(error, error_size, "cannot convert the image to sRGB");
    }
    if (options->metadata == UPLOADD_METADATA_STRIP_GPS) strip_location(image);
    int strip = options->metadata == UPLOADD_METADATA_STRIP;
    int quality = options->quality;

    VipsBlob *blob = NULL;
    if (options->max_bytes <= 0) {
        /* Streamed from decoder to file: only a few lines of pixels are in memory at once. */
        VipsTarget *target = vips_target_new_to_descriptor(out_fd);
        rc = target ? save(image, target, kind, quality, strip) : -1;
        if (target) g_object_unref(target);
        result->width = vips_image_get_width(image);
        result->height = vips_image_get_height(image);
        result->quality = quality;
        g_object_unref(image);
        /* Decoding happens as the encoder pulls: a damaged file fails here, with the decoder's words.
           So does a full disk under the output, which is the machine's problem, not the image's. */
        if (rc && output_is_full(out_fd)) {
            snprintf(error, error_size, "cannot write the prepared image: %s", strerror(ENOSPC));
            return -2;
        }
        if (rc) return fail(error, error_size, "cannot convert the image");
        off_t end = lseek(out_fd, 0, SEEK_CUR);
        result->size = end > 0 ? (long long)end : 0;
        snprintf(result->format, sizeof result->format, "%s", kind.format);
        snprintf(result->extension, sizeof result->extension, "%s", kind.extension);
        snprintf(result->mime, sizeof result->mime, "%s", kind.mime);
        return 0;
    } else {
        /* A size goal: render once into memory, then encode at lower quality, then smaller, until
           it fits. */
        VipsImage *rendered = vips_image_copy_memory(image);
        g_object_unref(image);
        if (!rendered) return fail(error, error_size, "cannot decode the image");
        image = rendered;
        long long smallest = 0;
        for (int tries = 0; tries < 24; tries++) {
            if (encode(image, kind, quality, strip, &blob)) {
                g_object_unref(image);
                return fail(error, error_size, "cannot encode the image");
            }
            size_t length = 0;
            vips_blob_get(blob, &length);
            if ((long long)length <= options->max_bytes) break;
            smallest = (long long)length;
            vips_area_unref(VIPS_AREA(blob));
            blob = NULL;
            int longest = VIPS_MAX(vips_image_get_width(image), vips_image_get_height(image));
            if (quality > 40 && kind.format != PNG.format && kind.format != GIF.format) {
                quality = VIPS_MAX(quality - 10, 40);
            } else if (longest > 256) {
                VipsImage *smaller = NULL;
                if (vips_resize(image, &smaller, 0.8, NULL)) {
                    g_object_unref(image);
                    return fail(error, error_size, "cannot resize the image");
                }
                g_object_unref(image);
                image = vips_image_copy_memory(smaller);
                g_object_unref(smaller);
                if (!image) return fail(error, error_size, "cannot resize the image");
            } else {
                break;
            }
        }
        if (!blob) {
            snprintf(error, error_size,
                     "cannot make the image fit in %lld bytes (max-bytes=): the smallest try was %lld bytes at "
                     "%dx%d, quality %d",
                     options->max_bytes, smallest, vips_image_get_width(image), vips_image_get_height(image),
                     quality);
            g_object_unref(image);
            return -1;
        }
    }
    result->width = vips_image_get_width(image);
    result->height = vips_image_get_height(image);
    result->quality = quality;
    g_object_unref(image);
    size_t length = 0;
    const void *bytes = vips_blob_get(blob, &length);
    rc = write_all(out_fd, bytes, length);
    vips_area_unref(VIPS_AREA(blob));
    if (rc) {
        snprintf(error, error_size, "cannot write the prepared image: %s", strerror(errno));
        return -2;
    }
    result->size = (long long)length;
    snprintf(result->format, sizeof result->format, "%s", kind.format);
    snprintf(result->extension, sizeof result->extension, "%s", kind.extension);
    snprintf(result->mime, sizeof result->mime, "%s", kind.mime);
    return 0;
}
