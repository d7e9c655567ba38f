// Connections as the kernel sees them: the fd table and the pool of connection slots it
// refers into, the close events, and the capture of bytes for the HTTP parser. Everything here
// runs on the app's threads: no allocation (chunks are mmap'ed), no locks, relaxed atomics.
#ifndef WEDJAT_CONNS_H
#define WEDJAT_CONNS_H
#include "base.h"
#include "context.h"
#include "wedjat_common.h"
#include <sys/socket.h>
#include <sys/uio.h>

// A connection is a socket as the kernel sees it: it lives in a slot of a
// pool, and every fd that refers to it (dup, dup2, fcntl F_DUPFD) holds a reference from the
// fd table. It ends when its last fd is closed, as the socket does. Both tables are two-level
// so that large numbers cost memory only when used: chunks mmap'ed on first use.
#define WJ_FD_CHUNK_BITS 10
#define WJ_FD_CHUNK (1u << WJ_FD_CHUNK_BITS)
#define WJ_FD_CHUNKS 1024u
#define WJ_FD_MAX (WJ_FD_CHUNK * WJ_FD_CHUNKS)
#define WJ_CONN_CHUNK_BITS 10
#define WJ_CONN_CHUNK (1u << WJ_CONN_CHUNK_BITS)
#define WJ_CONN_CHUNKS 1024u
#define WJ_CONN_MAX (WJ_CONN_CHUNK * WJ_CONN_CHUNKS)

// Every field is atomic and accessed relaxed (plain moves on x86-64): a slot is reused when
// the kernel reuses the socket's number, an order ThreadSanitizer cannot see.
typedef struct wj_conn {
    _Atomic uint64_t state;      // (generation << 2) | WJ_SLOT_*
    _Atomic uint64_t conn_id;    // 0 while being set up or torn down
    _Atomic uint32_t refs;       // fds referring to it
    _Atomic uint32_t connecting; // non-blocking connect not yet known to have completed
    _Atomic uint8_t role, transport, family, tls;  // tls: WJ_TLS_* once a TLS call named it
    _Atomic uint8_t http;        // an HTTP-eligible connection (WJ_OPEN_HTTP)
    _Atomic uint32_t watch;      // WJ_WATCH_*: what an I/O call must look at besides counting
    _Atomic uint32_t slot;       // its own index in the pool
    _Atomic uint32_t fork_epoch; // wj_forks when it opened: a fork since means a child may have it
    // Its end handed to a call still in flight (io.c): the socket lives until that call
    // returns, and its bytes and framing come before the close event. busy: I/O calls in
    // flight, per direction, plain increments (no lock on the hot path: each is written by
    // the one thread reading, or writing, the stream at a time); <= 0 none (a slot reused
    // under a stale call may leave -1). In the hot path's cache line, beside conn_id and watch.
    _Atomic uint32_t end_pending; // its last fd was closed while busy: the last call to return ends it
    _Atomic int32_t busy[2];
    // wj_direct_epoch while its calls go straight to the kernel (io.c), else WJ_DIRECT_NONE or
    // an older epoch.
    _Atomic uint32_t direct;
    _Atomic uint32_t open_epoch;  // wj_direct_epoch when it opened (without the off bit)
    _Atomic uint64_t base_in, base_out;  // a child's inherited connection: the offsets it took over
    _Atomic uint8_t err_phase;
    _Atomic uint16_t tls_version;
    _Atomic int32_t err;         // first error: failed connect, I/O error, TLS failure
    _Atomic int32_t epfd;        // epoll set it was registered in while connecting (-1 none)
    _Atomic uint64_t epdata;     // and the data registered with it
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic uint64_t plain_in, plain_out;   // TLS plaintext stream offsets
    _Atomic uint64_t t_open, t_connected, t_first_out, t_first_in, t_last_io, t_shutdown;
    _Atomic uint64_t t_tls_start, t_tls_end;
    _Atomic uint64_t dns_query[2];  // UDP to port 53: (id << 48) | send time in us (low 48 bits)
    _Atomic uint8_t dns53;          // a UDP socket whose peer is port 53
    _Atomic uint8_t nonblock;       // known O_NONBLOCK (wj_conn_note_nonblock): reads cannot block
    char alpn[WJ_ALPN_MAX];      // written once by the thread finishing the handshake
    _Atomic uint64_t t_end_asked; // when the end was asked for (the sweep of ends overdue)
    _Atomic int32_t end_fd;       // the fd whose close asked for the end
    _Atomic uint8_t end_has_tcp;  // TCP_INFO read by the closer while the fd was still open
    _Atomic uint32_t end_rtt, end_rttvar, end_retransmits, end_total_retrans, end_lost;
} wj_conn;

enum { WJ_SLOT_FREE = 0, WJ_SLOT_LIVE = 1 };

// wj_conn.watch: one word the I/O hooks test, so that a plain counted call looks at nothing
// else. The framing bits are framing.h's.
enum {
    WJ_WATCH_CONNECTING = 1,   // a non-blocking connect not yet seen complete
    WJ_WATCH_DNS53 = 2,        // a UDP socket talking to port 53
    WJ_WATCH_FRAME_RAW = 4,    // its raw bytes are framed (HTTP/1)
    WJ_WATCH_FRAME_PLAIN = 8,  // its TLS plaintext is framed
    WJ_WATCH_CLIENT = 16,      // the app is the client: its sends are announced first
    WJ_WATCH_INHERITED = 32,   // a forked child's connection from its parent, not used yet here
    WJ_WATCH_IO = WJ_WATCH_CONNECTING | WJ_WATCH_DNS53 | WJ_WATCH_FRAME_RAW | WJ_WATCH_INHERITED,
};

#define WJ_LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define WJ_STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

// An fd table entry: 0, or the address of the connection the fd refers to: one load from fd
// to connection. A forked child empties its table (it forgets every connection it inherited),
// and the pool's generation moves on, so that the inherited slots count as free.
WJ_HIDDEN extern _Atomic(_Atomic uint64_t *) wj_fd_chunks[WJ_FD_CHUNKS];
WJ_HIDDEN extern _Atomic(wj_conn *) wj_conn_chunks[WJ_CONN_CHUNKS];
WJ_HIDDEN extern uint64_t wj_fd_generation;
WJ_HIDDEN extern _Atomic int wj_connecting_count;  // connections with a connect pending

static inline wj_conn *wj_conn_at(uint32_t slot) {
    wj_conn *chunk = atomic_load_explicit(&wj_conn_chunks[slot >> WJ_CONN_CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[slot & (WJ_CONN_CHUNK - 1)] : 0;
}

static inline uint64_t wj_ref_make(const wj_conn *c) { return (uint64_t)(uintptr_t)c; }
static inline wj_conn *wj_ref_conn(uint64_t ref) { return (wj_conn *)(uintptr_t)ref; }
static inline int wj_ref_current(uint64_t ref) { return ref != 0; }

static inline uint64_t wj_fd_ref(int fd) {
    if (WJ_UNLIKELY((unsigned)fd >= WJ_FD_MAX)) return 0;
    _Atomic uint64_t *chunk = atomic_load_explicit(&wj_fd_chunks[(unsigned)fd >> WJ_FD_CHUNK_BITS], memory_order_acquire);
    if (WJ_LIKELY(chunk == 0)) return 0;
    return atomic_load_explicit(&chunk[(unsigned)fd & (WJ_FD_CHUNK - 1)], memory_order_acquire);
}

// Whether c's calls may go straight to the kernel (context.h: direct system calls).
static inline int wj_conn_direct(const wj_conn *c) {
    return WJ_LOAD(((wj_conn *)c)->direct) == atomic_load_explicit(&wj_direct_epoch, memory_order_relaxed);
}
// What a call just set (socket or accept4 with SOCK_NONBLOCK, fcntl F_SETFL, ioctl FIONBIO) or
// found (connect) of c's O_NONBLOCK. Direct calls only for a socket opened in this epoch: one
// opened before the last fork, vfork or clone may be another process's too.
WJ_HIDDEN void wj_conn_note_nonblock(wj_conn *c, int nonblock);

// The connection fd refers to, 0 if none (the hot path's one check).
static inline wj_conn *wj_fd_conn(int fd) { return wj_ref_conn(wj_fd_ref(fd)); }
static inline uint32_t wj_conn_slot_of(const wj_conn *c, int fd) {
    (void)fd;
    return atomic_load_explicit(&((wj_conn *)c)->slot, memory_order_relaxed);
}

// New connection for fd (which must not refer to one: callers release it first). Returns it
// with one reference, conn_id set; 0 when the tables are exhausted (counted).
WJ_HIDDEN wj_conn *wj_conn_new(int fd, int transport, int family, int role, uint64_t t_open, uint32_t *slot);
// fd now refers to the connection `ref` (a current fd-table value) as well: dup and friends.
WJ_HIDDEN void wj_fd_add_ref(int fd, uint64_t ref);
// fd no longer refers to its connection (close, dup2 over it). If that was the last fd, the
// connection ends: the close event is returned in *ev (1) to push after the real close.
// When a call is still in flight on the connection (another thread's send whose response was
// read and the socket closed on a third), its end is left to that call: 0 is returned and
// wj_conn_call_done pushes the close event.
WJ_HIDDEN int wj_fd_drop(int fd, uint64_t now, wj_event *ev);
// The I/O hooks' brackets around the real call. No fence: a call returning just as the
// closer looks may be missed by both (the closer sees it busy, it sees no end asked); the
// agent's sweep then ends the connection at the time of its last I/O.
static inline void wj_conn_call_begin(wj_conn *c, int dir) { WJ_STORE(c->busy[dir], WJ_LOAD(c->busy[dir]) + 1); }
WJ_HIDDEN void wj_conn_end_deferred(wj_conn *c);
static inline void wj_conn_call_done(wj_conn *c, int dir) {
    WJ_STORE(c->busy[dir], WJ_LOAD(c->busy[dir]) - 1);
    if (WJ_UNLIKELY(WJ_LOAD(c->end_pending))) wj_conn_end_deferred(c);
}
// Ends connections whose end waits for no call any more, or has waited for one longer than
// grace_ns (a call left by longjmp never returns; at exit, grace 0). Cheap when none waits.
WJ_HIDDEN void wj_conns_end_overdue(uint64_t now, uint64_t grace_ns);
WJ_HIDDEN void wj_note_error(wj_conn *c, int err, int phase);
WJ_HIDDEN void wj_conn_connected(wj_conn *c, uint64_t now);
WJ_HIDDEN void wj_conn_connect_failed(wj_conn *c, int fd, int err);
WJ_HIDDEN uint64_t wj_next_conn_id(void);

WJ_HIDDEN void wj_close_tracked_range(unsigned lo, unsigned hi);
// In a forked child: the connections it inherited stay (a CGI child answers on its parent's
// socket), marked WJ_WATCH_INHERITED until its first use of them; the pool's generation moves
// on. In the parent, after a fork: connections open now may be used by the child.
WJ_HIDDEN void wj_conns_forked(void);
// The HTTP framers' end of a connection (framing.c registers it with its first framer): called
// by the one caller that ends the connection, before its close event.
typedef void (*wj_conn_end_fn)(wj_conn *c, uint64_t conn_id, uint64_t now, int handed_off);
WJ_HIDDEN void wj_conns_on_end(wj_conn_end_fn fn);
// Connection ids: the next one to give (a connection carried through exec keeps its id), and
// none at or below `id` from now on.
WJ_HIDDEN void wj_conn_ids_next(uint64_t id);
WJ_HIDDEN void wj_conn_ids_after(uint64_t id);
// Calls fn for every fd the table holds, with its connection, until fn returns nonzero.
WJ_HIDDEN void wj_fds_each(int (*fn)(int fd, wj_conn *c, void *ctx), void *ctx);
WJ_HIDDEN void wj_conns_fork_parent(void);
WJ_HIDDEN extern _Atomic uint32_t wj_forks;
WJ_HIDDEN extern uint64_t wj_untracked_fds;   // sockets whose fd was too large for the table
// Bytes moved by calls that returned after their connection had ended (a call still running a
// second after its socket's close, or a close racing the call's start): in no connection.
WJ_HIDDEN extern _Atomic uint64_t wj_bytes_after_end;
WJ_HIDDEN int wj_conn_snapshot(uint32_t slot, uint64_t conn_id, wj_event *out);
#endif
