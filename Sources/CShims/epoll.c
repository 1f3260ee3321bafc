#define _GNU_SOURCE
#include "CShims.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

// struct epoll_event is packed on x86-64, which Swift does not import: these wrappers keep it in C.

int CShims_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int CShims_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int CShims_epoll_watch(int epoll, int fd, int readable, int writable, int watched) {
    struct epoll_event event = {0};
    event.events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
    event.data.fd = fd;
    int result = epoll_ctl(epoll, watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event);
    // Told wrong (a socket number reused): the other operation.
    if (result != 0 && (errno == ENOENT || errno == EEXIST))
        result = epoll_ctl(epoll, errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
    return result;
}

int CShims_epoll_forget(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
}

int CShims_epoll_wait(int epoll, int *fds, int *readiness, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, events, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        fds[i] = events[i].data.fd;
        readiness[i] = ((events[i].events & EPOLLIN) ? CSHIMS_READABLE : 0) |
                       ((events[i].events & EPOLLOUT) ? CSHIMS_WRITABLE : 0) |
                       ((events[i].events & (EPOLLERR | EPOLLHUP)) ? CSHIMS_FAILED : 0);
    }
    return count;
}
