// HTTP/2 frames walked on the app's buffers (wedjat_http2_walk.h).
#include "wedjat_http2_walk.h"
#include <string.h>

static const uint8_t preface[WJ_H2_PREFACE_LEN] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

int wj_h2_classify(const uint8_t *first, size_t n, int request_side) {
    size_t k = n < WJ_H2_PREFACE_LEN ? n : WJ_H2_PREFACE_LEN;
    if (request_side) return k >= 16 && memcmp(first, preface, k) == 0 ? WJ_H2_YES : WJ_H2_NO;
    // SETTINGS (type 4) on stream 0, its length a multiple of 6, flags without ACK or ACK
    // with no payload.
    if (n < 9 || first[3] != 4 || (first[5] | first[6] | first[7] | (first[8] & 0x7f))) return WJ_H2_NO;
    uint32_t len = (uint32_t)first[0] << 16 | (uint32_t)first[1] << 8 | first[2];
    return len % 6 == 0 ? WJ_H2_PROVISIONAL : WJ_H2_NO;
}

void wj_h2_walk_init(wj_h2_walk *w) { memset(w, 0, sizeof *w); }

void wj_h2_walk_preface(wj_h2_walk *w, int dir) {
    if (w->d[dir].next < WJ_H2_PREFACE_LEN) w->d[dir].next = WJ_H2_PREFACE_LEN;
    if (w->d[dir].need_end < WJ_H2_PREFACE_LEN) w->d[dir].need_end = WJ_H2_PREFACE_LEN;
}

void wj_iov_copy(uint8_t *dst, const struct iovec *iov, int iovcnt, uint64_t at, uint64_t len) {
    for (int i = 0; i < iovcnt && len; i++) {
        uint64_t l = iov[i].iov_len;
        if (at >= l) {
            at -= l;
            continue;
        }
        uint64_t k = l - at < len ? l - at : len;
        memcpy(dst, (const uint8_t *)iov[i].iov_base + at, k);
        dst += k;
        len -= k;
        at = 0;
    }
}

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

void wj_h2_walk_call(wj_h2_walk *w, int dir, const struct iovec *iov, int iovcnt, uint64_t start, uint64_t end,
                     wj_h2_take_fn take, void *ctx) {
    wj_h2_dir *d = &w->d[dir];
    // the rest of a payload (or of the preface) begun in an earlier call
    if (d->need_end > start && end > start) take(ctx, start, min64(d->need_end, end));
    while (d->next + d->have < end) {
        uint64_t at = d->next + d->have;
        if (at < start) return;   // bytes moved unseen: the decoder sees the gap and says so
        uint64_t k = min64(9 - d->have, end - at);
        const uint8_t *h = d->hdr;
        if (d->have == 0 && k == 9 && iovcnt >= 1 && at - start + 9 <= iov[0].iov_len) {
            h = (const uint8_t *)iov[0].iov_base + (at - start);   // whole in the first buffer: read in place
        } else {
            wj_iov_copy(d->hdr + d->have, iov, iovcnt, at - start, k);
        }
        d->have += (uint8_t)k;
        // the frame header itself, and the payload bytes needed in this call, in one range
        uint64_t payload = d->next + 9;
        if (d->have < 9) {
            take(ctx, at, at + k);
            break;
        }
        uint64_t len = (uint64_t)h[0] << 16 | (uint64_t)h[1] << 8 | h[2], need;
        switch (h[3]) {
        case 0: need = (h[4] & 0x8 ? 1 : 0) + 5; break;   // DATA: pad length, a gRPC prefix
        case 7: need = 8; break;                          // GOAWAY: last stream, error code
        case 1: case 3: case 4: case 5: case 9: need = len; break;
        default: need = 0;
        }
        if (need > len) need = len;
        d->need_end = payload + need;
        d->next = payload + len;
        d->have = 0;
        take(ctx, at, min64(payload + need, end));
    }
}
