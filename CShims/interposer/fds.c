// The fd life cycle: close, dup and friends, fcntl, close_range, closefrom. A socket is one
// connection however many fds refer to it (conns.c): it ends at its last close.
#include "fds.h"
#include "context.h"
#include "conns.h"
#include "events.h"
#include "hooks.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"


// fd is about to be closed: it no longer refers to its connection. Drop the reference
// *before* the real close, so that a socket another thread gets with the same number right
// after is never mistaken for this one. Returns 1 with the close event to push afterwards.
int wj_closing(int fd, wj_event *ev) {
    if (WJ_LIKELY(!wj_fd_ref(fd))) return 0;
    return wj_fd_drop(fd, wj_now_ns(), ev);
}

void wj_closed(wj_event *ev) {
    int err = errno;
    wj_push(ev);
    errno = err;
}

static __attribute__((noinline)) int close_tracked(int fd) {
    wj_event ev;
    int ended = wj_closing(fd, &ev);
    int r = WJ_REAL(close)(fd);
    if (ended) wj_closed(&ev);
    return r;
}

// A file's close (nginx: one a request) is a lookup and a tail call: no event on the stack.
int wj_hook_close(int fd) {
    if (WJ_LIKELY(!wj_fd_ref(fd))) return WJ_REAL(close)(fd);
    return close_tracked(fd);
}

// dup2/dup3 onto newfd closes whatever newfd was, if oldfd is valid (else nothing happens).
void wj_replacing(int oldfd, int newfd) {
    if (oldfd == newfd) return;
    uint64_t ref = wj_fd_ref(newfd);
    if (WJ_LIKELY(!ref)) return;
    int err = errno;
    wj_event ev;
    if (syscall(SYS_fcntl, oldfd, F_GETFD) >= 0 && wj_fd_drop(newfd, wj_now_ns(), &ev)) wj_push(&ev);
    errno = err;
}

// newfd (a successful dup of oldfd) refers to oldfd's connection too.
int wj_duplicated(int oldfd, int newfd) {
    if (newfd < 0 || newfd == oldfd) return newfd;
    uint64_t ref = wj_fd_ref(oldfd);
    if (WJ_LIKELY(!ref)) return newfd;
    int err = errno;
    wj_fd_add_ref(newfd, ref);
    errno = err;
    return newfd;
}

int wj_hook_dup(int fd) { return wj_duplicated(fd, WJ_REAL(dup)(fd)); }

int wj_hook_dup2(int oldfd, int newfd) {
    wj_replacing(oldfd, newfd);
    return wj_duplicated(oldfd, WJ_REAL(dup2)(oldfd, newfd));
}

int wj_hook_dup3(int oldfd, int newfd, int flags) {
    wj_replacing(oldfd, newfd);
    return wj_duplicated(oldfd, WJ_REAL(dup3)(oldfd, newfd, flags));
}

// Reads on a socket known to be non-blocking are not timed for blocked stalls, and its calls
// go straight to the kernel (io.c).
static void note_nonblock(int fd, long flags) {
    wj_conn *c = wj_fd_conn(fd);
    if (c) wj_conn_note_nonblock(c, (flags & O_NONBLOCK) != 0);
}

// After fcntl(fd, cmd, arg) returned r.
int wj_fcntl_done(int fd, int cmd, long arg, int r) {
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return wj_duplicated(fd, r);
    if (cmd == F_SETFL && r == 0) note_nonblock(fd, arg);
    return r;
}

// After ioctl(fd, request, arg) returned r: FIONBIO sets or clears O_NONBLOCK (CPython's
// setblocking and settimeout use it).
int wj_ioctl_done(int fd, unsigned long request, void *arg, int r) {
    if (request == FIONBIO && r == 0 && arg) {
        int err = errno;
        note_nonblock(fd, *(const int *)arg ? O_NONBLOCK : 0);
        errno = err;
    }
    return r;
}

WJ_EXPORT int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (WJ_UNLIKELY(wj_gate() != WJ_GATE_RUN)) return WJ_REAL(ioctl)(fd, request, arg);
    return wj_ioctl_done(fd, request, arg, WJ_REAL(ioctl)(fd, request, arg));
}

// fcntl's third argument is an int or a pointer, passed in the same register either way.
#define WJ_FCNTL(name)                                                       \
    va_list ap;                                                              \
    va_start(ap, cmd);                                                       \
    void *arg = va_arg(ap, void *);                                          \
    va_end(ap);                                                              \
    if (WJ_UNLIKELY(wj_gate() != WJ_GATE_RUN)) return WJ_REAL(name)(fd, cmd, arg); \
    return wj_fcntl_done(fd, cmd, (long)arg, WJ_REAL(name)(fd, cmd, arg))

WJ_EXPORT int fcntl(int fd, int cmd, ...) { WJ_FCNTL(fcntl); }
WJ_EXPORT int fcntl64(int fd, int cmd, ...) { WJ_FCNTL(fcntl64); }

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

// After close_range returned r. (wedjat holds no fd in the app's table: nothing of its own to
// protect from it.)
void wj_close_range_done(unsigned lo, unsigned hi, int flags, int r) {
    if (r != 0 || (flags & CLOSE_RANGE_CLOEXEC)) return;
    int err = errno;
    wj_close_tracked_range(lo, hi);
    errno = err;
}

int wj_hook_close_range(unsigned int lo, unsigned int hi, int flags) {
    int r = WJ_REAL(close_range)(lo, hi, flags);
    wj_close_range_done(lo, hi, flags, r);
    return r;
}

void wj_hook_closefrom(int lo) {
    if (lo < 0) lo = 0;
    int err = errno;
    wj_close_tracked_range((unsigned)lo, ~0u);
    errno = err;
    WJ_REAL(closefrom)(lo);
}

