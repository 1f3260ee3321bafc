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

/* Changed if `watched`, else added; told wrong (a socket number reused, a first arming), the
   other operation. */
static int add_or_change(int epoll, int fd, struct epoll_event *event, int watched) {
    int result = epoll_ctl(epoll, watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, event);
    if (result != 0 && (errno == ENOENT || errno == EEXIST))
        result = epoll_ctl(epoll, errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, event);
    return result;
}

int CShims_epoll_watch(int epoll, int fd, int readable, int writable, int watched) {
    struct epoll_event event = {0};
    event.events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
    event.data.fd = fd;
    return add_or_change(epoll, fd, &event, watched);
}

int CShims_epoll_forget(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
}

static int readiness_of(uint32_t events) {
    return ((events & EPOLLIN) ? CSHIMS_READABLE : 0) | ((events & EPOLLOUT) ? CSHIMS_WRITABLE : 0) |
           ((events & (EPOLLERR | EPOLLHUP)) ? CSHIMS_FAILED : 0);
}

int CShims_epoll_wait(int epoll, int *fds, int *readiness, int capacity, int timeout_ms) {
    // CShims_epoll_watch sets data.fd in a zeroed event: data.u64 is the fd.
    uint64_t tokens[64];
    int count = CShims_epoll_wait_tokens(epoll, tokens, readiness, capacity, timeout_ms);
    for (int i = 0; i < count; i++) fds[i] = (int)tokens[i];
    return count;
}

int CShims_epoll_arm_once(int epoll, int fd, uint64_t token, int readable, int writable) {
    struct epoll_event event = {0};
    event.events = EPOLLONESHOT | (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
    event.data.u64 = token;
    // Armed again far more often than added: a change first.
    return add_or_change(epoll, fd, &event, 1);
}

int CShims_epoll_wait_tokens(int epoll, uint64_t *tokens, int *readiness, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, events, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = events[i].data.u64;
        readiness[i] = readiness_of(events[i].events);
    }
    return count;
}
