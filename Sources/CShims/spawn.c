#define _GNU_SOURCE
#include "CShims.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

/* Between fork and exec only async-signal-safe calls: setrlimit, dup2, close_range, sigaction,
   sigprocmask, setsid, prctl and execve are. A failure is reported through `report_fd` (errno
   as 4 bytes) and the child exits 127; exec closes `report_fd` (O_CLOEXEC), so the parent reads
   EOF when the program started. */
pid_t CShims_spawn_limited(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
                           int stderr_fd, int report_fd, long long memory_limit, long long cpu_seconds) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;

    int report = report_fd;
    int step_errno = 0;
    /* Default handlers first, then an empty mask: no daemon handler can run in the child. */
    struct sigaction default_action = {0};
    default_action.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; signal_number++) {
        sigaction(signal_number, &default_action, NULL); /* fails harmlessly for SIGKILL, SIGSTOP */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Its own session: the daemon's terminal signals do not reach it. PR_SET_PDEATHSIG fires when
       the *thread* that forked exits, so uploadd forks from one thread that lives as long as it
       (HelperProcess's spawner); the check after it catches a daemon that died in between. */
    setsid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto failed;
    if (getppid() != parent) _exit(127);
    struct rlimit none_core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none_core) != 0) goto failed;
    if (memory_limit > 0) {
        struct rlimit limit = {(rlim_t)memory_limit, (rlim_t)memory_limit};
        if (setrlimit(RLIMIT_AS, &limit) != 0) goto failed;
    }
    if (cpu_seconds > 0) {
        struct rlimit limit = {(rlim_t)cpu_seconds, (rlim_t)cpu_seconds + 1};
        if (setrlimit(RLIMIT_CPU, &limit) != 0) goto failed;
    }
    /* Out of the way first, so that no dup2 below closes a descriptor another one still needs. */
    int high_in = fcntl(stdin_fd, F_DUPFD, 10), high_out = fcntl(stdout_fd, F_DUPFD, 10);
    int high_err = fcntl(stderr_fd, F_DUPFD, 10), high_report = fcntl(report_fd, F_DUPFD, 10);
    if (high_in < 0 || high_out < 0 || high_err < 0 || high_report < 0) goto failed;
    report = high_report;
    if (dup2(high_report, 3) < 0) goto failed;
    report = 3;
    if (dup2(high_in, 0) < 0 || dup2(high_out, 1) < 0 || dup2(high_err, 2) < 0) goto failed;
    /* Nothing but 0-3 stays open; 3 closes on exec. */
    if (close_range(4, ~0U, 0) != 0) {
        for (int fd = 4; fd < 65536; fd++) close(fd);
    }
    if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0) goto failed;
    execve(path, argv, envp);
failed:
    step_errno = errno;
    (void)!write(report, &step_errno, sizeof step_errno);
    _exit(127);
}

int CShims_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
