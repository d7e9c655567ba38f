// The framer's stash (wedjat_http1.h, wj_h1_stash) with the request and the response side on
// two threads, as a client with a reader thread frames them (Java's HttpClient, a python
// client with a reader thread): the request's bytes are announced before the send and framed
// after it, while the other thread may already have read and framed the whole response. Each
// exchange must come out exactly once: taken whole by the sink, or as its two messages.
#include "cunit.h"
#include "wedjat_http1.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define EXCHANGES 20000

static wj_h1 h;
static _Atomic uint32_t announced_up_to;   // requests announced by the sender
static _Atomic int taken[EXCHANGES], req_msgs[EXCHANGES], resp_msgs[EXCHANGES];
static _Atomic int bad;

static void on_msg(void *ctx, const wj_h1_msg *m) {
    (void)ctx;
    if (m->kind == WJ_H1_STOP) return;
    if (m->seq >= EXCHANGES) { atomic_fetch_add(&bad, 1); return; }
    atomic_fetch_add(m->kind == WJ_H1_REQUEST ? &req_msgs[m->seq] : &resp_msgs[m->seq], 1);
}

static int on_exchange(void *ctx, const wj_h1_msg *q, const wj_h1_msg *r) {
    (void)ctx;
    if (q->seq != r->seq || q->seq >= EXCHANGES) { atomic_fetch_add(&bad, 1); return 0; }
    // Every third one declined: its two messages come as usual.
    if (q->seq % 3 == 2) return 0;
    atomic_fetch_add(&taken[q->seq], 1);
    return 1;
}

static int no_detail(void *ctx, uint64_t mono) { (void)ctx, (void)mono; return 0; }

static const wj_h1_sink sink = {.msg = on_msg, .exchange = on_exchange, .want_detail = no_detail, .head_cap = 4096};
static const char request[] = "GET /x HTTP/1.1\r\nHost: h.example\r\n\r\n";
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// Three orders, in turn: the request framed before its response can be read (exchange k
// even: it waits in the stash, so it is taken whole unless declined); the response read and
// framed first, the request framed after (k % 4 == 1: GONE, both messages go out as usual);
// and no order at all (k % 4 == 3: a race between the two threads).
static _Atomic uint32_t answered_up_to;   // responses framed by the reader

static void *sender(void *arg) {
    (void)arg;
    uint64_t off = 0, n = sizeof request - 1;
    for (uint32_t k = 0; k < EXCHANGES; k++) {
        wj_h1_announce(&h, &sink, off, (const uint8_t *)request, n, 10 + k);
        if (k % 2 == 0) {
            wj_h1_feed(&h, &sink, 1, off, (const uint8_t *)request, n, off + n, 20 + k);
            atomic_store(&announced_up_to, k + 1);
        } else {
            atomic_store(&announced_up_to, k + 1);
            if (k % 4 == 1)
                while (atomic_load(&answered_up_to) <= k) sched_yield();
            wj_h1_feed(&h, &sink, 1, off, (const uint8_t *)request, n, off + n, 20 + k);
        }
        off += n;
    }
    return 0;
}

static void *reader(void *arg) {
    (void)arg;
    uint64_t off = 0, n = sizeof response - 1;
    for (uint32_t k = 0; k < EXCHANGES; k++) {
        while (atomic_load(&announced_up_to) <= k) sched_yield();   // a server answers what was sent
        wj_h1_feed(&h, &sink, 0, off, (const uint8_t *)response, n, off + n, 30 + k);
        atomic_store(&answered_up_to, k + 1);
        off += n;
    }
    return 0;
}

void test_h1_stash(void) {
    wj_h1_init(&h, 1);
    pthread_t a, b;
    pthread_create(&a, 0, sender, 0);
    pthread_create(&b, 0, reader, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    wj_h1_finish(&h, &sink, 1u << 30, WJ_H1_ERR_INCOMPLETE);
    int once = 0, twice = 0, lost = 0, whole = 0;
    for (int k = 0; k < EXCHANGES; k++) {
        int t = atomic_load(&taken[k]), q = atomic_load(&req_msgs[k]), r = atomic_load(&resp_msgs[k]);
        if (t == 1 && q == 0 && r == 0) { once++; whole++; }
        else if (t == 0 && q == 1 && r == 1) once++;
        else if (t + q + r == 0) lost++;
        else twice++;
    }
    CHECK(atomic_load(&bad) == 0, "%d messages with a wrong sequence", atomic_load(&bad));
    CHECK(once == EXCHANGES, "%d of %d exchanges came out exactly once (%d lost, %d doubled or half)", once, EXCHANGES,
          lost, twice);
    // Every even one not declined (k % 3 != 2) was stashed before its response could come.
    int must_be_whole = 0;
    for (int k = 0; k < EXCHANGES; k += 2) must_be_whole += k % 3 != 2;
    CHECK(whole >= must_be_whole, "%d exchanges taken whole, at least %d expected", whole, must_be_whole);
    CHECK(wj_h1_state(&h) == WJ_H1_CLOSED, "state %d", wj_h1_state(&h));
}
