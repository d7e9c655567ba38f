// The exported wrappers. Each forwards to the real function and records what passed; the
// byte-counting ones are generated from hooks.def. errno is the real call's, always: a
// wrapper saves it right after the call and restores it before returning.
#include "internal.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/un.h>
#include <unistd.h>


extern char **environ;

// ---------------------------------------------------------------- byte counting

// Not failures: the call is to be retried, or the connect goes on in the kernel.
static inline int is_retry(int err) {
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == EINPROGRESS || err == EALREADY;
}

static void sock_name(int fd, wj_addr *out, char *path, int peer);
static void open_event(wj_event *ev, int fd, int role, int transport, uint64_t t_start, uint64_t t_end);

// A UDP socket's first datagram: who spoke first is the client; its addresses are bound by
// now (the aggregator updates the record it keeps from this second open event).
static void udp_first_io(wj_conn *c, int fd, int dir, uint64_t now) {
    uint8_t role = (uint8_t)(dir == WJ_OUT ? WJ_ROLE_CLIENT : WJ_ROLE_SERVER);
    uint8_t unknown = WJ_ROLE_UNKNOWN;
    if (!atomic_compare_exchange_strong(&c->role, &unknown, role)) return;
    int err = errno;
    wj_event ev;
    open_event(&ev, fd, role, WJ_TRANSPORT_UDP, WJ_LOAD(c->t_open), now);
    sock_name(fd, &ev.local, 0, 0);
    sock_name(fd, &ev.peer, 0, 1);
    if (ev.peer.port == 53) WJ_STORE(c->dns53, 1);
    ev.conn_id = WJ_LOAD(c->conn_id);
    ev.conn_slot = (uint32_t)wj_fd_ref(fd) - 1;
    if (ev.conn_id) wj_push(&ev);
    errno = err;
}

// Out of line: only tracked connections get here.
static __attribute__((noinline)) void io_on_conn(wj_conn *c, int fd, int dir, uint64_t n, const void *buf,
                                                 const struct iovec *iov, int iovcnt) {
    uint64_t start = atomic_fetch_add_explicit(dir == WJ_IN ? &c->bytes_in : &c->bytes_out, n, memory_order_relaxed);
    uint64_t now = wj_now_ns();
    if (wj_tls_inside) wj_tls_fd = fd;
    if (start == 0) {
        _Atomic uint64_t *first = dir == WJ_IN ? &c->t_first_in : &c->t_first_out;
        if (!WJ_LOAD(*first)) WJ_STORE(*first, now);
        if (WJ_UNLIKELY(WJ_LOAD(c->role) == WJ_ROLE_UNKNOWN)) udp_first_io(c, fd, dir, now);
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
    if (!c || is_retry(err) || err == EBADF || err == EFAULT || err == EINVAL) return;
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
// A read on a blocking client socket that took longer than the stall threshold.
static void blocking_end(const char *call, int fd, uint64_t start, int failed) {
    int err = errno;
    uint64_t end = wj_now_ns();
    if (end - start >= wj_stall_ns && wj_enter()) {
        wj_stall_blocked(call, fd, 0, 0, start, end, failed ? err : 0);
        wj_leave();
    }
    errno = err;
}

#define WJ_IO_HOOK(ret, name, params, args, fdexpr, dir, counted, bufs) \
    WJ_EXPORT ret name params {                                         \
        wj_sampler_poke(1);                                             \
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
#undef WJ_IO_HOOK

WJ_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout) {
    int r = WJ_REAL(recvmmsg)(fd, vec, n, flags, timeout);
    if (!(flags & MSG_PEEK))
        for (int i = 0; i < r; i++) count_io(fd, WJ_IN, vec[i].msg_len, WJ_NOBUF);
    return r;
}

// splice moves bytes between a pipe and a socket (either side may be the socket).
WJ_EXPORT ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags) {
    ssize_t r = WJ_REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
    if (r > 0) {
        count_io(fd_in, WJ_IN, (uint64_t)r, WJ_NOBUF);
        count_io(fd_out, WJ_OUT, (uint64_t)r, WJ_NOBUF);
    }
    return r;
}

WJ_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags) {
    int r = WJ_REAL(sendmmsg)(fd, vec, n, flags);
    for (int i = 0; i < r; i++) count_io(fd, WJ_OUT, vec[i].msg_len, WJ_NOBUF);
    return r;
}

// ---------------------------------------------------------------- connections

static void to_wj_addr(wj_addr *out, char *path, const struct sockaddr *sa, socklen_t len) {
    memset(out, 0, sizeof *out);
    if (!sa) return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        out->family = AF_INET;
        out->port = ntohs(in->sin_port);
        memcpy(out->bytes, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        out->family = AF_INET6;
        out->port = ntohs(in6->sin6_port);
        out->scope_id = in6->sin6_scope_id;
        memcpy(out->bytes, &in6->sin6_addr, 16);
    } else if (sa->sa_family == AF_UNIX) {
        out->family = AF_UNIX;
        if (!path) return;
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        size_t n = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
        if (n > sizeof un->sun_path) n = sizeof un->sun_path;
        // An abstract name starts with a NUL: shown with a leading '@', as ss(8) does.
        size_t o = 0, i = 0;
        if (n && un->sun_path[0] == 0) { path[o++] = '@'; i = 1; }
        for (; i < n && o + 1 < WJ_UNIX_PATH_MAX && (un->sun_path[i] || path[0] == '@'); i++)
            path[o++] = un->sun_path[i] ? un->sun_path[i] : '@';
        path[o] = 0;
    }
}

static void sock_name(int fd, wj_addr *out, char *path, int peer) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (syscall(peer ? SYS_getpeername : SYS_getsockname, fd, &ss, &len) == 0) to_wj_addr(out, path, (struct sockaddr *)&ss, len);
}

static int sock_type(int fd, int *type, int *proto) {
    socklen_t len = sizeof *type;
    *type = *proto = 0;
    if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, type, &len) != 0) return 0;
    len = sizeof *proto;
    syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, proto, &len);
    return 1;
}

// What wedjat tracks: TCP (connections), UDP (from socket() on), unix stream sockets.
static int transport_of(int family, int type, int proto) {
    if (family == AF_INET || family == AF_INET6) {
        if (type == SOCK_STREAM && (proto == 0 || proto == IPPROTO_TCP)) return WJ_TRANSPORT_TCP;
        if (type == SOCK_DGRAM && (proto == 0 || proto == IPPROTO_UDP)) return WJ_TRANSPORT_UDP;
    } else if (family == AF_UNIX && (type == SOCK_STREAM || type == SOCK_SEQPACKET)) {
        return WJ_TRANSPORT_UNIX;
    }
    return 0;
}

static int is_nonblocking(int fd) {
    long fl = syscall(SYS_fcntl, fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

static void open_event(wj_event *ev, int fd, int role, int transport, uint64_t t_start, uint64_t t_end) {
    memset(ev, 0, sizeof *ev);
    ev->kind = WJ_EV_CONN_OPEN;
    ev->role = (uint8_t)role;
    ev->transport = (uint8_t)transport;
    ev->fd = fd;
    ev->t_start = t_start;
    ev->t_end = t_end;
    if (wj_proc.config.http && transport != WJ_TRANSPORT_UDP) ev->flags |= WJ_OPEN_HTTP;
}

// Starts tracking fd as a new connection and pushes its open event.
static wj_conn *track(int fd, wj_event *ev) {
    uint32_t slot;
    wj_conn *c = wj_conn_new(fd, ev->transport, ev->peer.family ? ev->peer.family : ev->local.family,
                             ev->role, ev->t_start, &slot);
    if (!c) return 0;
    ev->conn_id = WJ_LOAD(c->conn_id);
    ev->conn_slot = slot;
    wj_push(ev);
    wj_agent_ensure_started();
    return c;
}

// The kernel copies all `len` bytes of a connect() address before anything else, so they are
// readable once it took the call without EFAULT. Before that, or past a short `len`, wedjat
// never reads the app's memory.
static int addr_usable(const struct sockaddr *addr, socklen_t len, int r, int err) {
    if (!addr || (r < 0 && err == EFAULT) || len < sizeof(sa_family_t) || len > sizeof(struct sockaddr_storage)) return 0;
    if (addr->sa_family == AF_INET) return len >= sizeof(struct sockaddr_in);
    if (addr->sa_family == AF_INET6) return len >= sizeof(struct sockaddr_in6);
    return addr->sa_family == AF_UNIX;
}

static int connect_error(int r, int err) {
    if (r == 0) return 0;
    if (is_retry(err) || err == EISCONN) return 0;
    return err;
}

WJ_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    wj_note_ready(WJ_READY_CONNECT);
    if (!wj_enter()) return WJ_REAL(connect)(fd, addr, len);
    wj_conn *known = wj_fd_conn(fd);
    int udp = known && WJ_LOAD(known->transport) == WJ_TRANSPORT_UDP;
    // A repeated connect on a pending non-blocking socket checks completion.
    int pending = known && !udp && WJ_LOAD(known->connecting);
    int nonblocking = !pending && is_nonblocking(fd);
    uint64_t t_start = wj_now_ns();
    int r = WJ_REAL(connect)(fd, addr, len);
    int err = errno;
    uint64_t t_end = wj_now_ns();
    int type, proto;
    if (pending) {
        if (connect_error(r, err)) wj_conn_connect_failed(known, fd, err);
        else if (r == 0 || err == EISCONN) wj_conn_connected(known, t_end);
    } else if (udp) {
        // A UDP socket's peer is set: tell the aggregator (same conn_id, a new open event).
        if (r == 0 && addr_usable(addr, len, r, err)) {
            wj_event ev;
            open_event(&ev, fd, WJ_LOAD(known->role), WJ_TRANSPORT_UDP, WJ_LOAD(known->t_open), t_end);
            to_wj_addr(&ev.peer, ev.path, addr, len);
            sock_name(fd, &ev.local, 0, 0);
            WJ_STORE(known->dns53, (uint8_t)(ev.peer.port == 53));
            ev.conn_id = WJ_LOAD(known->conn_id);
            ev.conn_slot = wj_conn_slot_of(known, fd);
            if (ev.conn_id) wj_push(&ev);
        }
    } else if (addr_usable(addr, len, r, err) && sock_type(fd, &type, &proto) &&
               transport_of(addr->sa_family, type, proto) > 0 && transport_of(addr->sa_family, type, proto) != WJ_TRANSPORT_UDP) {
        wj_event ev;
        int transport = transport_of(addr->sa_family, type, proto);
        open_event(&ev, fd, WJ_ROLE_CLIENT, transport, t_start, t_end);
        if (nonblocking) ev.flags |= WJ_OPEN_NONBLOCKING;
        to_wj_addr(&ev.peer, ev.path, addr, len);
        ev.err = connect_error(r, err);
        if (!ev.err) {
            sock_name(fd, &ev.local, 0, 0);
            wj_conn *c = track(fd, &ev);  // ends a stale entry first
            if (c) WJ_STORE(c->nonblock, (uint8_t)nonblocking);
            if (c && r != 0) {
                atomic_fetch_add(&wj_connecting_count, 1);
                WJ_STORE(c->connecting, 1);
            } else if (c) {
                WJ_STORE(c->t_connected, t_end);
            }
        } else {
            ev.err_phase = WJ_ERR_CONNECT;
            ev.conn_id = wj_next_conn_id();
            wj_push(&ev);
            wj_agent_ensure_started();
        }
    }
    if (!nonblocking && !pending && !udp) wj_stall_blocked("connect", fd, addr, 0, t_start, t_end, connect_error(r, err));
    wj_leave();
    errno = err;
    return r;
}

// UDP sockets are tracked from their creation (there is no connect or accept to wait for).
WJ_EXPORT int socket(int domain, int type, int protocol) {
    int fd = WJ_REAL(socket)(domain, type, protocol);
    if (fd < 0 || (domain != AF_INET && domain != AF_INET6) || (type & 0xf) != SOCK_DGRAM) return fd;
    if (transport_of(domain, type & 0xf, protocol) != WJ_TRANSPORT_UDP) return fd;
    int err = errno;
    if (wj_enter()) {
        wj_event ev;
        uint64_t now = wj_now_ns();
        open_event(&ev, fd, WJ_ROLE_UNKNOWN, WJ_TRANSPORT_UDP, now, now);
        ev.local.family = (uint16_t)domain;
        track(fd, &ev);
        wj_leave();
    }
    errno = err;
    return fd;
}

// Both ends of a pair are the app's: two connections of role "pair".
WJ_EXPORT int socketpair(int domain, int type, int protocol, int sv[2]) {
    int r = WJ_REAL(socketpair)(domain, type, protocol, sv);
    if (r != 0 || domain != AF_UNIX || transport_of(domain, type & 0xf, protocol) != WJ_TRANSPORT_UNIX) return r;
    int err = errno;
    if (wj_enter()) {
        uint64_t now = wj_now_ns();
        for (int i = 0; i < 2; i++) {
            wj_event ev;
            open_event(&ev, sv[i], WJ_ROLE_PAIR, WJ_TRANSPORT_UNIX, now, now);
            ev.flags &= ~(uint32_t)WJ_OPEN_HTTP;
            ev.local.family = ev.peer.family = AF_UNIX;
            wj_conn *c = track(sv[i], &ev);
            if (c) WJ_STORE(c->http, 0);
        }
        wj_leave();
    }
    errno = err;
    return r;
}

WJ_EXPORT int shutdown(int fd, int how) {
    int r = WJ_REAL(shutdown)(fd, how);
    if (r == 0) {
        wj_conn *c = wj_fd_conn(fd);
        if (c && !WJ_LOAD(c->t_shutdown)) WJ_STORE(c->t_shutdown, wj_now_ns());
    }
    return r;
}

// A listening process is a server, likely long-lived: start the agent now so its log exists
// (and is flushed) before the first client arrives, even if it is killed later.
WJ_EXPORT int listen(int fd, int backlog) {
    wj_note_ready(WJ_READY_LISTEN);
    int r = WJ_REAL(listen)(fd, backlog);
    if (r == 0) {
        int err = errno;
        if (wj_enter()) {
            wj_agent_ensure_started();
            wj_leave();
        }
        errno = err;
    }
    return r;
}

// The peer comes from getpeername, never from the app's buffer: that may be shorter than
// the address (the kernel truncates it) or absent.
static int accepted(int r) {
    if (r < 0 || !wj_enter()) return r;
    int err = errno;
    wj_event ev;
    uint64_t now = wj_now_ns();
    int type, proto;
    open_event(&ev, r, WJ_ROLE_SERVER, 0, now, now);
    sock_name(r, &ev.local, ev.path, 0);
    if (ev.local.family && sock_type(r, &type, &proto)) {
        // An inet stream socket from accept() is TCP (SCTP one-to-one sockets are not told apart).
        ev.transport = (uint8_t)transport_of(ev.local.family, type, ev.local.family == AF_UNIX ? 0 : IPPROTO_TCP);
        if (ev.transport == WJ_TRANSPORT_TCP || ev.transport == WJ_TRANSPORT_UNIX) {
            sock_name(r, &ev.peer, ev.local.family == AF_UNIX && ev.path[0] ? 0 : ev.path, 1);
            if (!wj_proc.config.http) ev.flags &= ~(uint32_t)WJ_OPEN_HTTP;
            wj_conn *c = track(r, &ev);
            if (c) WJ_STORE(c->t_connected, now);
        }
    }
    wj_leave();
    errno = err;
    return r;
}

WJ_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    wj_note_ready(WJ_READY_ACCEPT);
    return accepted(WJ_REAL(accept)(fd, addr, len));
}

WJ_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    wj_note_ready(WJ_READY_ACCEPT4);
    return accepted(WJ_REAL(accept4)(fd, addr, len, flags));
}

// How a program learns that a non-blocking connect failed: getsockopt(SO_ERROR).
WJ_EXPORT int getsockopt(int fd, int level, int name, void *value, socklen_t *len) {
    int r = WJ_REAL(getsockopt)(fd, level, name, value, len);
    // (len is valid once the call succeeded: the kernel wrote it.)
    if (r != 0 || level != SOL_SOCKET || name != SO_ERROR || !value || !len || *len < (socklen_t)sizeof(int)) return r;
    wj_conn *c = wj_fd_conn(fd);
    if (!c || !WJ_LOAD(c->connecting)) return r;
    int so_error = *(int *)value;
    int err = errno;
    if (wj_enter()) {
        if (so_error == 0) wj_conn_connected(c, wj_now_ns());
        else if (so_error != EINPROGRESS && so_error != EALREADY) wj_conn_connect_failed(c, fd, so_error);
        wj_leave();
    }
    errno = err;
    return r;
}

// ---------------------------------------------------------------- closing and duplicating

WJ_EXPORT int close(int fd) {
    uint64_t ref = wj_fd_ref(fd);
    wj_logfile_release_if(&wj_proc.log, fd);
    if (WJ_LIKELY(!ref)) return WJ_REAL(close)(fd);
    // Drop the reference *before* the real close, so that a socket another thread gets with
    // the same number right after is never mistaken for this one.
    wj_event ev;
    int ended = wj_fd_drop(fd, wj_now_ns(), &ev);
    int r = WJ_REAL(close)(fd);
    if (ended) {
        int err = errno;
        if (wj_enter()) {
            wj_push(&ev);
            wj_leave();
        }
        errno = err;
    }
    return r;
}

// dup2/dup3 onto newfd closes whatever newfd was, if oldfd is valid (else nothing happens).
static void replacing(int oldfd, int newfd) {
    if (oldfd == newfd) return;
    uint64_t ref = wj_fd_ref(newfd);
    int is_log = newfd >= 0 && newfd == atomic_load_explicit(&wj_proc.log.fd, memory_order_relaxed);
    if (WJ_LIKELY(!ref && !is_log)) return;
    int err = errno;
    if (syscall(SYS_fcntl, oldfd, F_GETFD) >= 0) {
        wj_logfile_release_if(&wj_proc.log, newfd);
        wj_event ev;
        if (ref && wj_fd_drop(newfd, wj_now_ns(), &ev) && wj_enter()) {
            wj_push(&ev);
            wj_leave();
        }
    }
    errno = err;
}

// newfd (a successful dup of oldfd) refers to oldfd's connection too.
static int duplicated(int oldfd, int newfd) {
    if (newfd < 0 || newfd == oldfd) return newfd;
    uint64_t ref = wj_fd_ref(oldfd);
    if (WJ_LIKELY(!ref)) return newfd;
    int err = errno;
    if (wj_enter()) {
        wj_fd_add_ref(newfd, ref);
        wj_leave();
    }
    errno = err;
    return newfd;
}

WJ_EXPORT int dup(int fd) { return duplicated(fd, WJ_REAL(dup)(fd)); }

WJ_EXPORT int dup2(int oldfd, int newfd) {
    replacing(oldfd, newfd);
    int locked = wj_lock_app_fds();
    int r = WJ_REAL(dup2)(oldfd, newfd);
    int err = errno;
    wj_unlock_app_fds(locked);
    errno = err;
    return duplicated(oldfd, r);
}

WJ_EXPORT int dup3(int oldfd, int newfd, int flags) {
    replacing(oldfd, newfd);
    int locked = wj_lock_app_fds();
    int r = WJ_REAL(dup3)(oldfd, newfd, flags);
    int err = errno;
    wj_unlock_app_fds(locked);
    errno = err;
    return duplicated(oldfd, r);
}

// Reads on a socket known to be non-blocking are not timed for blocked stalls.
static void note_nonblock(int fd, long flags) {
    wj_conn *c = wj_fd_conn(fd);
    if (c) WJ_STORE(c->nonblock, (uint8_t)((flags & O_NONBLOCK) != 0));
}

// fcntl's third argument is an int or a pointer, passed in the same register either way.
#define WJ_FCNTL(real)                                                       \
    va_list ap;                                                              \
    va_start(ap, cmd);                                                       \
    void *arg = va_arg(ap, void *);                                          \
    va_end(ap);                                                              \
    int r = real(fd, cmd, arg);                                              \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return duplicated(fd, r);  \
    if (cmd == F_SETFL && r == 0) note_nonblock(fd, (long)arg);              \
    return r

WJ_EXPORT int fcntl(int fd, int cmd, ...) { WJ_FCNTL(WJ_REAL(fcntl)); }
WJ_EXPORT int fcntl64(int fd, int cmd, ...) { WJ_FCNTL(WJ_REAL(fcntl64)); }

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

WJ_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags) {
    if (flags & CLOSE_RANGE_CLOEXEC) return WJ_REAL(close_range)(lo, hi, flags);
    if (lo <= hi) wj_logfile_release_range(&wj_proc.log, lo, hi);
    int locked = wj_lock_app_fds();
    int r = WJ_REAL(close_range)(lo, hi, flags);
    int err = errno;
    wj_unlock_app_fds(locked);
    if (r == 0 && wj_enter()) {
        wj_close_tracked_range(lo, hi);
        wj_leave();
    }
    errno = err;
    return r;
}

WJ_EXPORT void closefrom(int lo) {
    if (lo < 0) lo = 0;
    wj_logfile_release_range(&wj_proc.log, (unsigned)lo, ~0u);
    int err = errno;
    if (wj_enter()) {
        wj_close_tracked_range((unsigned)lo, ~0u);
        wj_leave();
    }
    int locked = wj_lock_app_fds();
    errno = err;
    WJ_REAL(closefrom)(lo);
    err = errno;
    wj_unlock_app_fds(locked);
    errno = err;
}

// ---------------------------------------------------------------- process life

static int (*wj_app_main)(int, char **, char **);

static int main_wrapper(int argc, char **argv, char **envp) {
    wj_main_entered(argc, argv);
    int status = wj_app_main(argc, argv, envp);
    wj_set_exit_status(status);
    return status;
}

WJ_EXPORT int __libc_start_main(int (*main_fn)(int, char **, char **), int argc, char **argv,
                                void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
                                void *stack_end) {
    wj_app_main = main_fn;
    return WJ_REAL(__libc_start_main)(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

WJ_EXPORT pid_t fork(void) {
    pid_t pid = WJ_REAL(fork)();
    if (pid > 0) {
        int err = errno;
        if (wj_enter()) {
            wj_event ev;
            memset(&ev, 0, sizeof ev);
            ev.kind = WJ_EV_FORK;
            ev.t_start = ev.t_end = wj_now_ns();
            ev.a = (uint64_t)pid;
            wj_push(&ev);
            wj_agent_ensure_started();
            wj_leave();
        }
        errno = err;
    }
    return pid;
}

WJ_EXPORT void exit(int status) {
    wj_set_exit_status(status);
    WJ_REAL(exit)(status);
    __builtin_unreachable();
}

static void finish_now(int reason, int status) {
    if (wj_enter_ending()) {
        wj_finish(reason, status, 1);
        wj_leave();
    }
}

WJ_EXPORT void _exit(int status) {
    finish_now(WJ_END__EXIT, status);
    WJ_REAL(_exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void _Exit(int status) {
    finish_now(WJ_END__EXIT, status);
    WJ_REAL(_Exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void quick_exit(int status) {
    finish_now(WJ_END_QUICK_EXIT, status);
    WJ_REAL(quick_exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void abort(void) {
    if (wj_enter_ending()) {
        wj_finish(WJ_END_ABORT, 0, 0);
        wj_leave();
    }
    WJ_REAL(abort)();
    __builtin_unreachable();
}

// exec: the image ends here (flush, process_end "exec"); if exec fails we carry on.
#define WJ_EXEC(target, envp, call)            \
    do {                                       \
        int inside = wj_enter();               \
        if (inside) wj_before_exec(target, envp); \
        int r = call;                          \
        int err = errno;                       \
        if (inside) {                          \
            wj_after_failed_exec();            \
            wj_leave();                        \
        }                                      \
        errno = err;                           \
        return r;                              \
    } while (0)

WJ_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    WJ_EXEC(path, envp, WJ_REAL(execve)(path, argv, envp));
}
WJ_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    WJ_EXEC(path, envp, WJ_REAL(execveat)(dirfd, path, argv, envp, flags));
}
WJ_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    WJ_EXEC(argv[0] ? argv[0] : "", envp, WJ_REAL(fexecve)(fd, argv, envp));
}
WJ_EXPORT int execv(const char *path, char *const argv[]) { WJ_EXEC(path, environ, WJ_REAL(execv)(path, argv)); }
WJ_EXPORT int execvp(const char *file, char *const argv[]) { WJ_EXEC(file, environ, WJ_REAL(execvp)(file, argv)); }
WJ_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    WJ_EXEC(file, envp, WJ_REAL(execvpe)(file, argv, envp));
}

// The execl family is variadic: collect the arguments on the stack (no allocation) and go
// through the execv forms, which are hooked.
#define WJ_MAX_EXECL_ARGS 4096
#define WJ_COLLECT_ARGS(first, argv_out, envp_out, want_env)          \
    va_list ap;                                                       \
    va_start(ap, first);                                              \
    size_t argc_ = 1;                                                 \
    {                                                                 \
        va_list count;                                                \
        va_copy(count, ap);                                           \
        while (va_arg(count, const char *) && argc_ < WJ_MAX_EXECL_ARGS) argc_++; \
        va_end(count);                                                \
    }                                                                 \
    const char *argv_out[argc_ + 1];                                  \
    argv_out[0] = first;                                              \
    for (size_t i_ = 1; i_ <= argc_; i_++) argv_out[i_] = va_arg(ap, const char *); \
    argv_out[argc_] = 0;                                              \
    char *const *envp_out = want_env ? va_arg(ap, char *const *) : 0; \
    va_end(ap)

WJ_EXPORT int execl(const char *path, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 0);
    (void)envp;
    return execv(path, (char *const *)argv);
}
WJ_EXPORT int execlp(const char *file, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 0);
    (void)envp;
    return execvp(file, (char *const *)argv);
}
WJ_EXPORT int execle(const char *path, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 1);
    return execve(path, (char *const *)argv, envp);
}
