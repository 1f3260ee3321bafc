#define _GNU_SOURCE
#include "CShims.h"

#include <fcntl.h>

int CShims_open_path_flag(void) {
    return O_PATH;
}

int CShims_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *crash_marker_path;
static struct sigaction crash_previous[65];
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

/* Async-signal-safe: open, write, fsync, close, sigaction only. */
static void crash_marker_handler(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    int fd = open(crash_marker_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        char text[4] = {(char)('0' + signal_number / 10), (char)('0' + signal_number % 10), '\n', 0};
        ssize_t ignored = write(fd, text, 3);
        (void)ignored;
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
