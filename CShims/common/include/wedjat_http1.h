// HTTP/1.x framing in C, where the bytes are: the interposer runs it in the hook right after
// the I/O call, on the app's buffer, and hands the aggregator one compact event per message
// instead of the bytes. Pure code: no allocation, no lock, no clock, no global state, so the
// Swift tests can feed it the same streams as the Swift parser (HTTP1Stream, the oracle) and
// compare them exchange by exchange, and a fuzzer can drive it.
//
// One wj_h1 follows one byte stream of a connection (its raw bytes, or its TLS plaintext) in
// both directions. The request side and the response side are framed independently, each by
// the thread that moved its bytes; what one side needs from the other crosses in atomics:
//   - `announced`: requests seen so far (a response with no request before it is not HTTP, or
//     an unsolicited answer);
//   - facts[seq % WJ_H1_FACTS]: per request, HEAD, CONNECT and whether its exchange is
//     detailed (its header blocks are handed over, for an `http` record);
//   - the pause of the request side after CONNECT or Upgrade, until the answer.
// A client announces a request before the call that sends it (wj_h1_announce): its response
// can then never be framed before the request is known, whichever thread reads it.
//
// Framing rules, timing rules and byte counts are those of Sources/WedjatCore/HTTP1.swift.
// Where C keeps less than Swift (no buffer beyond WJ_H1_CARRY bytes of a line split across
// calls), it says so: a Content-Length field line longer than WJ_H1_CARRY split across calls
// is a parse error; the Host value and the method are kept up to their arrays' sizes
// (WJ_H1_M_HOST_CUT); requests sent while the request side waits for the answer to CONNECT or
// Upgrade are lost if the answer is not a tunnel (the stream desyncs, WJ_H1_M_PAUSE_LOST).
#ifndef WEDJAT_HTTP1_H
#define WEDJAT_HTTP1_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WJ_H1_CARRY 128         // bytes of a line split across calls kept whole
#define WJ_H1_TAIL 16           // and the last bytes of a longer one
#define WJ_H1_METHOD_MAX 20     // methods are at most 20 characters (as the Swift parser)
#define WJ_H1_HOST_MAX 96
#define WJ_H1_FACTS 64          // requests in flight whose facts the response side can see
#define WJ_H1_MAX_PENDING 1024  // requests announced and not answered: beyond, a desync
#define WJ_H1_MAX_HEADER 65536  // a header block, trailer block or chunk-size line

enum {  // wj_h1.state
    WJ_H1_DETECTING = 0,  // no complete request line yet
    WJ_H1_HTTP = 1,
    WJ_H1_NOT_HTTP = 2,   // the first bytes were not HTTP/1.x
    WJ_H1_DESYNCED = 3,   // a gap in needed bytes, or malformed input
    WJ_H1_TUNNEL = 4,     // after 101 or a 2xx answer to CONNECT
    WJ_H1_CLOSED = 5,     // wj_h1_finish was called on an HTTP stream
};

enum { WJ_H1_ERR_NONE = 0, WJ_H1_ERR_INCOMPLETE = 1, WJ_H1_ERR_DESYNC = 2, WJ_H1_ERR_PARSE = 3,
       WJ_H1_ERR_HANDED_OFF = 4 /* the end of a connection a forked child went on with */ };

// What the first bytes of a stream that is not HTTP/1 look like.
enum { WJ_H1_WHY_OTHER = 0, WJ_H1_WHY_TLS = 1 /* a TLS record: 0x16 0x03 */,
       WJ_H1_WHY_HTTP2 = 2 /* the HTTP/2 connection preface */ };

enum { WJ_H1_REQUEST = 1, WJ_H1_RESPONSE = 2, WJ_H1_STOP = 3 };  // wj_h1_msg.kind

enum {  // wj_h1_msg.flags
    WJ_H1_M_ENDED = 1,          // the message was read to its end (t_end, body_bytes valid)
    WJ_H1_M_HEADERS = 2,        // its header block ended (header_bytes valid; response: status)
    WJ_H1_M_HEAD = 4,           // request: HEAD
    WJ_H1_M_CONNECT = 8,        // request: CONNECT
    WJ_H1_M_DETAILED = 16,      // its header blocks were handed to the head sink
    WJ_H1_M_UPGRADED = 32,      // response: 101, or 2xx to CONNECT: the stream is a tunnel now
    WJ_H1_M_HOST_TARGET = 64,   // request: host is the target's authority (else the Host field)
    WJ_H1_M_HOST_CUT = 128,     // host longer than its array (or than what a cut line held)
    WJ_H1_M_PAUSE_LOST = 256,   // STOP: requests sent during a CONNECT/Upgrade pause were lost
    WJ_H1_M_HOST_FIELD = 512,   // request: host is the (first) Host field's value
    WJ_H1_M_FINISH = 1024,      // STOP: sent by wj_h1_finish (the connection ended)
};

// What the framer hands over: a message (at its end, or cut short when the stream stops or
// the connection ends), or a STOP (the stream will not be parsed further).
typedef struct wj_h1_msg {
    uint8_t kind;           // WJ_H1_REQUEST / WJ_H1_RESPONSE / WJ_H1_STOP
    uint8_t minor;          // HTTP/1.<minor> of the request line / the final status line
    uint16_t flags;         // WJ_H1_M_*
    uint16_t status;        // response: final status (with WJ_H1_M_HEADERS); 0 if none
    uint16_t interim;       // response: 1xx answers before the final one (101 excluded)
    uint32_t seq;           // exchange index on the stream (0-based); STOP: the exchange the
                            // error is for, or UINT32_MAX for none
    uint8_t state;          // STOP: the stream's new state (WJ_H1_*)
    uint8_t error;          // STOP: WJ_H1_ERR_* for `seq`
    uint8_t why;            // STOP to NOT_HTTP: what the first bytes look like (WJ_H1_WHY_*)
    uint8_t method_len;
    uint8_t host_len;       // 0 when no host is known
    uint32_t answered;      // responses ended on the stream when it was handed over: of the
                            // exchanges before, those that came as no message were taken
                            // whole by sink->exchange
    uint64_t t_first;       // mono of the call that moved the message's first byte
                            // (response: the first byte of its first interim answer)
    uint64_t t_end;         // mono of the call that moved its last byte (WJ_H1_M_ENDED)
    uint64_t header_bytes;  // start line + fields + empty line (response: 1xx heads included);
                            // STOP: the request side's stream offset where decoding stopped
    uint64_t body_bytes;    // bytes after the header block (chunked: framing included);
                            // STOP: the response side's offset where decoding stopped
    char method[WJ_H1_METHOD_MAX];
    char host[WJ_H1_HOST_MAX];
} wj_h1_msg;

// Where the framer's output goes. `exchange`, when set, is offered each exchange that ended
// whole and plainly (not detailed, both messages ended with their header blocks, a host known
// and not cut, no CONNECT, Upgrade or tunnel), at its response's end, with both messages:
// nonzero takes it (it is counted where it ends, in C), and then neither message is handed
// to `msg`; zero hands both over as usual (the request first). `head` receives, for a detailed exchange, the bytes of each
// header block of its messages (start line through the empty line) in order, at most
// `head_cap` bytes of a block (the rest is cut). `want_detail` is asked once per request, with
// the mono of its first byte: nonzero makes the exchange detailed (the record budget).
typedef struct wj_h1_sink {
    void (*msg)(void *ctx, const wj_h1_msg *m);
    int (*exchange)(void *ctx, const wj_h1_msg *request, const wj_h1_msg *response);
    void (*head)(void *ctx, int is_request, uint32_t seq, uint64_t offset, const uint8_t *p, size_t n);
    int (*want_detail)(void *ctx, uint64_t mono);
    void *ctx;
    uint32_t head_cap;
} wj_h1_sink;

// The field lines of the side's last header block, kept to recognise the next one of the same
// shape (a server's responses, a client's requests differ mostly in the values): the same
// bytes where `must` is 0xff (names, ':', each LF), anything but LF elsewhere (values). Then
// only the framing fields (Host, Upgrade, Content-Length, Transfer-Encoding) are read again.
#define WJ_H1_SHAPE_MAX 512
#define WJ_H1_SHAPE_FIELDS 8
typedef struct wj_h1_shape {
    uint16_t len;            // bytes of the field lines (0: none kept)
    uint16_t last_at;        // where the last line begins
    uint8_t nfields;
    uint8_t misses;          // blocks since the last match that did not match
    struct { uint16_t at, n, name_end; } field[WJ_H1_SHAPE_FIELDS];   // line start, LF, name end
    uint8_t bytes[WJ_H1_SHAPE_MAX];
    uint8_t must[WJ_H1_SHAPE_MAX];
} wj_h1_shape;

// One direction's parser.
typedef struct wj_h1_side {
    uint8_t is_request;
    uint8_t phase;           // private
    uint8_t started;         // the current message's first byte was seen
    uint8_t has_cl, chunked, te, upgrade;
    uint8_t minor;
    uint8_t detailed;        // the current message's header bytes go to sink->head
    _Atomic uint8_t open;    // `cur` holds a message started and not yet handed over
    uint8_t close_seen;
    uint8_t lost;            // request side: bytes moved while paused
    uint16_t status;
    _Atomic uint8_t busy;    // the side is being framed right now
    uint32_t seq;            // exchange of the current message
    uint32_t head_seq;       // exchange of the message whose header bytes are being handed over
    _Atomic uint32_t next;   // request side: requests started; response side: answered
    uint32_t block_bytes;    // bytes of the current header block / chunk line so far
    uint64_t pos;            // next stream offset to examine (line phases)
    uint64_t skip_end;       // end of the region being skipped
    uint64_t msg_start, msg_start_mono, body_start;
    uint64_t content_length;
    uint64_t close_max_io_end, close_last_mono;
    uint64_t seg_io_end;
    uint64_t head_given;     // bytes of the current header block given to sink->head
    uint64_t line_at;        // stream offset where the line being handled began
    // A line that continues in a later call: its first bytes, its last bytes, its length, and
    // what a check of the whole line needs (bytes outside 33..126; the first non-token byte).
    uint32_t line_len;
    uint32_t line_nontarget;
    int32_t line_nontchar_at;
    uint8_t line_nontchar;
    uint8_t line_head[WJ_H1_CARRY];
    uint8_t line_tail[WJ_H1_TAIL];
    wj_h1_msg cur;           // the message being framed
    uint64_t fields_at;      // stream offset of the current block's first field line
    wj_h1_shape shape;
} wj_h1_side;

// A request that ended and waits for its response's end, to be offered to sink->exchange with
// it. `tag` is (seq + 1) << 2 | WJ_H1_STASH_*: the request side stashes (a slot whose tag is
// not STASHED), the response side takes it or, finding none for its exchange, marks the slot
// GONE so that a request ending after its response is handed over at once; TAKEN while the
// response side reads it in place. Each side claims a slot by compare-and-swap, so the two
// threads never both hand over one message, nor neither.
#define WJ_H1_STASH 4
enum { WJ_H1_STASH_FREE = 0, WJ_H1_STASH_STASHED = 1, WJ_H1_STASH_GONE = 2, WJ_H1_STASH_TAKEN = 3 };
typedef struct wj_h1_stash {
    _Atomic uint32_t tag;
    wj_h1_msg msg;
} wj_h1_stash;

typedef struct wj_h1 {
    _Atomic uint8_t state;   // WJ_H1_*
    uint8_t client;          // requests go out (the app is the client)
    _Atomic uint8_t resume;  // the response side answered a paused request without a tunnel
    _Atomic uint8_t stop_said;
    _Atomic uint8_t why;     // WJ_H1_WHY_* of the first bytes seen while detecting
    _Atomic uint32_t announced;             // requests whose request line was seen
    uint32_t announce_seq;                  // the last request announced before its call,
    uint64_t announce_mono;                 // and when that call began
    _Atomic uint32_t facts[WJ_H1_FACTS];    // (seq << 8) | WJ_H1_FACT_*
    wj_h1_side req, resp;
    wj_h1_stash stash[WJ_H1_STASH];
} wj_h1;

enum { WJ_H1_FACT_KNOWN = 0x80, WJ_H1_FACT_HEAD = 1, WJ_H1_FACT_CONNECT = 2, WJ_H1_FACT_DETAILED = 4,
       WJ_H1_FACT_PAUSES = 8 };

void wj_h1_init(wj_h1 *h, int client);

// The record budget: `per_second` exchanges a second become detailed (`http` records), in
// bursts of 10 s worth; the others are only counted (`http_summary`). Lock-free and never
// waiting (a signal handler may take too): the hooks of every thread take from one bucket.
// Zero-initialised, it fills at the first take.
typedef struct wj_budget {
    _Atomic int64_t milli;     // tokens in thousandths
    _Atomic uint64_t last_ms;  // CLOCK_MONOTONIC ms (+1) of the last refill; 0: never
} wj_budget;
int wj_budget_take(wj_budget *b, int64_t per_second, uint64_t mono);

// Before a call that will send bytes [offset, offset + n) on the request side (the app is a
// client): if a request line starts at offset and ends in these bytes, the request is
// announced now, with its facts, and `mono` (the call's start) becomes the request's first
// byte time: a response read on another thread never seems to come before its request.
void wj_h1_announce(wj_h1 *h, const wj_h1_sink *sink, uint64_t offset, const uint8_t *p, size_t n, uint64_t mono);

// A call moved bytes up to stream offset io_end in direction `out` (the app sent them);
// [offset, offset + n) of them are at p (n may be 0 and p NULL when the bytes are not seen:
// sendfile, splice). Calls of one direction must come in stream order.
void wj_h1_feed(wj_h1 *h, const wj_h1_sink *sink, int out, uint64_t offset, const uint8_t *p, size_t n,
                uint64_t io_end, uint64_t mono);

// The connection ended (`mono`): a close-delimited response ends here; every message still
// open is handed over; then a STOP. `error`: what the exchanges still open get
// (WJ_H1_ERR_INCOMPLETE, or WJ_H1_ERR_HANDED_OFF when a forked child has the connection).
void wj_h1_finish(wj_h1 *h, const wj_h1_sink *sink, uint64_t mono, int error);

// A stream that another image of the process goes on with (a CGI program exec'd on the
// socket its parent read a request from): its counts and the facts of the requests not yet
// answered. wj_h1_carry says 0 when a new image could not resume it: not HTTP, a message half
// moved, or more than 8 requests unanswered. wj_h1_resume, right after wj_h1_init, makes the
// new image's framer go on from there (its stream offsets start at 0).
#define WJ_H1_CARRY_FACTS 8
typedef struct wj_h1_carried {
    uint32_t requests;    // requests started (and ended: the request side is between messages)
    uint32_t answered;    // responses ended
    uint32_t announced;   // requests whose request line was seen
    uint8_t facts[WJ_H1_CARRY_FACTS];   // WJ_H1_FACT_* of requests answered..requests-1
} wj_h1_carried;
int wj_h1_carry(const wj_h1 *h, wj_h1_carried *out);
void wj_h1_resume(wj_h1 *h, const wj_h1_carried *r);

static inline int wj_h1_state(const wj_h1 *h) {
    return atomic_load_explicit(&((wj_h1 *)h)->state, memory_order_relaxed);
}

static inline int wj_h1_live(const wj_h1 *h) {
    uint8_t s = atomic_load_explicit(&((wj_h1 *)h)->state, memory_order_relaxed);
    return s == WJ_H1_DETECTING || s == WJ_H1_HTTP;
}

#ifdef __cplusplus
}
#endif
#endif
