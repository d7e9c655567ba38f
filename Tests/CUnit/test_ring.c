// The ring's guarantees the interposer relies on: a push abandoned by its thread (a longjmp out
// of a signal handler) is given back, and a forked child's discard leaves a working ring.
#include "cunit.h"
#include "wedjat_common.h"

void test_ring(void) {
    wj_ring *r = wj_ring_create(8, sizeof(wj_event));
    wj_event ev, out;
    memset(&ev, 0, sizeof ev);
    ev.kind = WJ_EV_CONN_OPEN;
    ev.conn_id = 1;
    CHECK(wj_ring_push(r, &ev) == 1, "first push");
    // A push claimed and left (enq moved, nothing published), and a later one published.
    uint64_t claimed = atomic_load(&r->enq);
    atomic_store(&r->enq, claimed + 1);
    ev.conn_id = 3;
    CHECK(wj_ring_push(r, &ev) == 1, "push after the claimed slot");
    CHECK(wj_ring_pop(r, &out) == 1 && out.conn_id == 1, "the first event");
    CHECK(wj_ring_pop(r, &out) == 0, "the reader waits for the claimed slot");
    wj_ring_abandon(r, claimed);
    CHECK(wj_ring_pop(r, &out) == 1 && out.kind == 0, "an empty event stands for the abandoned one (kind %u)", out.kind);
    CHECK(wj_ring_pop(r, &out) == 1 && out.conn_id == 3, "then the next one");
    CHECK(wj_ring_dropped(r) == 1, "counted as dropped: %llu", (unsigned long long)wj_ring_dropped(r));

    // A marked push records where it is while the slot is claimed, and clears the mark.
    wj_ring_mark mark = {0, 0};
    CHECK(wj_ring_push_marked(r, &ev, sizeof ev, &mark) == 1 && mark.ring == 0, "mark cleared after the push");
    CHECK(mark.pos == atomic_load(&r->enq) - 1, "mark held the position");
    wj_ring_destroy(r);
}
