// HTTP/2 on a byte stream, walked in C where the bytes are: its header blocks need the HPACK
// state, which the aggregator's decoder (Sources/WedjatCore/HTTP2*.swift) keeps, so the hook
// does not decode; it follows the frames of each direction and names the bytes the decoder
// needs, for the caller to copy out of the app's buffers: the client's preface, every frame
// header, the payloads of HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS and RST_STREAM, the
// first 8 bytes of GOAWAY, and of DATA the pad length and the first gRPC message prefix
// (later prefixes in the same frame are not: the decoder then says the stream's message count
// is unknown). Everything else (DATA, mostly) is passed over without being read.
//
// Pure code: no allocation, no lock, no global state; each direction is walked by the thread
// that moved its bytes (w->d[dir] is that thread's alone). Tests drive it with the decoder.
#ifndef WEDJAT_HTTP2_WALK_H
#define WEDJAT_HTTP2_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WJ_H2_PREFACE_LEN 24

typedef struct wj_h2_dir {
    uint64_t next;       // stream offset of the next frame header
    uint64_t need_end;   // bytes before this offset are needed (the current frame's payload)
    uint8_t have;        // bytes of the frame header at `next` gathered so far
    uint8_t hdr[9];
} wj_h2_dir;

typedef struct wj_h2_walk {
    wj_h2_dir d[2];      // [0]: bytes the app received, [1]: bytes it sent
} wj_h2_walk;

// What the first bytes of a stream say.
enum { WJ_H2_UNDECIDED = 0, WJ_H2_YES = 1, WJ_H2_NO = 2, WJ_H2_PROVISIONAL = 3 };

// The first n bytes of one side (request_side: the client's) of a stream: WJ_H2_YES (the
// client preface: 16 bytes, "PRI * HTTP/2.0\r\n", already rule out HTTP/1), WJ_H2_PROVISIONAL
// (a server speaking first with a SETTINGS frame on stream 0: HTTP/2 if the client's first
// bytes are the preface), or WJ_H2_NO.
int wj_h2_classify(const uint8_t *first, size_t n, int request_side);

// The walk starts at offset 0 of both directions; the client's direction (`dir`) begins with
// the preface, which is needed.
void wj_h2_walk_init(wj_h2_walk *w);
void wj_h2_walk_preface(wj_h2_walk *w, int dir);

// Bytes [a, b) of the call are needed (stream offsets, ascending, within the call).
typedef void (*wj_h2_take_fn)(void *ctx, uint64_t a, uint64_t b);

// A call moved stream bytes [start, end) of direction `dir`, held by iov. Calls `take` for
// each needed range, in order. Bytes the walk never saw (a call it was not given) leave it
// waiting: the decoder sees the gap and says so.
void wj_h2_walk_call(wj_h2_walk *w, int dir, const struct iovec *iov, int iovcnt, uint64_t start, uint64_t end,
                     wj_h2_take_fn take, void *ctx);

// Copies len bytes at call offset `at` out of iov.
void wj_iov_copy(uint8_t *dst, const struct iovec *iov, int iovcnt, uint64_t at, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
