// HTTP/1 framing on the app's threads (the framer: CShims/common/http1.c): each connection's
// byte streams (raw, and TLS plaintext) are framed in the hook right after the call, on the
// app's buffer; what comes out (a per-message event, the header blocks of exchanges that will
// be `http` records, a STOP) goes to the payload ring. The decision which exchanges become
// records (WEDJAT_HTTP_RECORDS a second, bursts of 10 s) is taken here, at each request's
// first byte. Framer state lives beside the connection pool, in chunks mmap'ed on first use.
#ifndef WEDJAT_FRAMING_H
#define WEDJAT_FRAMING_H
#include "base.h"
#include "wedjat_common.h"
#include "wedjat_http1.h"
#include <sys/uio.h>

struct wj_conn;

enum { WJ_STREAM_RAW = 0, WJ_STREAM_PLAIN = 1 };
// Which of a connection's streams are framed, and whether the app is their client (then each
// send is announced first): bits of wj_conn.watch (conns.h WJ_WATCH_FRAME_*, WJ_WATCH_CLIENT).

// A new connection (the fd not yet the app's): its raw stream starts being framed.
WJ_HIDDEN void wj_framing_open(struct wj_conn *c, uint32_t slot, int client);
WJ_HIDDEN void wj_framing_tls(struct wj_conn *c);
// Before a call that will send [start, ...) of `stream`: a client announces the request it
// begins (wedjat_http1.h).
WJ_HIDDEN void wj_framing_announce(struct wj_conn *c, int stream, const void *buf, size_t len, const struct iovec *iov,
                                   int iovcnt, uint64_t start);
// TLS began on the connection: its raw stream, if it never looked like HTTP, is not framed
// (those are TLS records), its plaintext is.
// A call moved n bytes at stream offsets [start, start + n) in `dir` and returned at `now`;
// buf (or iov) holds them, or neither (sendfile, splice).
WJ_HIDDEN void wj_framing_feed(struct wj_conn *c, int stream, int dir, const void *buf, const struct iovec *iov,
                               int iovcnt, uint64_t start, uint64_t n, uint64_t now);
// The connection `conn_id` ended (the caller took its id): what its framers hold is handed over.
WJ_HIDDEN void wj_framing_end(struct wj_conn *c, uint64_t conn_id, uint64_t now, int handed_off);
// The record budget (WEDJAT_HTTP_RECORDS a second): 1 if an exchange starting at `mono` gets
// an `http` record; the aggregator's HTTP/2 decoder asks it too.
WJ_HIDDEN int wj_framing_record_take(uint64_t mono);
// The image ends: the framers of every connection still open hand over what they hold.
WJ_HIDDEN void wj_framing_end_all(uint64_t now);
// exec: where the raw HTTP/1 stream of a connection the next image goes on with stands (0: it
// cannot go on, wedjat_http1.h wj_h1_carry); in that image, its framer resumes from there.
WJ_HIDDEN int wj_framing_carry(struct wj_conn *c, wj_h1_carried *out);
WJ_HIDDEN void wj_framing_resume(struct wj_conn *c, const wj_h1_carried *r);
// exec, on the exec'ing thread (the app's fd table): the connections this image inherited
// from its parent and never used, whose fds survive the exec and whose HTTP/1 stream can go on
// (a CGI program exec'd on the socket): one line each for the exec hint ("c fd conn_id ...").
// The next image, at initialisation, goes on with them (wj_framing_exec_resume): the same
// connection ids, still marked inherited, framed from where the parent left them.
WJ_HIDDEN size_t wj_framing_exec_carry(char *buf, size_t cap);
WJ_HIDDEN void wj_framing_exec_resume(const char *lines);
#endif
