/* The sandbox's probes, for tests only (uploadd-image's probe mode, see main.swift): each tries,
   from inside the sandbox a real run has, one thing a hostile image's code could want to do, and
   says whether the kernel let it. Nothing here runs when the helper prepares an image. */
#define _GNU_SOURCE
#include "CImagePrep.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/ioprio.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* 0, or the errno of the first step that failed. */
static int outcome(long rc) { return rc < 0 ? errno : 0; }

int uploadd_image_probe(const char *name, const char *path, int pid, unsigned long long address) {
    if (strcmp(name, "read-file") == 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) close(fd);
        return outcome(fd);
    }
    if (strcmp(name, "read-folder") == 0) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) close(fd);
        return outcome(fd);
    }
    if (strcmp(name, "write-file") == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
        return outcome(fd);
    }
    /* Against `pid` (uploadd): each sets what it reads back, so that where it is let through it
       changes nothing. */
    if (strcmp(name, "prlimit") == 0) {
        struct rlimit limit;
        if (prlimit(pid, RLIMIT_NOFILE, NULL, &limit) != 0) return errno;
        return outcome(prlimit(pid, RLIMIT_NOFILE, &limit, NULL));
    }
    if (strcmp(name, "setpriority") == 0) {
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0); /* its own: inherited from uploadd's */
        if (nice == -1 && errno != 0) return errno;
        return outcome(setpriority(PRIO_PROCESS, (id_t)pid, nice));
    }
    if (strcmp(name, "sched_setaffinity") == 0) {
        cpu_set_t cpus;
        if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return errno;
        return outcome(sched_setaffinity(pid, sizeof cpus, &cpus));
    }
    if (strcmp(name, "ioprio_set") == 0) {
        long own = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
        /* Best effort, level 4: what a process of nice 0 without a class of its own gets. */
        if (own <= 0) own = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4);
        return outcome(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, pid, own));
    }
    if (strcmp(name, "process_vm_readv") == 0) {
        char byte;
        struct iovec local = {&byte, 1}, remote = {(void *)(uintptr_t)address, 1};
        return outcome(process_vm_readv(pid, &local, 1, &remote, 1, 0));
    }
    if (strcmp(name, "ptrace") == 0) {
        /* SEIZE does not stop uploadd; the helper exits right after, which detaches it. */
        return outcome(ptrace(PTRACE_SEIZE, pid, NULL, NULL));
    }
    if (strcmp(name, "kill") == 0) return outcome(kill(pid, 0));
    if (strcmp(name, "socket") == 0) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) close(fd);
        return outcome(fd);
    }
    if (strcmp(name, "connect") == 0) {
        /* On stdin, which is no socket: ENOTSOCK where connect() itself is let through. */
        struct sockaddr_un address_un = {.sun_family = AF_UNIX};
        snprintf(address_un.sun_path, sizeof address_un.sun_path, "%s", "/nonexistent/uploadd-probe");
        return outcome(connect(0, (struct sockaddr *)&address_un, sizeof address_un));
    }
    if (strcmp(name, "setgroups") == 0) return outcome(setgroups(0, NULL));
    if (strcmp(name, "unshare") == 0) return outcome(unshare(CLONE_NEWNET));
    if (strcmp(name, "io_uring_setup") == 0) {
        char params[120] = {0}; /* struct io_uring_params */
        long fd = syscall(SYS_io_uring_setup, 1, params);
        if (fd >= 0) close((int)fd);
        return outcome(fd);
    }
    if (strcmp(name, "execve") == 0) {
        /* Last: where it is let through, the helper is gone and its other lines with it. */
        char *const argv[] = {"true", NULL}, *const envp[] = {NULL};
        return outcome(execve("/bin/true", argv, envp));
    }
    return EINVAL;
}

const char *uploadd_image_errno_name(int code) {
    const char *name = code ? strerrorname_np(code) : "ok";
    return name ? name : "unknown";
}
