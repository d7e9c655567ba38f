// The three rings (events.h). Their slots live in .bss: pages appear only when used.
#include "events.h"
#include "context.h"
#include "wake.h"

#define WJ_RING_CAPACITY 16384u
#define WJ_DNS_RING_CAPACITY 256u
#define WJ_PAYLOAD_RING_CAPACITY 16384u  // 8 MiB: a busy server's requests between two drains

wj_ring wj_event_ring;
wj_ring wj_dns_ring;
wj_ring wj_payload_ring;
static unsigned char event_slots[WJ_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_event))] WJ_BIG_HOT;
static unsigned char dns_slots[WJ_DNS_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_dns_event))] WJ_BIG;
static unsigned char payload_slots[WJ_PAYLOAD_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_payload))] WJ_BIG;

void wj_events_init(void) {
    wj_ring_init(&wj_event_ring, event_slots, WJ_RING_CAPACITY, sizeof(wj_event));
    wj_ring_init(&wj_dns_ring, dns_slots, WJ_DNS_RING_CAPACITY, sizeof(wj_dns_event));
    wj_ring_init(&wj_payload_ring, payload_slots, WJ_PAYLOAD_RING_CAPACITY, sizeof(wj_payload));
}

void wj_events_forget_pending(void) {
    wj_ring_discard_pending(&wj_event_ring);
    wj_ring_discard_pending(&wj_dns_ring);
    wj_ring_discard_pending(&wj_payload_ring);
}

static inline void push(wj_ring *r, const void *ev, size_t n) {
    wj_ring_push_marked(r, ev, n, &wj_self.push);
    if (WJ_UNLIKELY(wj_ring_filling(r))) wj_wake_once();
}

void wj_push(wj_event *ev) {
    ev->tid = wj_tid();
    push(&wj_event_ring, ev, sizeof *ev);
}

void wj_push_dns(wj_dns_event *ev) {
    ev->tid = wj_tid();
    push(&wj_dns_ring, ev, sizeof *ev);
}

void wj_push_payload(wj_payload *p, size_t n) { push(&wj_payload_ring, p, n); }
