// Bounded MPSC ring of fixed-size events. See wedjat_common.h for the zero-initialised "lap"
// encoding: slot i at ring position pos is free when lap == pos & ~mask, holds an event when
// lap == (pos & ~mask) + 1, and is released for the next lap with (pos & ~mask) + capacity.
#include "wedjat_common.h"
#include <stdlib.h>
#include <string.h>

static inline _Atomic uint64_t *slot_lap(const wj_ring *r, uint64_t pos) {
    return (_Atomic uint64_t *)(r->slots + (pos & r->mask) * r->stride);
}

static inline void *slot_event(const wj_ring *r, uint64_t pos) {
    return r->slots + (pos & r->mask) * r->stride + 8;
}

void wj_ring_init(wj_ring *r, void *slots, uint64_t capacity, uint64_t slot_size) {
    atomic_store(&r->enq, 0);
    atomic_store(&r->deq_seen, 0);
    atomic_store(&r->deq, 0);
    atomic_store(&r->dropped, 0);
    r->slots = slots;
    r->mask = capacity - 1;
    r->slot_size = slot_size;
    r->stride = WJ_RING_STRIDE(slot_size);
}

int wj_ring_push(wj_ring *r, const void *ev) { return wj_ring_push_n(r, ev, r->slot_size); }

int wj_ring_push_n(wj_ring *r, const void *ev, size_t n) { return wj_ring_push_marked(r, ev, n, 0); }

// The slot at pos is free once the consumer is less than a lap behind pos. That is known from
// its position (deq, stored with release after it released the slot), through a cached copy,
// so that a push never reads its slot: on a ring larger than the caches that read was a miss
// on every push (a third of a microsecond per captured message on nginx).
int wj_ring_push_marked(wj_ring *r, const void *ev, size_t n, wj_ring_mark *mark) {
    if (n > r->slot_size) n = r->slot_size;
    const int64_t cap = (int64_t)(r->mask + 1);
    uint64_t pos = atomic_load_explicit(&r->enq, memory_order_relaxed);
    for (;;) {
        uint64_t seen = atomic_load_explicit(&r->deq_seen, memory_order_acquire);
        if ((int64_t)(pos - seen) >= cap) {
            seen = atomic_load_explicit(&r->deq, memory_order_acquire);
            atomic_store_explicit(&r->deq_seen, seen, memory_order_release);
            if ((int64_t)(pos - seen) >= cap) {
                // The slot still holds the previous lap's event: the ring is full.
                atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
                return 0;
            }
        }
        if (atomic_compare_exchange_weak_explicit(&r->enq, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed))
            break;
    }
    // The slot is ours from here to its publication: a thread that leaves this window by a
    // longjmp out of a signal handler leaves the slot claimed; the mark lets its owner give it
    // back (wj_ring_abandon) instead of the reader waiting for it forever.
    if (mark) {
        mark->pos = pos;
        atomic_signal_fence(memory_order_seq_cst);
        mark->ring = r;
        atomic_signal_fence(memory_order_seq_cst);
    }
    memcpy(slot_event(r, pos), ev, n);
    atomic_store_explicit(slot_lap(r, pos), (pos & ~r->mask) + 1, memory_order_release);
    if (mark) {
        atomic_signal_fence(memory_order_seq_cst);
        mark->ring = 0;
    }
    __builtin_prefetch(slot_lap(r, pos + 1), 1, 3);  // the next push's slot, meanwhile
    return 1;
}

// The consumer's side: the published event at deq, or NULL (empty, or its producer has not
// finished writing it). Nothing claimed since: empty, without touching (and faulting in) the
// slot's page.
static const unsigned char *next_published(wj_ring *r, uint64_t *pos) {
    *pos = atomic_load_explicit(&r->deq, memory_order_relaxed);
    if (atomic_load_explicit(&r->enq, memory_order_relaxed) == *pos) return 0;
    if (atomic_load_explicit(slot_lap(r, *pos), memory_order_acquire) != (*pos & ~r->mask) + 1) return 0;
    return slot_event(r, *pos);
}

// Frees the slot for the next lap and moves deq past it (release: producers read it, push).
// The next slot is fetched meanwhile, whole (up to 1 KiB): a drain reads what the producers
// wrote up to a flush interval ago, long out of the caches, and its misses, taken one slot
// at a time, were half of the agent's time on a busy server (nginx: 230 -> 113 ns per request).
static void release(wj_ring *r, uint64_t pos) {
    atomic_store_explicit(slot_lap(r, pos), (pos & ~r->mask) + r->mask + 1, memory_order_release);
    atomic_store_explicit(&r->deq, pos + 1, memory_order_release);
    const char *next = (const char *)slot_lap(r, pos + 1);
    uint64_t span = r->stride < 1024 ? r->stride : 1024;
    for (uint64_t k = 0; k < span + 63; k += 64) __builtin_prefetch(next + k, 0, 3);  // slots are not line-aligned
    __builtin_prefetch(slot_lap(r, pos + 2), 0, 3);
}

int wj_ring_pop_var(wj_ring *r, void *out, size_t head, size_t len_at) {
    uint64_t pos;
    const unsigned char *slot = next_published(r, &pos);
    if (!slot) return 0;
    memcpy(out, slot, head);
    uint32_t len;
    memcpy(&len, (const unsigned char *)out + len_at, sizeof len);
    if (len > r->slot_size - head) len = (uint32_t)(r->slot_size - head);
    memcpy((unsigned char *)out + head, slot + head, len);
    release(r, pos);
    return 1;
}

const void *wj_ring_peek(wj_ring *r, uint64_t *pos) { return next_published(r, pos); }

void wj_ring_release_slot(wj_ring *r, uint64_t pos) { release(r, pos); }

int wj_ring_pop(wj_ring *r, void *out) {
    uint64_t pos;
    const unsigned char *slot = next_published(r, &pos);
    if (!slot) return 0;
    memcpy(out, slot, r->slot_size);
    release(r, pos);
    return 1;
}

// The push that claimed `pos` will never finish: publish the slot as an empty event (kind 0,
// length 0; readers skip it) and count it as dropped. Only the claiming thread calls this.
void wj_ring_abandon(wj_ring *r, uint64_t pos) {
    unsigned char *slot = slot_event(r, pos);
    memset(slot, 0, r->slot_size < 16 ? r->slot_size : 16);
    atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
    atomic_store_explicit(slot_lap(r, pos), (pos & ~r->mask) + 1, memory_order_release);
}

uint64_t wj_ring_dropped(const wj_ring *r) {
    return atomic_load_explicit(&((wj_ring *)r)->dropped, memory_order_relaxed);
}

// The slots skipped keep their laps: a slot holds a lap one capacity behind the position that
// will next use it, which a reader never takes for published (it waits for the producer), and
// producers go by deq alone. So nothing of the ring but its header is written: in a forked
// child every page written is a copy.
void wj_ring_discard_pending(wj_ring *r) {
    uint64_t end = atomic_load(&r->enq);
    atomic_store(&r->deq, end);
    atomic_store(&r->deq_seen, end);
    atomic_store(&r->dropped, 0);
}

wj_ring *wj_ring_create(uint64_t capacity, uint64_t slot_size) {
    wj_ring *r = aligned_alloc(64, sizeof *r);
    void *slots = calloc(capacity, WJ_RING_STRIDE(slot_size));
    if (!r || !slots) { free(r); free(slots); return 0; }
    wj_ring_init(r, slots, capacity, slot_size);
    return r;
}

void wj_ring_destroy(wj_ring *r) {
    if (!r) return;
    free(r->slots);
    free(r);
}
