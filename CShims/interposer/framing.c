// HTTP/1 framing on the app's threads (framing.h). No allocation (chunks are mmap'ed), no lock:
// a stream's two directions are framed by the threads that move their bytes (wedjat_http1.h
// says how they share what they must); the record budget is one atomic token bucket.
#include "framing.h"
#include "conns.h"
#include "wedjat_http_counts.h"
#include "events.h"
#include "process.h"
#include "wedjat_http1.h"
#include "wedjat_http2_walk.h"
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "sys_raw.h"

// HTTP/2 on a stream: not framed here (its header blocks need the HPACK state, which the
// aggregator keeps); its frames are walked (wedjat_http2_walk.h) and what the decoder needs
// is copied into payload slots. At most this many bytes out of one call (header blocks are
// compressed: an app moving more in one call is rare; past it the decoder says "desync").
#define H2_CALL_BYTES 65536

typedef struct framer {
    _Atomic uint64_t conn_id;   // the connection it frames for (0: none)
    _Atomic uint8_t h2;         // WJ_H2_*: whether the stream is HTTP/2
    int32_t count_hint;         // the summary key its last counted exchange went to
    wj_h2_walk w;
    wj_h1 h;
} framer;

WJ_BIG static _Atomic(framer *) chunks[2][WJ_CONN_CHUNKS];   // 16 KiB: after the small state
// The framers ever started, a bit each, for the walk at the end: a framer is over a page, and
// reading every framer's conn_id in a chunk faulted 1,024 zero pages in at the end of a curl
// with one connection (about 1 ms).
static _Atomic uint64_t started[2][WJ_CONN_CHUNKS][WJ_CONN_CHUNK / 64] WJ_BIG;
// Chunks made so far (one past the highest index): the walk stops there, and a process that
// framed nothing does not look at 2,048 empty cells.
static _Atomic uint32_t chunks_made[2];

// A connection slot's chunk and its place in it.
static inline uint32_t chunk_of(uint32_t slot) { return (slot >> WJ_CONN_CHUNK_BITS) & (WJ_CONN_CHUNKS - 1); }
static inline uint32_t place_of(uint32_t slot) { return slot & (WJ_CONN_CHUNK - 1); }

static framer *framer_at(uint32_t slot, int stream, int create) {
    uint32_t k = chunk_of(slot);
    _Atomic(framer *) *cell = &chunks[stream][k];
    framer *f = atomic_load_explicit(cell, memory_order_acquire);
    if (WJ_UNLIKELY(!f)) {
        if (!create) return 0;
        size_t bytes = WJ_CONN_CHUNK * sizeof(framer);
        framer *fresh = (framer *)syscall(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) return 0;
        framer *expected = 0;
        if (atomic_compare_exchange_strong(cell, &expected, fresh)) {
            f = fresh;
            uint32_t made = atomic_load(&chunks_made[stream]);
            while (made < k + 1 && !atomic_compare_exchange_weak(&chunks_made[stream], &made, k + 1)) {}
        } else {
            syscall(SYS_munmap, fresh, bytes);
            f = expected;
        }
    }
    return &f[place_of(slot)];
}

// ---------------------------------------------------------------- the record budget

static wj_budget budget;

// ---------------------------------------------------------------- the sink

typedef struct {
    wj_conn *c;
    framer *f;
    uint64_t conn_id;
    uint32_t slot;
    int stream;
    uint64_t now;
    // Header bytes given but not yet pushed: the framer gives a block line by line, and lines
    // that follow each other in the call's buffer go out as one payload (a record's blocks in
    // two or three payloads instead of one a line). Pushed before any other sink call and at
    // the end of the call, while the app's buffer is still there.
    const uint8_t *head_q;
    size_t head_n;
    uint64_t head_offset;
    uint32_t head_seq;
    int head_request;
} sink_ctx;

static void head_flush(sink_ctx *s);

static void fill_head(wj_payload *p, const sink_ctx *s, uint16_t kind, uint16_t flags) {
    p->kind = kind;
    p->flags = (uint16_t)(flags | (s->stream == WJ_STREAM_PLAIN ? WJ_PAYLOAD_PLAIN : 0));
    p->conn_slot = s->slot;
    p->tid = wj_tid();
    p->conn_id = s->conn_id;
    p->t = s->now;
}

static void sink_msg(void *ctx, const wj_h1_msg *m) {
    sink_ctx *s = (sink_ctx *)ctx;
    head_flush(s);   // a message's header bytes come before its event
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
// Pushes the header bytes waiting in s (sink_ctx.head_*), in payloads of at most their room.
static void head_flush(sink_ctx *s) {
    size_t n = s->head_n;
    if (!n) return;
    const uint8_t *q = s->head_q;
    uint64_t offset = s->head_offset;
    s->head_n = 0;
    wj_payload p;
    fill_head(&p, s, WJ_EV_HTTP_HEAD, s->head_request ? WJ_PAYLOAD_REQUEST : 0);
    p.io_end = s->head_seq;
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

static void sink_head(void *ctx, int is_request, uint32_t seq, uint64_t offset, const uint8_t *q, size_t n) {
    sink_ctx *s = (sink_ctx *)ctx;
    if (s->head_n && q == s->head_q + s->head_n && offset == s->head_offset + s->head_n && seq == s->head_seq &&
        is_request == s->head_request) {
        s->head_n += n;   // the next line of the same block, right after in the same buffer
        return;
    }
    head_flush(s);
    s->head_q = q;
    s->head_n = n;
    s->head_offset = offset;
    s->head_seq = seq;
    s->head_request = is_request;
}

static int sink_exchange(void *ctx, const wj_h1_msg *req, const wj_h1_msg *resp) {
    const sink_ctx *s = (const sink_ctx *)ctx;
    if (!s->c || !s->f || (req->flags & WJ_H1_M_DETAILED)) return 0;
    return wj_http_count_exchange(WJ_LOAD(s->c->role) == WJ_ROLE_SERVER, s->stream == WJ_STREAM_PLAIN, req, resp, &s->f->count_hint);
}

int wj_framing_record_take(uint64_t mono) { return wj_budget_take(&budget, wj_proc.config.http_records, mono); }

static int sink_want_detail(void *ctx, uint64_t mono) {
    (void)ctx;
    return wj_framing_record_take(mono);
}

static inline void make_sink(wj_h1_sink *sk, sink_ctx *s) {
    sk->msg = sink_msg;
    sk->exchange = sink_exchange;
    sk->head = sink_head;
    sk->want_detail = sink_want_detail;
    sk->ctx = s;
    s->head_n = 0;
    sk->head_cap = (uint32_t)wj_proc.config.capture_bytes;
}

// The framer of the connection's stream, 0 if it is not framed.
static inline framer *framer_of(wj_conn *c, int stream, sink_ctx *s) {
    s->slot = WJ_LOAD(c->slot);
    s->conn_id = WJ_LOAD(c->conn_id);
    framer *f = framer_at(s->slot, stream, 0);
    if (!f || atomic_load_explicit(&f->conn_id, memory_order_acquire) != s->conn_id || !s->conn_id) return 0;
    s->c = c;
    s->f = f;
    s->stream = stream;
    return f;
}

// ---------------------------------------------------------------- the hooks' side

static void start(wj_conn *c, uint32_t slot, int stream, int client) {
    framer *f = framer_at(slot, stream, 1);
    if (!f) return;
    atomic_store_explicit(&f->conn_id, 0, memory_order_relaxed);
    wj_h1_init(&f->h, client);
    f->count_hint = -1;
    atomic_store_explicit(&f->h2, WJ_H2_UNDECIDED, memory_order_relaxed);
    wj_h2_walk_init(&f->w);
    atomic_store_explicit(&f->conn_id, WJ_LOAD(c->conn_id), memory_order_release);
    uint32_t i = place_of(slot);
    atomic_fetch_or_explicit(&started[stream][chunk_of(slot)][i / 64], (uint64_t)1 << (i % 64), memory_order_release);
    atomic_fetch_or(&c->watch, (uint32_t)((stream == WJ_STREAM_PLAIN ? WJ_WATCH_FRAME_PLAIN : WJ_WATCH_FRAME_RAW) |
                                          (client ? WJ_WATCH_CLIENT : 0)));
}

void wj_framing_open(wj_conn *c, uint32_t slot, int client) {
    static _Atomic int registered;
    if (!atomic_load_explicit(&registered, memory_order_relaxed) && !atomic_exchange(&registered, 1))
        wj_conns_on_end(wj_framing_end);
    start(c, slot, WJ_STREAM_RAW, client);
}

int wj_framing_carry(wj_conn *c, wj_h1_carried *out) {
    sink_ctx s;
    framer *f = framer_of(c, WJ_STREAM_RAW, &s);
    if (!f || atomic_load_explicit(&f->h2, memory_order_relaxed) == WJ_H2_YES) return 0;
    return wj_h1_carry(&f->h, out);
}

void wj_framing_resume(wj_conn *c, const wj_h1_carried *r) {
    sink_ctx s;
    framer *f = framer_of(c, WJ_STREAM_RAW, &s);
    if (f) wj_h1_resume(&f->h, r);
}

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
    if (!f || atomic_load_explicit(&f->h2, memory_order_relaxed) == WJ_H2_YES) return;
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
    head_flush(&s);
}

// ---------------------------------------------------------------- HTTP/2

// What one call copies, in payload slots (WJ_EV_PAYLOAD); the last one carries the call's end
// (io_end), so the decoder knows how far the call went.
typedef struct {
    wj_payload p;
    uint32_t fill;
    uint64_t from;       // stream offset of p.data[0]
    uint64_t budget;     // bytes still to copy in this call
    uint64_t start;      // stream offset of the call's first byte
    const struct iovec *iov;
    int iovcnt;
} h2_out;

static void h2_flush(h2_out *o, uint64_t io_end) {
    o->p.io_end = io_end;
    o->p.offset = o->from;
    o->p.len = o->fill;
    wj_push_payload(&o->p, offsetof(wj_payload, data) + o->fill);
    o->from += o->fill;
    o->fill = 0;
}

// wj_h2_take_fn: copies stream bytes [a, b) of the call.
static void h2_take(void *ctx, uint64_t a, uint64_t b) {
    h2_out *o = (h2_out *)ctx;
    if (b > a + o->budget) b = a + o->budget;
    if (a >= b) return;
    if (o->fill && o->from + o->fill != a) h2_flush(o, o->from + o->fill);
    if (!o->fill) o->from = a;
    o->budget -= b - a;
    while (a < b) {
        uint64_t room = sizeof o->p.data - o->fill, k = b - a < room ? b - a : room;
        wj_iov_copy(o->p.data + o->fill, o->iov, o->iovcnt, a - o->start, k);
        o->fill += (uint32_t)k;
        a += k;
        if (o->fill == sizeof o->p.data) h2_flush(o, o->from + o->fill);
    }
}

// Whether the stream is HTTP/2, decided by the first call of each side (a call not starting
// at offset 0, or moving bytes wedjat cannot see, decides for HTTP/1's framer).
static int h2_decide(framer *f, int request_side, const struct iovec *iov, int iovcnt, uint64_t start, uint64_t n) {
    uint8_t mode = atomic_load_explicit(&f->h2, memory_order_relaxed);
    if (mode == WJ_H2_YES || mode == WJ_H2_NO || (mode == WJ_H2_PROVISIONAL && !request_side)) return mode;
    if (start != 0 || !iov || !n) {
        if (!request_side) return mode;   // the request side decides
        mode = WJ_H2_NO;
    } else {
        uint8_t first[WJ_H2_PREFACE_LEN];
        uint64_t k = n < sizeof first ? n : sizeof first;
        wj_iov_copy(first, iov, iovcnt, 0, k);
        mode = (uint8_t)wj_h2_classify(first, (size_t)k, request_side);
        if (mode == WJ_H2_YES) wj_h2_walk_preface(&f->w, f->h.client ? 1 : 0);
    }
    atomic_store_explicit(&f->h2, mode, memory_order_relaxed);
    return mode;
}

// The call's bytes go to the decoder: those the walk names, or the call's end alone.
static void h2_feed(framer *f, sink_ctx *s, int out, const struct iovec *iov, int iovcnt, uint64_t start, uint64_t end) {
    h2_out o;
    fill_head(&o.p, s, WJ_EV_PAYLOAD, (uint16_t)(out ? WJ_PAYLOAD_OUT : 0));
    o.fill = 0;
    o.from = end;
    o.budget = H2_CALL_BYTES;
    o.start = start;
    o.iov = iov;
    o.iovcnt = iovcnt;
    if (iov) wj_h2_walk_call(&f->w, out, iov, iovcnt, start, end, h2_take, &o);
    h2_flush(&o, end);
}

void wj_framing_feed(wj_conn *c, int stream, int dir, const void *buf, const struct iovec *iov, int iovcnt,
                     uint64_t start, uint64_t n, uint64_t now) {
    sink_ctx s;
    framer *f = framer_of(c, stream, &s);
    if (!f) return;
    s.now = now;
    int out = dir == WJ_OUT;
    uint64_t end = start + n;
    if (WJ_UNLIKELY(atomic_load_explicit(&f->h2, memory_order_relaxed) != WJ_H2_NO)) {
        const struct iovec one = {(void *)buf, (size_t)n};
        const struct iovec *v = buf ? &one : iov;
        int vn = buf ? 1 : iov ? iovcnt : 0;
        int mode = h2_decide(f, out == (f->h.client != 0), v, vn, start, n);
        if (mode == WJ_H2_YES || mode == WJ_H2_PROVISIONAL) {
            h2_feed(f, &s, out, v, vn, start, end);
            return;
        }
    }
    wj_h1_sink sk;
    make_sink(&sk, &s);
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
    head_flush(&s);
}

static void end_one(wj_conn *c, uint32_t slot, uint64_t conn_id, int stream, uint64_t now, int handed_off) {
    framer *f = framer_at(slot, stream, 0);
    uint64_t expected = conn_id;
    // Claimed by exchanging its id: one caller finishes it.
    if (!f || !atomic_compare_exchange_strong(&f->conn_id, &expected, 0)) return;
    uint8_t h2 = atomic_load_explicit(&f->h2, memory_order_relaxed);
    if (h2 == WJ_H2_YES || h2 == WJ_H2_PROVISIONAL) return;   // the aggregator ends HTTP/2
    sink_ctx s = {.c = c, .f = f, .conn_id = conn_id, .slot = slot, .stream = stream, .now = now};
    wj_h1_sink sk;
    make_sink(&sk, &s);
    wj_h1_finish(&f->h, &sk, now, handed_off ? WJ_H1_ERR_HANDED_OFF : WJ_H1_ERR_INCOMPLETE);
    head_flush(&s);
}

void wj_framing_end(wj_conn *c, uint64_t conn_id, uint64_t now, int handed_off) {
    uint32_t slot = WJ_LOAD(c->slot);
    end_one(c, slot, conn_id, WJ_STREAM_RAW, now, handed_off);
    end_one(c, slot, conn_id, WJ_STREAM_PLAIN, now, handed_off);
}

void wj_framing_end_all(uint64_t now) {
    for (int stream = 0; stream < 2; stream++)
        for (uint32_t k = 0, made = atomic_load(&chunks_made[stream]); k < made; k++) {
            framer *f = atomic_load_explicit(&chunks[stream][k], memory_order_acquire);
            if (!f) continue;
            for (uint32_t w = 0; w < WJ_CONN_CHUNK / 64; w++)
                for (uint64_t bits = atomic_load_explicit(&started[stream][k][w], memory_order_acquire); bits;
                     bits &= bits - 1) {
                    uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
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

// ---------------------------------------------------------------- exec carry (framing.h)

static int fd_socket_ino(int fd, uint64_t *ino) {
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
    *ino = (uint64_t)st.st_ino;
    return 1;
}

static char *put_u64(char *p, char *end, uint64_t v) {
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10); while ((v /= 10) && n < 24);
    while (n && p < end) *p++ = tmp[--n];
    if (p < end) *p++ = ' ';
    return p;
}

typedef struct {
    char *p, *end;
} carry_out;

static int carry_one(int fd, wj_conn *c, void *ctx) {
    carry_out *o = ctx;
    uint64_t id = WJ_LOAD(c->conn_id), ino;
    wj_h1_carried r;
    if (!id || !(WJ_LOAD(c->watch) & WJ_WATCH_INHERITED) || WJ_LOAD(c->tls) || WJ_LOAD(c->transport) == WJ_TRANSPORT_UDP)
        return 0;
    long fl = syscall(SYS_fcntl, fd, F_GETFD);
    if (fl < 0 || (fl & FD_CLOEXEC) || !fd_socket_ino(fd, &ino) || !wj_framing_carry(c, &r)) return 0;
    if (o->end - o->p < 160) return 1;   // full: the rest stays behind
    *o->p++ = 'c';
    *o->p++ = ' ';
    uint64_t v[9] = {(uint64_t)fd, id, WJ_LOAD(c->role), WJ_LOAD(c->transport), WJ_LOAD(c->family), ino,
                     r.requests, r.answered, r.announced};
    for (int j = 0; j < 9; j++) o->p = put_u64(o->p, o->end, v[j]);
    for (int j = 0; j < WJ_H1_CARRY_FACTS; j++) o->p = put_u64(o->p, o->end, r.facts[j]);
    o->p[-1] = '\n';
    return 0;
}

size_t wj_framing_exec_carry(char *buf, size_t cap) {
    carry_out o = {buf, buf + cap};
    wj_fds_each(carry_one, &o);
    return (size_t)(o.p - buf);
}

typedef struct {
    uint64_t id;
    wj_conn *found;
} conn_by_id;

static int find_id(int fd, wj_conn *c, void *ctx) {
    (void)fd;
    conn_by_id *q = ctx;
    if (WJ_LOAD(c->conn_id) != q->id) return 0;
    q->found = c;
    return 1;
}

static const char *get_u64(const char *p, uint64_t *v) {
    uint64_t x = 0;
    int any = 0;
    while (*p == ' ') p++;
    while (*p >= '0' && *p <= '9') {
        x = x * 10 + (uint64_t)(*p++ - '0');
        any = 1;
    }
    *v = x;
    return any ? p : 0;
}

void wj_framing_exec_resume(const char *lines) {
    uint64_t max_id = 0, now = wj_now_ns();
    const char *p = lines;
    while (p && *p) {
        const char *eol = p;
        while (*eol && *eol != '\n') eol++;
        uint64_t v[9 + WJ_H1_CARRY_FACTS];
        const char *q = p[0] == 'c' && p[1] == ' ' ? p + 2 : 0;
        int n = 0;
        while (q && n < 9 + WJ_H1_CARRY_FACTS && (q = get_u64(q, &v[n]))) n++;
        p = *eol ? eol + 1 : eol;
        if (n != 9 + WJ_H1_CARRY_FACTS || v[0] > INT32_MAX || !v[1]) continue;
        int fd = (int)v[0];
        uint64_t ino;
        if (!fd_socket_ino(fd, &ino) || ino != v[5] || wj_fd_ref(fd)) continue;   // not that socket any more
        // Another fd of the same connection (dup2'ed onto stdin and stdout) shares it.
        conn_by_id same = {v[1], 0};
        wj_fds_each(find_id, &same);
        wj_conn *c = same.found;
        if (c) {
            wj_fd_add_ref(fd, wj_ref_make(c));
            continue;
        }
        wj_conn_ids_next(v[1]);   // it keeps its id: the parent's log names it so
        uint32_t slot;
        c = wj_conn_new(fd, (int)v[3], (int)v[4], (int)v[2], now, &slot);
        if (!c) continue;
        if (v[1] > max_id) max_id = v[1];
        wj_h1_carried r = {(uint32_t)v[6], (uint32_t)v[7], (uint32_t)v[8], {0}};
        for (int j = 0; j < WJ_H1_CARRY_FACTS; j++) r.facts[j] = (uint8_t)v[9 + j];
        if (WJ_LOAD(c->http)) {
            wj_framing_open(c, slot, (int)v[2] != WJ_ROLE_SERVER);
            wj_framing_resume(c, &r);
        }
        atomic_fetch_or(&c->watch, (uint32_t)WJ_WATCH_INHERITED);
    }
    // This image's own connections are numbered after the ones it goes on with.
    wj_conn_ids_after(max_id);
}
