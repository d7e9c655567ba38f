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
#include <netdb.h>
#include <time.h>

#define WJ_HIDDEN __attribute__((visibility("hidden")))
#define WJ_LIKELY(x) __builtin_expect(!!(x), 1)
#define WJ_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { WJ_IN = 0, WJ_OUT = 1 };

// ---- real functions: one typedef and one lazily resolved slot per table entry
#define WJ_HOOK(ret, name, params, args) typedef ret (*wj_fn_##name) params;
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted) typedef ret (*wj_fn_##name) params;
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK

typedef struct wj_real_table {
#define WJ_HOOK(ret, name, params, args) wj_fn_##name name;
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted) wj_fn_##name name;
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
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted) WJ_RESOLVER(name)
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK
#define WJ_REAL(name) (wj_real_##name())

// ---- per-fd connection state. Two levels so that large fd numbers cost memory only when
// used: 1024 chunks of 1024 entries, each chunk mmap'ed the first time a socket lands in it.
#define WJ_FD_CHUNK_BITS 10
#define WJ_FD_CHUNK (1u << WJ_FD_CHUNK_BITS)
#define WJ_FD_CHUNKS 1024u
#define WJ_FD_MAX (WJ_FD_CHUNK * WJ_FD_CHUNKS)

typedef struct wj_fd_entry {
    _Atomic uint64_t conn_id;   // 0: not a tracked connection
    uint64_t generation;        // equals wj_fd_generation while valid (bumped in fork children)
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    uint64_t t_open;
    uint32_t role;
    _Atomic uint32_t connecting;  // non-blocking connect not yet known to have completed
    // Phase times (CLOCK_MONOTONIC ns, 0 = not yet). Plain stores: a racing writer can only
    // replace one of two nearly equal times with the other.
    uint64_t t_connected;
    uint64_t t_first_out;
    uint64_t t_first_in;
    uint64_t t_last_io;
    uint64_t reserved[2];
} wj_fd_entry;  // 96 bytes

WJ_HIDDEN extern _Atomic(wj_fd_entry *) wj_fd_chunks[WJ_FD_CHUNKS];
WJ_HIDDEN extern uint64_t wj_fd_generation;

static inline wj_fd_entry *wj_fd_tracked(int fd) {
    if (WJ_UNLIKELY((unsigned)fd >= WJ_FD_MAX)) return 0;
    wj_fd_entry *chunk = atomic_load_explicit(&wj_fd_chunks[(unsigned)fd >> WJ_FD_CHUNK_BITS], memory_order_acquire);
    if (WJ_LIKELY(chunk == 0)) return 0;
    wj_fd_entry *e = &chunk[(unsigned)fd & (WJ_FD_CHUNK - 1)];
    if (WJ_LIKELY(atomic_load_explicit(&e->conn_id, memory_order_relaxed) == 0)) return 0;
    return e->generation == wj_fd_generation ? e : 0;
}
WJ_HIDDEN wj_fd_entry *wj_fd_slot(int fd);          // allocates the chunk if needed; 0 if fd too large
WJ_HIDDEN uint64_t wj_next_conn_id(void);

// ---- state and guard
WJ_HIDDEN extern wj_process wj_proc;
WJ_HIDDEN extern wj_ring wj_event_ring;
WJ_HIDDEN extern wj_ring wj_dns_ring;
WJ_HIDDEN extern int wj_disabled;   // AT_SECURE, WEDJAT_DISABLE, or init failure

// True when this call may do wedjat work: initialised, enabled, not wedjat's own thread,
// not already inside wedjat on this thread, not in a vfork child. Pair with wj_leave().
WJ_HIDDEN int wj_enter(void);
WJ_HIDDEN void wj_leave(void);
WJ_HIDDEN int wj_enter_ending(void);  // wj_enter for exit paths: also from inside a hook (signal handler)

WJ_HIDDEN void wj_push(wj_event *ev);          // fills tid; drops and counts when full
WJ_HIDDEN void wj_push_dns(wj_dns_event *ev);
WJ_HIDDEN void wj_agent_ensure_started(void);
WJ_HIDDEN int wj_take_close(int fd, wj_fd_entry *e, uint64_t now, wj_event *ev);
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
WJ_HIDDEN int wj_conn_snapshot(int fd, uint64_t conn_id, wj_event *out);
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

// Called from the vfork trampoline: marks this thread so hooks run in the child pass
// straight through; returns the real vfork.
WJ_HIDDEN void *wj_vfork_prepare(void);
#endif
