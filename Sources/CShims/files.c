#define _GNU_SOURCE
#include "CShims.h"

#include <fcntl.h>

int CShims_open_path_flag(void) {
    return O_PATH;
}

int CShims_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int CShims_fallocate(int fd, long long length) {
    return fallocate(fd, 0, 0, length);
}

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *crash_marker_path;
static struct sigaction crash_previous[65];
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

/* The jobs whose attempts run now (0: a free slot), for the crash marker: a job whose "running"
   record has not reached the journal yet is still known to have been running when the daemon died. */
#define RUNNING_JOB_SLOTS 128
static _Atomic uint64_t running_jobs[RUNNING_JOB_SLOTS];

int CShims_running_job_add(uint64_t id) {
    if (id == 0) return -1;
    for (int slot = 0; slot < RUNNING_JOB_SLOTS; slot++) {
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&running_jobs[slot], &expected, id)) return slot;
    }
    return -1;
}

void CShims_running_job_remove(int slot) {
    if (slot >= 0 && slot < RUNNING_JOB_SLOTS) atomic_store(&running_jobs[slot], 0);
}

/* Async-signal-safe: write only. The signal's number on the first line, then each running job's ID
   on a line of its own. */
void CShims_write_crash_marker(int fd, int signal_number) {
    char line[24];
    int length = 0;
    line[length++] = (char)('0' + signal_number / 10);
    line[length++] = (char)('0' + signal_number % 10);
    line[length++] = '\n';
    ssize_t ignored = write(fd, line, (size_t)length);
    for (int slot = 0; slot < RUNNING_JOB_SLOTS; slot++) {
        uint64_t id = atomic_load(&running_jobs[slot]);
        if (id == 0) continue;
        char digits[21];
        int count = 0;
        while (id > 0) {
            digits[count++] = (char)('0' + id % 10);
            id /= 10;
        }
        length = 0;
        while (count > 0) line[length++] = digits[--count];
        line[length++] = '\n';
        ignored = write(fd, line, (size_t)length);
    }
    (void)ignored;
}

/* Async-signal-safe: open, write, fsync, close, sigaction only. */
static void crash_marker_handler(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    int fd = open(crash_marker_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        CShims_write_crash_marker(fd, signal_number);
        fsync(fd);
        close(fd);
    }
    /* A real fault goes on to whoever handled it before (the Swift backtracer prints where it
       happened, then the fault recurs under the default action). A signal someone sent (kill,
       systemd's watchdog abort: si_code <= 0) must end the process too, and a handler that
       returns would let it run on: it gets the default action at once. Raised again, the signal
       stays blocked until this handler returns. */
    if (info != NULL && info->si_code > 0) {
        sigaction(signal_number, &crash_previous[signal_number], NULL);
    } else {
        signal(signal_number, SIG_DFL);
    }
    raise(signal_number);
}

int CShims_install_crash_marker(const char *path) {
    crash_marker_path = strdup(path);
    if (crash_marker_path == NULL) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = crash_marker_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t index = 0; index < sizeof(crash_signals) / sizeof(crash_signals[0]); index++) {
        int signal_number = crash_signals[index];
        if (sigaction(signal_number, &action, &crash_previous[signal_number]) != 0) return -1;
    }
    return 0;
}

#include <sys/vfs.h>

long CShims_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

#include <stdio.h>

int CShims_rename_noreplace(int old_dir, const char *old_name, int new_dir, const char *new_name) {
    return renameat2(old_dir, old_name, new_dir, new_name, RENAME_NOREPLACE);
}
