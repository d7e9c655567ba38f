// HTTP/1 framing on the app's threads (framing.h). No allocation (chunks are mmap'ed), no lock:
// a stream's two directions are framed by the threads that move their bytes (wedjat_http1.h
// says how they share what they must); the record budget is one atomic token bucket.
#include "framing.h"
#include "conns.h"
#include "events.h"
#include "process.h"
#include "wedjat_http1.h"
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "sys_raw.h"

typedef struct framer {
    _Atomic uint64_t conn_id;   // the connection it frames for (0: none)
    wj_h1 h;
} framer;

static _Atomic(framer *) chunks[2][WJ_CONN_CHUNKS];

static framer *framer_at(uint32_t slot, int stream, int create) {
    _Atomic(framer *) *cell = &chunks[stream][(slot >> WJ_CONN_CHUNK_BITS) & (WJ_CONN_CHUNKS - 1)];
    framer *f = atomic_load_explicit(cell, memory_order_acquire);
    if (WJ_UNLIKELY(!f)) {
        if (!create) return 0;
        size_t bytes = WJ_CONN_CHUNK * sizeof(framer);
        framer *fresh = (framer *)syscall(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) return 0;
        framer *expected = 0;
        if (atomic_compare_exchange_strong(cell, &expected, fresh)) {
            f = fresh;
        } else {
            syscall(SYS_munmap, fresh, bytes);
            f = expected;
        }
    }
    return &f[slot & (WJ_CONN_CHUNK - 1)];
}

// ---------------------------------------------------------------- the record budget

static wj_budget budget;

// ---------------------------------------------------------------- the sink

typedef struct {
    wj_conn *c;
    uint64_t conn_id;
    uint32_t slot;
    int stream;
    uint64_t now;
} sink_ctx;

static void fill_head(wj_payload *p, const sink_ctx *s, uint16_t kind, uint16_t flags) {
    p->kind = kind;
    p->flags = (uint16_t)(flags | (s->stream == WJ_STREAM_PLAIN ? WJ_PAYLOAD_PLAIN : 0));
    p->conn_slot = s->slot;
    p->tid = wj_tid();
    p->conn_id = s->conn_id;
    p->t = s->now;
}

static void sink_msg(void *ctx, const wj_h1_msg *m) {
    const sink_ctx *s = (const sink_ctx *)ctx;
    wj_payload p;
    fill_head(&p, s, WJ_EV_HTTP_MSG, 0);
    p.offset = 0;
    p.io_end = 0;
    p.len = sizeof *m;
    memcpy(p.data, m, sizeof *m);
    wj_push_payload(&p, offsetof(wj_payload, data) + sizeof *m);
    if (m->kind == WJ_H1_STOP && s->c)
        atomic_fetch_and(&s->c->watch, ~(uint32_t)(s->stream == WJ_STREAM_PLAIN ? WJ_WATCH_FRAME_PLAIN : WJ_WATCH_FRAME_RAW));
}

// Header-block bytes of a detailed exchange: as many slots as they need; `io_end` carries the
// exchange index (events: WJ_EV_HTTP_HEAD).
static void sink_head(void *ctx, int is_request, uint32_t seq, uint64_t offset, const uint8_t *q, size_t n) {
    const sink_ctx *s = (const sink_ctx *)ctx;
    wj_payload p;
    fill_head(&p, s, WJ_EV_HTTP_HEAD, is_request ? WJ_PAYLOAD_REQUEST : 0);
    p.io_end = seq;
    while (n) {
        size_t k = n < sizeof p.data ? n : sizeof p.data;
        memcpy(p.data, q, k);
        p.offset = offset;
        p.len = (uint32_t)k;
        wj_push_payload(&p, offsetof(wj_payload, data) + k);
        q += k;
        n -= k;
        offset += k;
    }
}

static int sink_want_detail(void *ctx, uint64_t mono) {
    (void)ctx;
    return wj_budget_take(&budget, wj_proc.config.http_records, mono);
}

static inline void make_sink(wj_h1_sink *sk, sink_ctx *s) {
    sk->msg = sink_msg;
    sk->head = sink_head;
    sk->want_detail = sink_want_detail;
    sk->ctx = s;
    sk->head_cap = (uint32_t)wj_proc.config.capture_bytes;
}

// The framer of the connection's stream, 0 if it is not framed.
static inline framer *framer_of(wj_conn *c, int stream, sink_ctx *s) {
    s->slot = WJ_LOAD(c->slot);
    s->conn_id = WJ_LOAD(c->conn_id);
    framer *f = framer_at(s->slot, stream, 0);
    if (!f || atomic_load_explicit(&f->conn_id, memory_order_acquire) != s->conn_id || !s->conn_id) return 0;
    s->c = c;
    s->stream = stream;
    return f;
}

// ---------------------------------------------------------------- the hooks' side

static void start(wj_conn *c, uint32_t slot, int stream, int client) {
    framer *f = framer_at(slot, stream, 1);
    if (!f) return;
    atomic_store_explicit(&f->conn_id, 0, memory_order_relaxed);
    wj_h1_init(&f->h, client);
    atomic_store_explicit(&f->conn_id, WJ_LOAD(c->conn_id), memory_order_release);
    atomic_fetch_or(&c->watch, (uint32_t)((stream == WJ_STREAM_PLAIN ? WJ_WATCH_FRAME_PLAIN : WJ_WATCH_FRAME_RAW) |
                                          (client ? WJ_WATCH_CLIENT : 0)));
}

void wj_framing_open(wj_conn *c, uint32_t slot, int client) { start(c, slot, WJ_STREAM_RAW, client); }

void wj_framing_tls(wj_conn *c) {
    uint32_t bits = WJ_LOAD(c->watch);
    if (bits & WJ_WATCH_FRAME_PLAIN) return;   // already
    uint32_t slot = WJ_LOAD(c->slot);
    uint64_t id = WJ_LOAD(c->conn_id);
    framer *f = framer_at(slot, WJ_STREAM_RAW, 0);
    // A raw stream that never looked like HTTP is TLS records: forgotten. One that did (a
    // CONNECT before TLS in the tunnel) keeps what it framed, and ends at the close.
    if (f && atomic_load_explicit(&f->conn_id, memory_order_acquire) == id && wj_h1_state(&f->h) == WJ_H1_DETECTING)
        atomic_store_explicit(&f->conn_id, 0, memory_order_release);
    atomic_fetch_and(&c->watch, ~(uint32_t)WJ_WATCH_FRAME_RAW);
    start(c, slot, WJ_STREAM_PLAIN, WJ_LOAD(c->role) != WJ_ROLE_SERVER);
}

void wj_framing_announce(wj_conn *c, int stream, const void *buf, size_t len, const struct iovec *iov, int iovcnt,
                         uint64_t start) {
    sink_ctx s;
    framer *f = framer_of(c, stream, &s);
    if (!f) return;
    const void *p = buf;
    size_t n = len;
    if (!buf && iov && iovcnt > 0) {  // the request line is in the first buffer, if anywhere
        p = iov[0].iov_base;
        n = iov[0].iov_len;
    }
    if (!p || !n) return;
    s.now = wj_now_ns();
    wj_h1_sink sk;
    make_sink(&sk, &s);
    wj_h1_announce(&f->h, &sk, start, (const uint8_t *)p, n, s.now);
}

void wj_framing_feed(wj_conn *c, int stream, int dir, const void *buf, const struct iovec *iov, int iovcnt,
                     uint64_t start, uint64_t n, uint64_t now) {
    sink_ctx s;
    framer *f = framer_of(c, stream, &s);
    if (!f) return;
    s.now = now;
    wj_h1_sink sk;
    make_sink(&sk, &s);
    int out = dir == WJ_OUT;
    uint64_t end = start + n;
    if (buf) {
        wj_h1_feed(&f->h, &sk, out, start, (const uint8_t *)buf, (size_t)n, end, now);
    } else if (iov) {
        // Each buffer in turn, all with the call's end: the call is one segment.
        uint64_t at = start, left = n;
        for (int i = 0; i < iovcnt && left; i++) {
            uint64_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
            if (!k) continue;
            wj_h1_feed(&f->h, &sk, out, at, (const uint8_t *)iov[i].iov_base, (size_t)k, end, now);
            at += k;
            left -= k;
            if (!wj_h1_live(&f->h)) break;
        }
    } else {
        wj_h1_feed(&f->h, &sk, out, start, 0, 0, end, now);
    }
}

static void end_one(wj_conn *c, uint32_t slot, uint64_t conn_id, int stream, uint64_t now, int handed_off) {
    framer *f = framer_at(slot, stream, 0);
    uint64_t expected = conn_id;
    // Claimed by exchanging its id: one caller finishes it.
    if (!f || !atomic_compare_exchange_strong(&f->conn_id, &expected, 0)) return;
    sink_ctx s = {c, conn_id, slot, stream, now};
    wj_h1_sink sk;
    make_sink(&sk, &s);
    wj_h1_finish(&f->h, &sk, now, handed_off ? WJ_H1_ERR_HANDED_OFF : WJ_H1_ERR_INCOMPLETE);
}

void wj_framing_end(wj_conn *c, uint64_t conn_id, uint64_t now, int handed_off) {
    uint32_t slot = WJ_LOAD(c->slot);
    end_one(c, slot, conn_id, WJ_STREAM_RAW, now, handed_off);
    end_one(c, slot, conn_id, WJ_STREAM_PLAIN, now, handed_off);
}

void wj_framing_end_all(uint64_t now) {
    for (int stream = 0; stream < 2; stream++)
        for (uint32_t k = 0; k < WJ_CONN_CHUNKS; k++) {
            framer *f = atomic_load_explicit(&chunks[stream][k], memory_order_acquire);
            if (!f) continue;
            for (uint32_t i = 0; i < WJ_CONN_CHUNK; i++) {
                uint64_t id = atomic_load_explicit(&f[i].conn_id, memory_order_acquire);
                if (!id) continue;
                uint32_t slot = (k << WJ_CONN_CHUNK_BITS) | i;
                wj_conn *c = wj_conn_at(slot);
                if (!c || WJ_LOAD(c->conn_id) != id) continue;  // ended: handed over at its close
                if (WJ_LOAD(c->watch) & WJ_WATCH_INHERITED) continue;  // the parent's, unused here
                end_one(c, slot, id, stream, now, 0);
            }
        }
}
