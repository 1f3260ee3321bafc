#ifndef CIMAGEPREP_H
#define CIMAGEPREP_H

#include <stddef.h>

/// uploadd-image's work, in C because libvips's API is variadic (Swift cannot call it).

typedef enum { UPLOADD_FORMAT_JPEG = 0, UPLOADD_FORMAT_WEBP = 1, UPLOADD_FORMAT_KEEP = 2 } UploaddImageFormat;
typedef enum { UPLOADD_METADATA_KEEP = 0, UPLOADD_METADATA_STRIP_GPS = 1, UPLOADD_METADATA_STRIP = 2 } UploaddImageMetadata;

typedef struct {
    int max_side;             /* 0: no cap */
    int quality;              /* 1...100 */
    UploaddImageFormat format;
    long long max_bytes;      /* 0: no goal */
    UploaddImageMetadata metadata;
    long long max_pixels;     /* larger declared images are refused before decoding */
    int allow_untrusted;      /* libvips loaders marked untrusted (fuzzed less) */
} UploaddImageOptions;

typedef struct {
    int is_image;             /* 0: not an image this build decodes; nothing was written */
    int original_width, original_height;
    int width, height;
    int quality;              /* the quality finally used (max_bytes lowers it) */
    char loader[64];          /* libvips's loader, e.g. "jpegload_source" */
    char format[16];          /* what was written: "jpeg", "webp", "png", ... */
    char extension[8];        /* its file name extension, without the dot */
    char mime[32];
    long long size;           /* bytes written */
} UploaddImageResult;

/// Starts libvips (once): no operation cache, `threads` worker threads, untrusted loaders blocked
/// unless allowed. Returns 0, or -1 with a message in `error`.
int uploadd_image_start(const char *argv0, int threads, int allow_untrusted, char *error, size_t error_size);

/// Reads the image on `in_fd`, writes the prepared image to `out_fd`. Returns 0 (see
/// `result->is_image`), -1 with a message in `error` (a corrupt or refused image; when the
/// size goal cannot be met), or -2 when the prepared image could not be written (a full disk:
/// a problem of the machine's, not of the image).
int uploadd_image_prepare(int in_fd, int out_fd, const UploaddImageOptions *options, UploaddImageResult *result,
                          char *error, size_t error_size);

/* What uploadd_image_isolate achieved. */
typedef struct {
    int groups_dropped; /* 1: no supplementary groups left (it had CAP_SETGID: uploadd runs as root) */
    int namespaces;     /* 1: in user and network namespaces of its own */
    int unshare_errno;  /* why not (EPERM, EINVAL, ENOSPC, ...), when namespaces is 0 */
    int map_errno;      /* in its namespace, but its IDs could not be mapped (files cannot be made) */
} UploaddIsolation;

/* Gives the helper user and network namespaces of its own (unshare(CLONE_NEWUSER|CLONE_NEWNET)),
   its user and group IDs mapped to themselves and setgroups(2) denied in it, where the kernel
   allows (else nothing changes: see `isolation`). Must run while the process has one thread.
   Supplementary groups: dropped where the process may (CAP_SETGID). A user's own process cannot:
   Linux lets an unprivileged process map IDs into its namespace only once setgroups is denied
   there, so that no group can be shed that a file's mode denies access to ("rwx---r-x"). In the
   namespace the groups show as 65534 (nogroup) and still count for file access; Landlock is what
   keeps the helper from the files they open. */
void uploadd_image_isolate(UploaddIsolation *isolation);

/* From here on the process makes only the system calls an image needs (a seccomp allow-list;
   image.c lists them and why): the others fail with EPERM. No socket, no program, no new process
   or namespace, nothing aimed at another process (uploadd): no signal, limit, priority, affinity
   or I/O priority of another, no read or write of its memory, no ptrace. Sets no_new_privs.
   Returns 0, or -1 with errno. */
int uploadd_image_restrict_syscalls(void);

/* From here on (Landlock, where the kernel has it): files are read only beneath the library and
   data folders (/usr/lib, /lib, /usr/share, libvips's own) and a few of /sys and /proc that glibc
   and x265 read; made, written, truncated or removed only beneath `temporary` (regular files, for
   libvips's temporary images; NULL: nowhere); no program executed; no TCP (ABI 4); no ioctl on a
   device opened later (ABI 5); no signal to a process outside this one, not uploadd (ABI 6). What
   was open stays usable (stdin, stdout, stderr). Call it once libvips has started (it loads its
   modules then). Returns the Landlock ABI applied, 0 when the kernel has none (nothing
   applied), -1 with errno set, or -2 when the process has more than one thread already (the
   others would not be bound: nothing applied). */
int uploadd_image_confine(const char *temporary);

/* For tests only (uploadd-image's probe mode): tries the operation `name` ("read-file", "prlimit",
   "execve", ...: probes.c has the list) on `path`, or on process `pid` (at `address` in its
   memory), and returns 0 where it was let through, else its errno (EINVAL: no such probe). */
int uploadd_image_probe(const char *name, const char *path, int pid, unsigned long long address);
/* "EPERM" for EPERM, "ok" for 0. */
const char *uploadd_image_errno_name(int code);

#endif
