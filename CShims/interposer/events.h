// The rings that carry what hooks saw to the agent thread: fixed-size events, DNS lookups,
// and bytes captured for the HTTP parser. Pushing never blocks or allocates: a full ring
// drops and counts. A push interrupted by a signal handler that never returns (longjmp) is
// given back as dropped by the thread's next hook (context.c), so the reader never waits.
#ifndef WEDJAT_EVENTS_H
#define WEDJAT_EVENTS_H
#include "base.h"
#include "wedjat_common.h"

WJ_HIDDEN extern wj_ring wj_event_ring;
WJ_HIDDEN extern wj_ring wj_dns_ring;
WJ_HIDDEN extern wj_ring wj_payload_ring;

WJ_HIDDEN void wj_events_init(void);
// In a forked child: the parent's pending events are the parent's.
WJ_HIDDEN void wj_events_forget_pending(void);

WJ_HIDDEN void wj_push(wj_event *ev);          // fills tid; drops and counts when full
WJ_HIDDEN void wj_push_dns(wj_dns_event *ev);
WJ_HIDDEN void wj_push_payload(wj_payload *p, size_t n);   // the first n bytes of p

// True when more than a quarter of the ring is waiting for the agent.
static inline int wj_ring_filling(const wj_ring *r) {
    return atomic_load_explicit(&((wj_ring *)r)->enq, memory_order_relaxed) -
               atomic_load_explicit(&((wj_ring *)r)->deq, memory_order_relaxed) > (r->mask + 1) / 4;
}
#endif
