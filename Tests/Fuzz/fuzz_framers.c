// libFuzzer target for the C code that reads the app's bytes inside its own process: the
// HTTP/1 framer (http1.c) and the HTTP/2 frame walk (http2_walk.c). The input chooses the
// segmentation, the directions, calls whose bytes are not seen (sendfile), announcements and
// the record budget's answers; the checks are the framers' contracts: messages within the
// bytes moved, header blocks within head_cap, needed ranges within their call and ascending.
// Byte 0: bit 0 the app is the client, bit 1 the client direction starts with the h2 preface.
#include "wedjat_http1.h"
#include "wedjat_http2_walk.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

typedef struct {
    uint64_t moved[2];     // stream bytes moved so far, by direction (0 in, 1 out)
    uint64_t taken_end[2]; // the end of the last range the walk took
    uint64_t call_start, call_end;
    int dir;
    const struct iovec *iov;
    int iovcnt;
    unsigned detail;
    unsigned exchanges;
    uint8_t copy[65536];
} state;

static void on_msg(void *ctx, const wj_h1_msg *m) {
    state *s = ctx;
    if (m->kind < WJ_H1_REQUEST || m->kind > WJ_H1_STOP) abort();
    if (m->kind != WJ_H1_STOP) {
        if (m->method_len > WJ_H1_METHOD_MAX || m->host_len > WJ_H1_HOST_MAX) abort();
        if (m->header_bytes > s->moved[0] + s->moved[1]) abort();
    }
}

static void on_head(void *ctx, int is_request, uint32_t seq, uint64_t offset, const uint8_t *p, size_t n) {
    state *s = ctx;
    (void)is_request, (void)seq, (void)offset;
    if (n > 4096) abort();  // head_cap below
    if (n) memcpy(s->copy, p, n);  // every byte handed over must be readable
}

// Whole exchanges (wj_h1_sink.exchange): only what the framer promises is offered; every
// other one is taken, so that the stash's both paths run.
static int on_exchange(void *ctx, const wj_h1_msg *req, const wj_h1_msg *resp) {
    state *s = ctx;
    const uint16_t whole = WJ_H1_M_ENDED | WJ_H1_M_HEADERS;
    if (req->kind != WJ_H1_REQUEST || resp->kind != WJ_H1_RESPONSE || req->seq != resp->seq) abort();
    if ((req->flags & whole) != whole || (resp->flags & whole) != whole) abort();
    if (req->flags & (WJ_H1_M_DETAILED | WJ_H1_M_CONNECT | WJ_H1_M_HOST_CUT)) abort();
    if (!req->host_len || req->host_len > WJ_H1_HOST_MAX || (resp->flags & WJ_H1_M_UPGRADED)) abort();
    return (s->exchanges++ & 1) == 0;
}

static int want_detail(void *ctx, uint64_t mono) {
    state *s = ctx;
    (void)mono;
    return (s->detail++ & 3) != 3;
}

static void take(void *ctx, uint64_t a, uint64_t b) {
    state *s = ctx;
    if (a >= b || a < s->call_start || b > s->call_end || a < s->taken_end[s->dir]) {
        if (getenv("FUZZ_SAY")) fprintf(stderr, "take [%llu,%llu) call [%llu,%llu) dir %d taken_end %llu\n", (unsigned long long)a, (unsigned long long)b, (unsigned long long)s->call_start, (unsigned long long)s->call_end, s->dir, (unsigned long long)s->taken_end[s->dir]);
        abort();
    }
    s->taken_end[s->dir] = b;
    uint64_t n = b - a < sizeof s->copy ? b - a : sizeof s->copy;
    wj_iov_copy(s->copy, s->iov, s->iovcnt, a - s->call_start, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    static state s;
    memset(&s, 0, sizeof s);
    int client = data[0] & 1;
    wj_h1 *h = calloc(1, sizeof *h);
    wj_h1_init(h, client);
    wj_h1_sink sink = {.msg = on_msg, .exchange = (data[0] & 8) ? on_exchange : 0, .head = on_head,
                       .want_detail = want_detail, .ctx = &s, .head_cap = 4096};
    wj_h2_walk w;
    wj_h2_walk_init(&w);
    int client_dir = client ? 1 : 0;
    (void)wj_h2_classify(data + 1, size - 1 < 24 ? size - 1 : 24, 1);
    (void)wj_h2_classify(data + 1, size - 1 < 24 ? size - 1 : 24, 0);
    // The h2 walk of the client direction, when asked, begins with a whole preface.
    uint8_t *pre = 0;
    if (data[0] & 2) {
        wj_h2_walk_preface(&w, client_dir);
        pre = malloc(24);
        memcpy(pre, preface, 24);
        struct iovec v = {pre, 24};
        s.dir = client_dir, s.call_start = 0, s.call_end = 24, s.iov = &v, s.iovcnt = 1;
        wj_h2_walk_call(&w, client_dir, &v, 1, 0, 24, take, &s);
        s.moved[client_dir] = 24;
    }
    uint64_t mono = 1;
    size_t i = 1;
    while (i < size) {
        uint8_t ctl = data[i++];
        int dir = ctl >> 7, unseen = (ctl >> 6) & 1;
        size_t n = (size_t)(ctl & 0x3f) + 1;
        if (n > size - i) n = size - i;
        // Each call's bytes in a buffer of their own (ASan sees any read past them), in two
        // iovec pieces cut where the next byte says.
        uint8_t *buf = malloc(n ? n : 1);
        memcpy(buf, data + i, n);
        size_t cut = n ? (i + n < size ? data[i + n - 1] % (n + 1) : n / 2) : 0;
        struct iovec v[2] = {{buf, cut}, {buf + cut, n - cut}};
        uint64_t start = s.moved[dir], end = start + n;
        mono += 1 + (ctl & 7);
        if (dir == 1 && client && !unseen) wj_h1_announce(h, &sink, start, buf, n, mono);
        s.moved[dir] = end;
        if (unseen) {
            wj_h1_feed(h, &sink, dir, start, 0, 0, end, mono);
        } else {
            wj_h1_feed(h, &sink, dir, start, buf, cut, start + cut, mono);
            wj_h1_feed(h, &sink, dir, start + cut, buf + cut, n - cut, end, mono);
            s.dir = dir, s.call_start = start, s.call_end = end, s.iov = v, s.iovcnt = 2;
            wj_h2_walk_call(&w, dir, v, 2, start, end, take, &s);
        }
        free(buf);
        i += n;
    }
    wj_h1_finish(h, &sink, mono + 1, (data[0] & 4) ? WJ_H1_ERR_HANDED_OFF : WJ_H1_ERR_INCOMPLETE);
    free(h);
    free(pre);
    return 0;
}
