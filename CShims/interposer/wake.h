// How hooks and record producers reach wedjat's agent thread without calling into it: a futex
// word it sleeps on, and a word of requests it reads at each round. Nothing here blocks.
#ifndef WEDJAT_WAKE_H
#define WEDJAT_WAKE_H
#include "base.h"

enum {
    WJ_REQ_AGENT = 1,      // network events need the full agent (lifecycle.c starts it at a safe point)
    WJ_REQ_SAMPLER = 2,    // the process will live: start the thread for samples
    WJ_REQ_THREAD = 4,     // the thread is needed now: the stall watchdog, or C-side records (fork)
    WJ_REQ_RECORDS = 8,    // a producer has records ready (a stall ended)
    WJ_REQ_FORKS = 16,     // fork records wait in the ring: the thread once the process passed the
                           // 20 ms gate (a process that ends before writes them in its final flush)
};
WJ_HIDDEN extern _Atomic uint32_t wj_wake_word;
WJ_HIDDEN extern _Atomic uint32_t wj_requests;

// Wakes the agent thread now (FUTEX_WAKE never blocks). Keeps errno.
WJ_HIDDEN void wj_wake(void);
// At most once per drain: a ring filling up.
WJ_HIDDEN void wj_wake_once(void);
WJ_HIDDEN void wj_wake_rearm(void);   // the agent, at the start of each drain
static inline void wj_request(uint32_t bits) {
    if ((atomic_load_explicit(&wj_requests, memory_order_relaxed) & bits) != bits)
        atomic_fetch_or_explicit(&wj_requests, bits, memory_order_release);
}
#endif
