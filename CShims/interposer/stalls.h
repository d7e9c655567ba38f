// Stalls: a loop thread busy between two waits, or a thread held in one blocking call, for
// longer than WEDJAT_STALL_MS. The wait and sleep hooks (waits.c) bracket the real call; the
// watchdog runs on wedjat's thread as a component (component.h).
#ifndef WEDJAT_STALLS_H
#define WEDJAT_STALLS_H
#include "base.h"
#include "component.h"
#include "conns.h"
#include "wedjat_common.h"
#include "wedjat_json.h"
#include <sys/socket.h>

WJ_HIDDEN extern uint64_t wj_stall_ns;   // WEDJAT_STALL_MS in ns, 0 = off
WJ_HIDDEN void wj_wait_begin(void);
WJ_HIDDEN void wj_wait_end(int ready_call);  // WJ_READY_POLL ... WJ_READY_EPOLL_PWAIT2; keeps errno
WJ_HIDDEN void *wj_sleep_begin(void);        // returns what wj_sleep_end needs
WJ_HIDDEN void wj_sleep_end(void *loop);
// A blocking call that took longer than the threshold, recorded by its own thread after it
// returned (with its stack, when it may be walked there).
WJ_HIDDEN void wj_stall_blocked(const char *call, int fd, const struct sockaddr *peer, const char *host,
                                uint64_t start, uint64_t end, int err);
// A blocking call may become a stall: have wedjat's thread load the unwinder.
WJ_HIDDEN void wj_stalls_want_unwinder(void);
WJ_HIDDEN uint64_t wj_stalls_lost(void);       // stalls not recorded: no buffer free, no loop slot
WJ_HIDDEN void wj_stalls_loops_json(wj_json *j, uint64_t now);   // the loops of a sample record
WJ_HIDDEN extern const wj_component wj_stalls_component;

// Blocking reads on client sockets are timed for blocked stalls: the start time, or 0.
static inline uint64_t wj_blocking_begin_conn(wj_conn *c) {
    if (WJ_LIKELY(!wj_stall_ns) || WJ_LOAD(c->role) != WJ_ROLE_CLIENT || WJ_LOAD(c->nonblock)) return 0;
    wj_stalls_want_unwinder();
    return wj_now_ns();
}
#endif
