// Private to the interposer: real-function slots, the fd table, the reentrancy guard.
#ifndef WEDJAT_INTERNAL_H
#define WEDJAT_INTERNAL_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_agent_api.h"
#include "wedjat_json.h"
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/sendfile.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <netdb.h>
#include <time.h>

#define WJ_HIDDEN __attribute__((visibility("hidden")))
#define WJ_EXPORT __attribute__((visibility("default")))
#define WJ_LIKELY(x) __builtin_expect(!!(x), 1)
#define WJ_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { WJ_IN = 0, WJ_OUT = 1 };

// ---- real functions: one typedef and one lazily resolved slot per table entry
#define WJ_HOOK(ret, name, params, args) typedef ret (*wj_fn_##name) params;
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs) typedef ret (*wj_fn_##name) params;
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK

typedef struct wj_real_table {
#define WJ_HOOK(ret, name, params, args) wj_fn_##name name;
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs) wj_fn_##name name;
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK
} wj_real_table;

WJ_HIDDEN extern wj_real_table wj_real;
WJ_HIDDEN void *wj_resolve(const char *name);

// wj_real_NAME(): the next definition of NAME (libc's), resolved on first use so hooks work
// even when called from another library's constructor before ours ran.
#define WJ_RESOLVER(name)                                           \
    static inline wj_fn_##name wj_real_##name(void) {               \
        wj_fn_##name f = wj_real.name;                              \
        if (WJ_UNLIKELY(!f)) wj_real.name = f = (wj_fn_##name)wj_resolve(#name); \
        return f;                                                   \
    }
#define WJ_HOOK(ret, name, params, args) WJ_RESOLVER(name)
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs) WJ_RESOLVER(name)
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK
#define WJ_REAL(name) (wj_real_##name())

// ---- connections. A connection is a socket as the kernel sees it: it lives in a slot of a
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
    _Atomic uint8_t http;        // capture bytes for the HTTP parser
    _Atomic uint8_t err_phase;
    _Atomic uint16_t tls_version;
    _Atomic int32_t err;         // first error: failed connect, I/O error, TLS failure
    _Atomic int32_t epfd;        // epoll set it was registered in while connecting (-1 none)
    _Atomic uint64_t epdata;     // and the data registered with it
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic uint64_t plain_in, plain_out;   // TLS plaintext stream offsets
    _Atomic uint64_t want_in, want_out;     // the parser needs bytes from these offsets on
    _Atomic uint64_t want_plain_in, want_plain_out;
    _Atomic uint64_t want_tag;              // the conn_id the want_* values were set for
    _Atomic uint64_t t_open, t_connected, t_first_out, t_first_in, t_last_io, t_shutdown;
    _Atomic uint64_t t_tls_start, t_tls_end;
    _Atomic uint64_t dns_query[2];  // UDP to port 53: (id << 48) | send time in us (low 48 bits)
    _Atomic uint8_t dns53;          // a UDP socket whose peer is port 53
    _Atomic uint8_t nonblock;       // known O_NONBLOCK (connect, fcntl F_SETFL): reads cannot block
    char alpn[WJ_ALPN_MAX];      // written once by the thread finishing the handshake
} wj_conn;

enum { WJ_SLOT_FREE = 0, WJ_SLOT_LIVE = 1 };

#define WJ_LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define WJ_STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

// An fd table entry: 0, or (generation << 32) | (slot + 1). The generation is bumped in a
// forked child, which so forgets every connection it inherited.
WJ_HIDDEN extern _Atomic(_Atomic uint64_t *) wj_fd_chunks[WJ_FD_CHUNKS];
WJ_HIDDEN extern _Atomic(wj_conn *) wj_conn_chunks[WJ_CONN_CHUNKS];
WJ_HIDDEN extern uint64_t wj_fd_generation;
WJ_HIDDEN extern _Atomic int wj_connecting_count;  // connections with a connect pending

static inline wj_conn *wj_conn_at(uint32_t slot) {
    wj_conn *chunk = atomic_load_explicit(&wj_conn_chunks[slot >> WJ_CONN_CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[slot & (WJ_CONN_CHUNK - 1)] : 0;
}

static inline uint64_t wj_fd_ref(int fd) {
    if (WJ_UNLIKELY((unsigned)fd >= WJ_FD_MAX)) return 0;
    _Atomic uint64_t *chunk = atomic_load_explicit(&wj_fd_chunks[(unsigned)fd >> WJ_FD_CHUNK_BITS], memory_order_acquire);
    if (WJ_LIKELY(chunk == 0)) return 0;
    uint64_t ref = atomic_load_explicit(&chunk[(unsigned)fd & (WJ_FD_CHUNK - 1)], memory_order_acquire);
    if (WJ_LIKELY(ref == 0) || (ref >> 32) != (uint32_t)wj_fd_generation) return 0;
    return ref;
}

// The connection fd refers to, 0 if none (the hot path's one check).
static inline wj_conn *wj_fd_conn(int fd) {
    uint64_t ref = wj_fd_ref(fd);
    return ref ? wj_conn_at((uint32_t)ref - 1) : 0;
}
static inline uint32_t wj_conn_slot_of(const wj_conn *c, int fd) {
    (void)c;
    return (uint32_t)wj_fd_ref(fd) - 1;
}

// New connection for fd (which must not refer to one: callers release it first). Returns it
// with one reference, conn_id set; 0 when the tables are exhausted (counted).
WJ_HIDDEN wj_conn *wj_conn_new(int fd, int transport, int family, int role, uint64_t t_open, uint32_t *slot);
// fd now refers to the connection `ref` (an fd-table value) as well: dup and friends.
WJ_HIDDEN void wj_fd_add_ref(int fd, uint64_t ref);
// fd no longer refers to its connection (close, dup2 over it). If that was the last fd, the
// connection ends: the close event is returned in *ev (1) to push after the real close.
WJ_HIDDEN int wj_fd_drop(int fd, uint64_t now, wj_event *ev);
WJ_HIDDEN void wj_note_error(wj_conn *c, int err, int phase);
WJ_HIDDEN void wj_conn_connected(wj_conn *c, uint64_t now);
WJ_HIDDEN void wj_conn_connect_failed(wj_conn *c, int fd, int err);
WJ_HIDDEN uint64_t wj_next_conn_id(void);
// A datagram to or from port 53 on a UDP connection: queries are remembered, answers become
// dns records (resolvers that bypass libc).
WJ_HIDDEN void wj_dns_datagram(wj_conn *c, int dir, const void *buf, const struct iovec *iov, int iovcnt, uint64_t n);
WJ_HIDDEN void wj_capture(wj_conn *c, int fd, int dir, int plain, const void *buf, const struct iovec *iov, int iovcnt,
                          uint64_t start, uint64_t n, uint64_t now);

// ---- state and guard
WJ_HIDDEN extern wj_process wj_proc;
WJ_HIDDEN extern wj_ring wj_event_ring;
WJ_HIDDEN extern wj_ring wj_dns_ring;
WJ_HIDDEN extern wj_ring wj_payload_ring;
WJ_HIDDEN extern int wj_disabled;   // AT_SECURE, WEDJAT_DISABLE, or init failure

// True when this call may do wedjat work: initialised, enabled, not wedjat's own thread,
// not already inside wedjat on this thread, not in a vfork child. Pair with wj_leave().
WJ_HIDDEN int wj_enter(void);
WJ_HIDDEN void wj_leave(void);
WJ_HIDDEN int wj_lock_app_fds(void);          // see state.c
WJ_HIDDEN void wj_unlock_app_fds(int locked);
WJ_HIDDEN int wj_enter_ending(void);  // wj_enter for exit paths: also from inside a hook (signal handler)

WJ_HIDDEN void wj_push(wj_event *ev);          // fills tid; drops and counts when full
WJ_HIDDEN void wj_push_dns(wj_dns_event *ev);
WJ_HIDDEN void wj_agent_ensure_started(void);
WJ_HIDDEN void wj_agent_nudge(void);
// True when more than a quarter of the ring is waiting for the agent.
static inline int wj_ring_filling(const wj_ring *r) {
    return atomic_load_explicit(&((wj_ring *)r)->enq, memory_order_relaxed) -
               atomic_load_explicit(&((wj_ring *)r)->deq, memory_order_relaxed) > (r->mask + 1) / 4;
}
WJ_HIDDEN void wj_close_tracked_range(unsigned lo, unsigned hi);

// Exit and exec paths (agent.c).
WJ_HIDDEN void wj_finish(int reason, int status, int has_status);
WJ_HIDDEN void wj_before_exec(const char *target, char *const envp[]);
WJ_HIDDEN uint64_t wj_proc_start_ticks(void);  // /proc/self/stat field 22, read once
WJ_HIDDEN void wj_after_failed_exec(void);
WJ_HIDDEN void wj_main_entered(int argc, char **argv);
// argv as main() received it, NUL-separated (programs such as nginx rewrite it later).
WJ_HIDDEN extern char wj_argv_copy[32768];
WJ_HIDDEN extern size_t wj_argv_len;
WJ_HIDDEN extern int wj_argv_truncated;
WJ_HIDDEN void wj_flush_now(void);   // a periodic flush, on the calling thread
#define WEDJAT_VERSION "0.1.0"
WJ_HIDDEN void wj_set_exit_status(int status);
WJ_HIDDEN extern int wj_main_seen;
WJ_HIDDEN void wj_agent_atfork_prepare(void);
WJ_HIDDEN void wj_agent_atfork_parent(void);
WJ_HIDDEN void wj_agent_atfork_child(void);
WJ_HIDDEN void wj_mark_agent_thread(void);
WJ_HIDDEN int wj_conn_snapshot(uint32_t slot, uint64_t conn_id, wj_event *out);
WJ_HIDDEN void wj_conn_want(uint32_t slot, uint64_t conn_id, int which, uint64_t offset);
// From which stream offset the parser wants this connection's bytes. The agent may set a value
// for the slot's previous connection after this one took the slot: such a value is tagged with
// the other conn_id and means nothing here (this connection then gets all its bytes captured).
static inline uint64_t wj_want(wj_conn *c, int dir, int plain) {
    if (atomic_load_explicit(&c->want_tag, memory_order_acquire) != WJ_LOAD(c->conn_id)) return 0;
    return WJ_LOAD(*(plain ? (dir == WJ_OUT ? &c->want_plain_out : &c->want_plain_in)
                           : (dir == WJ_OUT ? &c->want_out : &c->want_in)));
}
// Set by the byte-counting hooks while a TLS call runs on this thread: the socket it used.
WJ_HIDDEN extern __thread int wj_tls_inside, wj_tls_fd;
WJ_HIDDEN const char *wj_errno_name(int err);

// Records the C side writes itself (records.c): the process life cycle.
WJ_HIDDEN size_t wj_format_process_start(char *buf, size_t cap);
WJ_HIDDEN size_t wj_format_fork(char *buf, size_t cap, const wj_event *ev);
WJ_HIDDEN size_t wj_format_drops(char *buf, size_t cap, uint64_t now, uint64_t events, uint64_t records);
WJ_HIDDEN size_t wj_format_exec_failed(char *buf, size_t cap, uint64_t now, int tid);
WJ_HIDDEN size_t wj_format_process_end(char *buf, size_t cap, uint64_t now, int tid, const char *counts,
                                       uint64_t dropped_events, uint64_t dropped_records,
                                       uint64_t untracked, uint64_t open_connections);
WJ_HIDDEN int64_t wj_epoch_us(uint64_t mono_ns);
WJ_HIDDEN const char *wj_stat_field(const char *stat, int n);

// Process vitals (vitals.c): `sample` records, taken on the agent thread and in the final
// flush, and the `startup` record.
enum { WJ_READY_CONNECT = 1, WJ_READY_ACCEPT, WJ_READY_ACCEPT4, WJ_READY_LISTEN, WJ_READY_POLL, WJ_READY_PPOLL,
       WJ_READY_SELECT, WJ_READY_PSELECT, WJ_READY_EPOLL_WAIT, WJ_READY_EPOLL_PWAIT, WJ_READY_EPOLL_PWAIT2 };
WJ_HIDDEN extern _Atomic uint64_t wj_ready_word;  // (mono ns << 4) | WJ_READY_*, 0 until ready
WJ_HIDDEN extern _Atomic int wj_agent_tid;        // the agent thread's kernel tid, 0 if none yet
WJ_HIDDEN void wj_note_ready_slow(int call);
// The program is "ready" at its first connect/accept/listen or wait call (poll, select,
// epoll_wait, ...) after main: one relaxed load once that happened.
static inline void wj_note_ready(int call) {
    if (WJ_UNLIKELY(!atomic_load_explicit(&wj_ready_word, memory_order_relaxed))) wj_note_ready_slow(call);
}
WJ_HIDDEN void wj_vitals_main_entered(void);
WJ_HIDDEN void wj_vitals_forked_child(void);
WJ_HIDDEN void wj_vitals_exec_called(uint64_t mono_ns);  // from the previous image's exec hint
WJ_HIDDEN uint64_t wj_vitals_next_due(void);              // 0 when sampling is off
WJ_HIDDEN void wj_vitals_baseline(void);
WJ_HIDDEN void wj_vitals_agent_cpu(void);                 // on the agent thread: publish its CPU time
WJ_HIDDEN size_t wj_vitals_sample(char *buf, size_t cap, int at_exit, int agent_tid);
WJ_HIDDEN int wj_vitals_startup_due(int final);
WJ_HIDDEN size_t wj_vitals_format_startup(char *buf, size_t cap);
WJ_HIDDEN void wj_agent_start_sampler(void);
// The sampler thread starts lazily (agent.c): wanted from main (or a fork) on, started by the
// first wait, sleep, thread creation or network event, or by any I/O call once the process
// has lived WJ_SAMPLER_GATE_MS. One relaxed load per call until then.
#define WJ_SAMPLER_GATE_MS 20
WJ_HIDDEN extern _Atomic int wj_sampler_wanted;
WJ_HIDDEN void wj_sampler_want(void);
WJ_HIDDEN void wj_sampler_poke_slow(int gated);
static inline void wj_sampler_poke(int gated) {
    if (WJ_UNLIKELY(atomic_load_explicit(&wj_sampler_wanted, memory_order_relaxed))) wj_sampler_poke_slow(gated);
}
WJ_HIDDEN int wj_maybe_in_signal_handler(void);  // stalls.c
WJ_HIDDEN int wj_agent_threads_alive(void);   // wedjat threads in this process (0 or 1; 2 briefly)

// Stalls (stalls.c). The wait wrappers bracket the real wait; blocking hooks report a call that
// took longer than the threshold with wj_stall_blocked (on the calling thread, after the call).
WJ_HIDDEN extern uint64_t wj_stall_ns;   // WEDJAT_STALL_MS in ns, 0 = off
WJ_HIDDEN void wj_wait_begin(void);
WJ_HIDDEN void wj_wait_end(int ready_call);  // WJ_READY_POLL ... WJ_READY_EPOLL_PWAIT2; keeps errno
static inline int wj_wait_end_passing(int ready_call, int result) {
    wj_wait_end(ready_call);
    return result;
}
WJ_HIDDEN void wj_stall_blocked(const char *call, int fd, const struct sockaddr *peer, const char *host,
                                uint64_t start, uint64_t end, int err);
WJ_HIDDEN uint64_t wj_stalls_watch(void);        // the watchdog's round; returns its next due time
WJ_HIDDEN uint64_t wj_stalls_next_due(void);
WJ_HIDDEN int wj_stalls_ready(void);
WJ_HIDDEN void wj_stalls_final(void);
WJ_HIDDEN size_t wj_stalls_next_record(char *buf, size_t cap, int *is_modules);
WJ_HIDDEN void wj_stalls_loops_json(wj_json *j, uint64_t now);
WJ_HIDDEN void wj_stalls_init(void);
WJ_HIDDEN uint64_t wj_stalls_lost(void);       // stalls not recorded: no buffer free, no loop slot
WJ_HIDDEN void wj_stalls_atfork_child(void);
WJ_HIDDEN void wj_agent_start_watch(void);       // the agent thread, even with sampling off
WJ_HIDDEN void wj_agent_nudge_stall(void);       // wake it: a stall record is ready
// Blocking reads on client sockets are timed for blocked stalls: the start time, or 0.
static inline uint64_t wj_blocking_begin(int fd, int dir) {
    if (dir != WJ_IN || WJ_LIKELY(!wj_stall_ns)) return 0;
    wj_conn *c = wj_fd_conn(fd);
    if (!c || WJ_LOAD(c->role) != WJ_ROLE_CLIENT || WJ_LOAD(c->nonblock)) return 0;
    return wj_now_ns();
}

// Called from the vfork trampoline: marks this thread so hooks run in the child pass
// straight through; returns the real vfork.
WJ_HIDDEN void *wj_vfork_prepare(void);
#endif
