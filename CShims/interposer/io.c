// The calls that move bytes (read, recv, write, send and their variants): each is counted on
// its connection, and its bytes captured for the HTTP parser when it wants them. The hot path:
// a gate, one fd-table load for an fd that is not a tracked socket.
#include "conns.h"
#include "context.h"
#include "dns.h"
#include "framing.h"
#include "hooks.h"
#include "lifecycle.h"
#include "sockets.h"
#include "stalls.h"
#include "tls.h"
#include <errno.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "sys_raw.h"

// What a counted call must do besides counting (first bytes, a pending connect, DNS datagrams,
// HTTP framing), out of line: a plain counted call never gets here.
static __attribute__((noinline)) void io_watch(wj_conn *c, int fd, int dir, uint64_t start, uint64_t n, uint64_t now,
                                               const void *buf, const struct iovec *iov, int iovcnt) {
    if (WJ_LOAD(c->watch) & WJ_WATCH_INHERITED) wj_inherited_first_use(c, fd);
    if (start == 0) {
        _Atomic uint64_t *first = dir == WJ_IN ? &c->t_first_in : &c->t_first_out;
        if (!WJ_LOAD(*first)) WJ_STORE(*first, now);
        if (WJ_UNLIKELY(WJ_LOAD(c->role) == WJ_ROLE_UNKNOWN)) wj_udp_first_io(c, fd, dir, now);
    }
    uint32_t w = WJ_LOAD(c->watch);
    // Data moved: a pending non-blocking connect has completed by now at the latest.
    if (w & WJ_WATCH_CONNECTING) wj_conn_connected(c, now);
    if (w & WJ_WATCH_DNS53) wj_dns_datagram(c, dir, buf, iov, iovcnt, n);
    // HTTP framed right here, on the app's bytes.
    if ((w & WJ_WATCH_FRAME_RAW) && !WJ_LOAD(c->tls)) wj_framing_feed(c, WJ_STREAM_RAW, dir, buf, iov, iovcnt, start, n, now);
}

// wj_now_ns in line: the clock read of every counted call.
static inline uint64_t io_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Counting a call that moved n bytes on connection c: one atomic add, one clock read, one
// store, one test of the watch word.
static inline void io_count(wj_conn *c, int fd, int dir, uint64_t n, const void *buf, const struct iovec *iov, int iovcnt) {
    uint64_t start = atomic_fetch_add_explicit(dir == WJ_IN ? &c->bytes_in : &c->bytes_out, n, memory_order_relaxed);
    uint64_t now = io_now_ns();
    WJ_STORE(c->t_last_io, now);
    if (WJ_UNLIKELY(start == 0 || (WJ_LOAD(c->watch) & WJ_WATCH_IO))) io_watch(c, fd, dir, start, n, now, buf, iov, iovcnt);
}

// Before a client's send on a framed stream: the request it begins is announced (framing.h).
static __attribute__((noinline)) void io_announce(wj_conn *c, const void *buf, size_t len, const struct iovec *iov,
                                                  int iovcnt) {
    if (WJ_LOAD(c->tls)) return;
    wj_framing_announce(c, WJ_STREAM_RAW, buf, len, iov, iovcnt, WJ_LOAD(c->bytes_out));
}

static __attribute__((noinline)) void io_failed(wj_conn *c, uint64_t id, int fd, int err) {
    if (WJ_LOAD(c->conn_id) != id || wj_is_retry(err) || err == EBADF || err == EFAULT || err == EINVAL) return;
    if (WJ_LOAD(c->connecting)) wj_conn_connect_failed(c, fd, err);  // e.g. ECONNREFUSED on first read
    else wj_note_error(c, err, WJ_ERR_IO);
}

// Counting outside the generated hooks (recvmmsg, sendmmsg, splice): bytes not seen.
static void count_unseen(int fd, int dir, uint64_t n) {
    wj_conn *c = wj_fd_conn(fd);
    if (WJ_LIKELY(c == 0)) return;
    io_count(c, fd, dir, n, 0, 0, 0);
}

// The bytes of a call: a buffer (and, for sends, its length), or an iovec array, or none.
#define WJ_BUF(p) (p), 0, 0, 0
#define WJ_SBUF(p, len) (p), (len), 0, 0
#define WJ_IOV(v, n) 0, 0, (v), (n)
#define WJ_MSG(m) 0, 0, (m)->msg_iov, (int)(m)->msg_iovlen
#define WJ_NOBUF 0, 0, 0, 0
#define WJ_BUF_ARGS(buf, len, iov, iovcnt) buf, iov, iovcnt
#define WJ_ANNOUNCE_ARGS(buf, len, iov, iovcnt) buf, len, iov, iovcnt
#define WJ_UNWIND_ARGS(buf, len, iov, iovcnt) (const void *)(buf), (size_t)(len)
#define WJ_EXPAND(m, ...) m(__VA_ARGS__)

// libunwind walking an app thread's own stack (context.h WJ_T_UNWINDING) checks an address
// by writing one byte of it to its pipe, after reading that pipe empty (with read/write or
// with syscall(SYS_read/SYS_write): syscall.c). Its pipe is in wedjat's fd table, whose
// numbers are the app's stdin and stdout on an app thread: here the read finds it empty and
// the write says whether the byte can be read, without any fd (process_vm_readv on this
// process).
__attribute__((noinline, cold)) long wj_unwind_io(int is_write, const void *p, size_t n) {
    if (!is_write) {
        errno = EAGAIN;
        return -1;
    }
    if (n == 0) return 0;
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)p, 1};
    if (syscall(SYS_process_vm_readv, wj_context_pid, &local, 1, &remote, 1, 0) == 1) return 1;
    errno = EFAULT;
    return -1;
}
#define WJ_UNPAREN_(...) __VA_ARGS__

// Direct system calls (context.h): the kernel's call for each I/O hook, -1 for those that stay
// with libc (the fortified _chk variants check their buffer first; sendfile is no
// cancellation point, so libc's wrapper costs nothing). recv and send are recvfrom and
// sendto without an address, as glibc makes them: arguments past a call's own are zeros.
#if defined(__x86_64__)
enum {
    direct_nr_read = SYS_read, direct_nr_readv = SYS_readv, direct_nr_recv = SYS_recvfrom,
    direct_nr_recvfrom = SYS_recvfrom, direct_nr_recvmsg = SYS_recvmsg, direct_nr_write = SYS_write,
    direct_nr_writev = SYS_writev, direct_nr_send = SYS_sendto, direct_nr_sendto = SYS_sendto,
    direct_nr_sendmsg = SYS_sendmsg,
    direct_nr___read_chk = -1, direct_nr___recv_chk = -1, direct_nr___recvfrom_chk = -1,
    direct_nr_sendfile = -1, direct_nr_sendfile64 = -1,
};

static inline __attribute__((always_inline)) long direct_call(long nr, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    if (WJ_UNLIKELY((unsigned long)r > -4096UL)) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
#define DIRECT_PAD_(nr, a, b, c, d, e, f, ...) direct_call(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define DIRECT_CALL_(nr, ...) DIRECT_PAD_(nr, __VA_ARGS__, 0, 0, 0, 0, 0)
#define WJ_DIRECT_OK(name, c) (direct_nr_##name >= 0 && wj_conn_direct(c))
#else
#define DIRECT_CALL_(nr, ...) (-1)
#define WJ_DIRECT_OK(name, c) 0
#endif
// Out of line, so that the hook's own frame stays as small as with libc's call alone.
#define WJ_DIRECT_FN(ret, name, params, args) \
    static __attribute__((noinline, unused)) ret io_direct_##name params { return (ret)DIRECT_CALL_(direct_nr_##name, WJ_UNPAREN_ args); }

// The first cancel request, from anywhere (a handler, before initialisation): from now on
// every cancellation point is libc's again. A call already made directly cannot block.
WJ_EXPORT int pthread_cancel(pthread_t thread) {
    wj_direct_off();
    return WJ_REAL(pthread_cancel)(thread);
}

#define WJ_HOOK(ret, name, params, args)
#define WJ_HOOK_VOID(name, params, args)
#define WJ_HOOK_END(name, params, args)
#define WJ_HOOK_RAW(ret, name, params, args)
// A read on a blocking client socket that took longer than the stall threshold.
static void blocking_end(const char *call, int fd, uint64_t start, int failed) {
    int err = errno;
    uint64_t end = wj_now_ns();
    if (end - start >= wj_stall_ns) wj_stall_blocked(call, fd, 0, 0, start, end, failed ? err : 0);
    errno = err;
}

// The I/O hooks' one test: recording, nothing special about this thread (context.h), no
// lifecycle request pending (lifecycle.h wj_lc_poke); when it fails they take the full gate.
static inline int wj_gate_clear(void) {
    return atomic_load_explicit(&wj_run_state, memory_order_relaxed) == WJ_RUN_RECORDING && wj_self.flags == 0 &&
           !(atomic_load_explicit(&wj_requests, memory_order_relaxed) & WJ_REQ_START);
}

// The exported hook is all fast path, every exit a tail call (so it saves no register): the
// gate, the lifecycle's pending requests and the real function's pointer in one test, one fd
// lookup; an fd that is not a tracked socket (a file, a pipe) then costs nothing more. A
// tracked one goes on in io_tracked_NAME: the blocking-read timer, the announcement of a
// client's request, the call, and the counting (nothing is counted if the fd was closed
// meanwhile: its connection id changed). Anything unusual (not recording, inside wedjat's own
// work or a signal handler, a lifecycle request, the real function not yet resolved) goes to
// io_slow_NAME, which passes the full gate and does the same.
#define WJ_IO_HOOK(ret, name, params, args, fdexpr, dir, counted, bufs) \
    WJ_DIRECT_FN(ret, name, params, args)                               \
    static __attribute__((noinline)) ret io_tracked_##name(wj_conn *c_, WJ_UNPAREN_ params) { \
        wj_conn_call_begin(c_, dir);                                    \
        uint64_t id_ = WJ_LOAD(c_->conn_id), t_block_ = 0;              \
        if (dir == WJ_IN) {                                             \
            if (WJ_UNLIKELY(wj_stall_ns)) t_block_ = wj_blocking_begin_conn(c_); \
        } else if (WJ_UNLIKELY((WJ_LOAD(c_->watch) & (WJ_WATCH_CLIENT | WJ_WATCH_FRAME_RAW)) == \
                               (WJ_WATCH_CLIENT | WJ_WATCH_FRAME_RAW))) { \
            WJ_EXPAND(io_announce, c_, WJ_EXPAND(WJ_ANNOUNCE_ARGS, bufs)); \
        }                                                               \
        ret r = WJ_DIRECT_OK(name, c_) ? io_direct_##name args : wj_real.name args; \
        if (WJ_UNLIKELY(t_block_)) blocking_end(#name, fdexpr, t_block_, r < 0); \
        if (WJ_LIKELY(r > 0)) {                                         \
            if (WJ_LIKELY(WJ_LOAD(c_->conn_id) == id_)) {               \
                if (counted)                                            \
                    WJ_EXPAND(io_count, c_, fdexpr, dir, (uint64_t)r, WJ_EXPAND(WJ_BUF_ARGS, bufs)); \
            } else if (counted) {                                       \
                atomic_fetch_add_explicit(&wj_bytes_after_end, (uint64_t)r, memory_order_relaxed); \
            }                                                           \
        } else if (r < 0) {                                             \
            int err_ = errno;                                           \
            io_failed(c_, id_, fdexpr, err_);                           \
            errno = err_;                                               \
        }                                                               \
        wj_conn_call_done(c_, dir);                                     \
        return r;                                                       \
    }                                                                   \
    static __attribute__((noinline)) ret io_slow_##name params {        \
        if (WJ_UNLIKELY(wj_self.flags & WJ_T_UNWINDING) &&              \
            (!__builtin_strcmp(#name, "read") || !__builtin_strcmp(#name, "write"))) \
            return (ret)wj_unwind_io(dir == WJ_OUT, WJ_EXPAND(WJ_UNWIND_ARGS, bufs)); \
        int g_ = wj_gate();                                             \
        if (g_ != WJ_GATE_RUN && (g_ != WJ_GATE_INIT || wj_lc_init() != WJ_GATE_RUN)) \
            return WJ_REAL(name) args;                                  \
        wj_lc_poke(1);                                                  \
        (void)WJ_REAL(name);                                            \
        wj_conn *c_ = wj_fd_conn(fdexpr);                               \
        if (!c_) return WJ_REAL(name) args;                             \
        ret r_ = io_tracked_##name(c_, WJ_UNPAREN_ args);               \
        if (WJ_UNLIKELY(wj_self.flags & WJ_T_TLS_LEARN) && r_ > 0) wj_tls_fd = fdexpr; \
        return r_;                                                      \
    }                                                                   \
    WJ_EXPORT ret name params {                                         \
        if (WJ_UNLIKELY(!wj_gate_clear() || !wj_real.name)) return io_slow_##name args; \
        wj_conn *c_ = wj_fd_conn(fdexpr);                               \
        if (WJ_LIKELY(!c_)) return wj_real.name args;                   \
        return io_tracked_##name(c_, WJ_UNPAREN_ args);                 \
    }
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_HOOK_VOID
#undef WJ_HOOK_END
#undef WJ_HOOK_RAW
#undef WJ_IO_HOOK

int wj_hook_recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout) {
    int r = WJ_REAL(recvmmsg)(fd, vec, n, flags, timeout);
    if (!(flags & MSG_PEEK))
        for (int i = 0; i < r; i++) count_unseen(fd, WJ_IN, vec[i].msg_len);
    return r;
}

// splice moves bytes between a pipe and a socket (either side may be the socket).
ssize_t wj_hook_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags) {
    ssize_t r = WJ_REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
    if (r > 0) {
        count_unseen(fd_in, WJ_IN, (uint64_t)r);
        count_unseen(fd_out, WJ_OUT, (uint64_t)r);
    }
    return r;
}

int wj_hook_sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags) {
    int r = WJ_REAL(sendmmsg)(fd, vec, n, flags);
    for (int i = 0; i < r; i++) count_unseen(fd, WJ_OUT, vec[i].msg_len);
    return r;
}

