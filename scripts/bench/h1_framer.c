// The C HTTP/1 framer alone (CShims/common/http1.c and the exchange counts), fed what a server
// sees from h2load --h1 against nginx serving a 606-byte file: one 82-byte request per recv,
// the 235-byte response head in one writev, the body by sendfile (no bytes, only the call's
// end). Every exchange is counted, none detailed (WEDJAT_HTTP_RECORDS=0). Deterministic: run
// it under cachegrind with two sizes and divide the difference (http_instructions.sh --only
// framer) to get the framer's own instructions per exchange, without nginx's or the hooks'.
//   h1_framer EXCHANGES
#include "wedjat_http1.h"
#include "wedjat_http_counts.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char request[] = "GET /f.html HTTP/1.1\r\nHost: 127.0.0.1:28561\r\nuser-agent: h2load nghttp2/1.52.0\r\n\r\n";
static const char response[] =
    "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 28 Nov 2026 12:56:49 GMT\r\n"
    "Content-Type: text/html\r\nContent-Length: 606\r\nLast-Modified: Sat, 28 Nov 2026 12:53:23 GMT\r\n"
    "Connection: keep-alive\r\nETag: \"6b0acec3-25e\"\r\nAccept-Ranges: bytes\r\n\r\n";

static uint64_t counted, stops;
static int32_t hint = -1;

static void on_msg(void *ctx, const wj_h1_msg *m) {
    (void)ctx;
    if (m->kind == WJ_H1_STOP) stops++;
}
static int on_exchange(void *ctx, const wj_h1_msg *req, const wj_h1_msg *resp) {
    (void)ctx;
    int ok = wj_http_count_exchange(1, 0, req, resp, &hint);
    counted += (uint64_t)ok;
    return ok;
}
static int no_detail(void *ctx, uint64_t mono) {
    (void)ctx;
    (void)mono;
    return 0;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000;
    static wj_h1 h;
    wj_h1_init(&h, 0);
    wj_h1_sink sink = {on_msg, on_exchange, 0, no_detail, 0, 0};
    uint64_t in = 0, out = 0, mono = 1000000;
    size_t qn = sizeof request - 1, rn = sizeof response - 1;
    for (long i = 0; i < n; i++) {
        wj_h1_feed(&h, &sink, 0, in, (const uint8_t *)request, qn, in + qn, mono);
        in += qn;
        mono += 20000;
        wj_h1_feed(&h, &sink, 1, out, (const uint8_t *)response, rn, out + rn, mono);
        out += rn;
        wj_h1_feed(&h, &sink, 1, out, 0, 0, out + 606, mono + 1000);
        out += 606;
        mono += 30000;
    }
    if (counted != (uint64_t)n || stops) {
        fprintf(stderr, "h1_framer: %llu of %ld exchanges counted, %llu stops\n", (unsigned long long)counted, n,
                (unsigned long long)stops);
        return 1;
    }
    printf("%llu exchanges counted\n", (unsigned long long)counted);
    return 0;
}
