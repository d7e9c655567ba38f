// The calls that move bytes (read, recv, write, send and their variants): each is counted on
// its connection, and its bytes captured for the HTTP parser when it wants them. The hot path:
// a gate, one fd-table load for an fd that is not a tracked socket.
#include "conns.h"
#include "context.h"
#include "dns.h"
#include "hooks.h"
#include "lifecycle.h"
#include "sockets.h"
#include "stalls.h"
#include "tls.h"
#include <errno.h>

// Out of line: only tracked connections get here.
static __attribute__((noinline)) void io_on_conn(wj_conn *c, int fd, int dir, uint64_t n, const void *buf,
                                                 const struct iovec *iov, int iovcnt) {
    uint64_t start = atomic_fetch_add_explicit(dir == WJ_IN ? &c->bytes_in : &c->bytes_out, n, memory_order_relaxed);
    uint64_t now = wj_now_ns();
    if (wj_tls_inside) wj_tls_fd = fd;
    if (start == 0) {
        _Atomic uint64_t *first = dir == WJ_IN ? &c->t_first_in : &c->t_first_out;
        if (!WJ_LOAD(*first)) WJ_STORE(*first, now);
        if (WJ_UNLIKELY(WJ_LOAD(c->role) == WJ_ROLE_UNKNOWN)) wj_udp_first_io(c, fd, dir, now);
    }
    WJ_STORE(c->t_last_io, now);
    // Data moved: a pending non-blocking connect has completed by now at the latest.
    if (WJ_UNLIKELY(WJ_LOAD(c->connecting))) wj_conn_connected(c, now);
    if (WJ_UNLIKELY(WJ_LOAD(c->dns53))) wj_dns_datagram(c, dir, buf, iov, iovcnt, n);
    // Bytes for the HTTP parser, if it wants any of these (a non-HTTP stream costs one load).
    if (WJ_LOAD(c->http) && !WJ_LOAD(c->tls)) {
        uint64_t want = wj_want(c, dir, 0);
        if (want != UINT64_MAX && start + n > want) wj_capture(c, fd, dir, 0, buf, iov, iovcnt, start, n, now);
    }
}

static __attribute__((noinline)) void io_failed(int fd, int err) {
    wj_conn *c = wj_fd_conn(fd);
    if (!c || wj_is_retry(err) || err == EBADF || err == EFAULT || err == EINVAL) return;
    if (WJ_LOAD(c->connecting)) wj_conn_connect_failed(c, fd, err);  // e.g. ECONNREFUSED on first read
    else wj_note_error(c, err, WJ_ERR_IO);
}

static inline void count_io(int fd, int dir, uint64_t n, const void *buf, const struct iovec *iov, int iovcnt) {
    wj_conn *c = wj_fd_conn(fd);
    if (WJ_LIKELY(c == 0)) return;
    io_on_conn(c, fd, dir, n, buf, iov, iovcnt);
}

#define WJ_BUF(p) (p), 0, 0
#define WJ_IOV(v, n) 0, (v), (n)
#define WJ_MSG(m) 0, (m)->msg_iov, (int)(m)->msg_iovlen
#define WJ_NOBUF 0, 0, 0

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

#define WJ_IO_HOOK(ret, name, params, args, fdexpr, dir, counted, bufs) \
    WJ_EXPORT ret name params {                                         \
        int g_ = wj_gate();                                             \
        if (WJ_UNLIKELY(g_ != WJ_GATE_RUN) && (g_ != WJ_GATE_INIT || wj_lc_init() != WJ_GATE_RUN)) \
            return WJ_REAL(name) args;                                  \
        wj_lc_poke(1);                                                  \
        uint64_t t_block_ = wj_blocking_begin(fdexpr, dir);             \
        ret r = WJ_REAL(name) args;                                     \
        if (WJ_UNLIKELY(t_block_)) blocking_end(#name, fdexpr, t_block_, r < 0); \
        if (r > 0) {                                                    \
            if (counted) count_io(fdexpr, dir, (uint64_t)r, bufs);      \
        } else if (WJ_UNLIKELY(r < 0)) {                                \
            int err_ = errno;                                           \
            io_failed(fdexpr, err_);                                    \
            errno = err_;                                               \
        }                                                               \
        return r;                                                       \
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
        for (int i = 0; i < r; i++) count_io(fd, WJ_IN, vec[i].msg_len, WJ_NOBUF);
    return r;
}

// splice moves bytes between a pipe and a socket (either side may be the socket).
ssize_t wj_hook_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags) {
    ssize_t r = WJ_REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
    if (r > 0) {
        count_io(fd_in, WJ_IN, (uint64_t)r, WJ_NOBUF);
        count_io(fd_out, WJ_OUT, (uint64_t)r, WJ_NOBUF);
    }
    return r;
}

int wj_hook_sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags) {
    int r = WJ_REAL(sendmmsg)(fd, vec, n, flags);
    for (int i = 0; i < r; i++) count_io(fd, WJ_OUT, vec[i].msg_len, WJ_NOBUF);
    return r;
}

