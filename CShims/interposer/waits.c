// The wait calls: poll, select and epoll. They tell when a non-blocking connect completed (the
// socket turned writable and has a peer; when no connect is pending that costs one relaxed
// load), and they are a loop thread's iterations: busy from a wait's return to the next wait
// (stalls.c).
#include "conns.h"
#include "context.h"
#include "hooks.h"
#include "lifecycle.h"
#include "stalls.h"
#include "vitals.h"
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include "sys_raw.h"

// A connect completed if the socket has a peer now. getpeername, not SO_ERROR: reading
// SO_ERROR would clear the error the app is about to read.
static void check_connecting(int fd, uint64_t now) {
    wj_conn *c = wj_fd_conn(fd);
    if (!c || !WJ_LOAD(c->connecting)) return;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (syscall(SYS_getpeername, fd, &ss, &len) == 0) wj_conn_connected(c, now);
}

// A wait call: the program is ready from its first one on, and a loop thread's busy time ends
// at the call and starts again at its return (stalls.c).
static inline int wait_end_passing(int ready_call, int result) {
    wj_wait_end(ready_call);
    return result;
}
#define WJ_WAIT_CALL(ready, real_call) \
    (wj_note_ready(ready), wj_lc_poke(0), wj_wait_begin(), wait_end_passing(ready, (real_call)))

static int pending_connects(void) {
    return atomic_load_explicit(&wj_connecting_count, memory_order_relaxed) > 0;
}

static void after_poll(struct pollfd *fds, nfds_t n, int r) {
    if (WJ_LIKELY(r <= 0 || !pending_connects())) return;
    int err = errno;
    uint64_t now = wj_now_ns();
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].revents & POLLOUT) check_connecting(fds[i].fd, now);
    errno = err;
}

int wj_hook_poll(struct pollfd *fds, nfds_t n, int timeout) {
    int r = WJ_WAIT_CALL(WJ_READY_POLL, WJ_REAL(poll)(fds, n, timeout));
    after_poll(fds, n, r);
    return r;
}

int wj_hook___poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
    int r = WJ_WAIT_CALL(WJ_READY_POLL, WJ_REAL(__poll_chk)(fds, n, timeout, fdslen));
    after_poll(fds, n, r);
    return r;
}

int wj_hook_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
    int r = WJ_WAIT_CALL(WJ_READY_PPOLL, WJ_REAL(ppoll)(fds, n, ts, mask));
    after_poll(fds, n, r);
    return r;
}

int wj_hook___ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, size_t fdslen) {
    int r = WJ_WAIT_CALL(WJ_READY_PPOLL, WJ_REAL(__ppoll_chk)(fds, n, ts, mask, fdslen));
    after_poll(fds, n, r);
    return r;
}

static void after_select(int n, fd_set *wr, int r) {
    if (WJ_LIKELY(r <= 0 || !wr || !pending_connects())) return;
    int err = errno;
    uint64_t now = wj_now_ns();
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, wr)) check_connecting(fd, now);
    errno = err;
}

int wj_hook_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv) {
    int r = WJ_WAIT_CALL(WJ_READY_SELECT, WJ_REAL(select)(n, rd, wr, ex, tv));
    after_select(n, wr, r);
    return r;
}

int wj_hook_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask) {
    int r = WJ_WAIT_CALL(WJ_READY_PSELECT, WJ_REAL(pselect)(n, rd, wr, ex, ts, mask));
    after_select(n, wr, r);
    return r;
}

// epoll reports the app's data, not the fd: connecting sockets registered with EPOLLOUT are
// remembered here (fd and slot), and their registration (epfd, data) in the connection.
#define WJ_WATCHES 64
static _Atomic uint64_t watches[WJ_WATCHES];  // (fd << 32) | (slot + 1), 0 = empty

static int watch_valid(uint64_t w, wj_conn **out) {
    int fd = (int)(w >> 32);
    wj_conn *c = wj_fd_conn(fd);
    if (!c || WJ_LOAD(c->slot) + 1 != (uint32_t)w || !WJ_LOAD(c->connecting)) return 0;
    *out = c;
    return 1;
}

static void watch(int fd, wj_conn *conn) {
    uint64_t w = ((uint64_t)(uint32_t)fd << 32) | (WJ_LOAD(conn->slot) + 1);
    for (int i = 0; i < WJ_WATCHES; i++) {
        uint64_t cur = atomic_load(&watches[i]);
        wj_conn *c;
        if (cur == w) return;
        if ((cur == 0 || !watch_valid(cur, &c)) && atomic_compare_exchange_strong(&watches[i], &cur, w)) return;
    }
    // Full: this connect's end is then seen at its first I/O or SO_ERROR read.
}

int wj_hook_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
    int r = WJ_REAL(epoll_ctl)(epfd, op, fd, ev);
    if (WJ_LIKELY(r != 0 || !pending_connects()) || (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD) || !ev) return r;
    wj_conn *c = wj_fd_conn(fd);
    if (c && WJ_LOAD(c->connecting) && (ev->events & EPOLLOUT)) {
        WJ_STORE(c->epfd, epfd);
        WJ_STORE(c->epdata, ev->data.u64);
        watch(fd, c);
    }
    return r;
}

static void after_epoll(int epfd, struct epoll_event *evs, int r) {
    if (WJ_LIKELY(r <= 0 || !pending_connects())) return;
    int err = errno;
    uint64_t now = wj_now_ns();
    for (int i = 0; i < WJ_WATCHES; i++) {
        uint64_t w = atomic_load_explicit(&watches[i], memory_order_relaxed);
        wj_conn *c;
        if (!w || !watch_valid(w, &c) || WJ_LOAD(c->epfd) != epfd) continue;
        for (int k = 0; k < r; k++)
            if ((evs[k].events & EPOLLOUT) && evs[k].data.u64 == WJ_LOAD(c->epdata)) {
                check_connecting((int)(w >> 32), now);
                break;
            }
    }
    errno = err;
}

int wj_hook_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout) {
    int r = WJ_WAIT_CALL(WJ_READY_EPOLL_WAIT, WJ_REAL(epoll_wait)(epfd, evs, max, timeout));
    after_epoll(epfd, evs, r);
    return r;
}

int wj_hook_epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask) {
    int r = WJ_WAIT_CALL(WJ_READY_EPOLL_PWAIT, WJ_REAL(epoll_pwait)(epfd, evs, max, timeout, mask));
    after_epoll(epfd, evs, r);
    return r;
}

int wj_hook_epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts, const sigset_t *mask) {
    int r = WJ_WAIT_CALL(WJ_READY_EPOLL_PWAIT2, WJ_REAL(epoll_pwait2)(epfd, evs, max, ts, mask));
    after_epoll(epfd, evs, r);
    return r;
}

// ---------------------------------------------------------------- sleeps

// A loop thread in a sleep is never signalled for a stall sample (stalls.c).
int wj_hook_nanosleep(const struct timespec *req, struct timespec *rem) {
    wj_lc_poke(0);
    void *l = wj_sleep_begin();
    int r = WJ_REAL(nanosleep)(req, rem);
    wj_sleep_end(l);
    return r;
}

int wj_hook_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
    wj_lc_poke(0);
    void *l = wj_sleep_begin();
    int r = WJ_REAL(clock_nanosleep)(clock, flags, req, rem);
    wj_sleep_end(l);
    return r;
}

int wj_hook_usleep(useconds_t usec) {
    wj_lc_poke(0);
    void *l = wj_sleep_begin();
    int r = WJ_REAL(usleep)(usec);
    wj_sleep_end(l);
    return r;
}

unsigned int wj_hook_sleep(unsigned int seconds) {
    wj_lc_poke(0);
    void *l = wj_sleep_begin();
    unsigned int r = WJ_REAL(sleep)(seconds);
    wj_sleep_end(l);
    return r;
}
