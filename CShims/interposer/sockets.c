// Sockets: connect, accept, socket, socketpair, listen, shutdown, getsockopt(SO_ERROR). Each
// connection begins here (conns.c keeps it); the full agent is wanted from the first one.
#include "sockets.h"
#include "conns.h"
#include "events.h"
#include "framing.h"
#include "hooks.h"
#include "lifecycle.h"
#include "process.h"
#include "stalls.h"
#include "vitals.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "sys_raw.h"

// Not failures: the call is to be retried, or the connect goes on in the kernel.
int wj_is_retry(int err) {
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == EINPROGRESS || err == EALREADY;
}


void wj_to_addr(wj_addr *out, char *path, const struct sockaddr *sa, socklen_t len) {
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

void wj_sock_name(int fd, wj_addr *out, char *path, int peer) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (syscall(peer ? SYS_getpeername : SYS_getsockname, fd, &ss, &len) == 0) wj_to_addr(out, path, (struct sockaddr *)&ss, len);
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

void wj_open_event(wj_event *ev, int fd, int role, int transport, uint64_t t_start, uint64_t t_end) {
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
    // Framed from its first byte: the fd is not the app's yet, so no other thread races this.
    if (WJ_LOAD(c->http)) wj_framing_open(c, slot, ev->role != WJ_ROLE_SERVER);
    ev->conn_id = WJ_LOAD(c->conn_id);
    ev->conn_slot = slot;
    wj_push(ev);
    wj_lc_want_agent();
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
    if (wj_is_retry(err) || err == EISCONN) return 0;
    return err;
}

int wj_hook_connect(int fd, const struct sockaddr *addr, socklen_t len) {
    wj_note_ready(WJ_READY_CONNECT);
    wj_lc_poke(0);
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
            wj_open_event(&ev, fd, WJ_LOAD(known->role), WJ_TRANSPORT_UDP, WJ_LOAD(known->t_open), t_end);
            wj_to_addr(&ev.peer, ev.path, addr, len);
            wj_sock_name(fd, &ev.local, 0, 0);
            WJ_STORE(known->dns53, (uint8_t)(ev.peer.port == 53));
            if (ev.peer.port == 53) atomic_fetch_or(&known->watch, (uint32_t)WJ_WATCH_DNS53);
            else atomic_fetch_and(&known->watch, ~(uint32_t)WJ_WATCH_DNS53);
            ev.conn_id = WJ_LOAD(known->conn_id);
            ev.conn_slot = wj_conn_slot_of(known, fd);
            if (ev.conn_id) wj_push(&ev);
        }
    } else if (addr_usable(addr, len, r, err) && sock_type(fd, &type, &proto) &&
               transport_of(addr->sa_family, type, proto) > 0 && transport_of(addr->sa_family, type, proto) != WJ_TRANSPORT_UDP) {
        wj_event ev;
        int transport = transport_of(addr->sa_family, type, proto);
        wj_open_event(&ev, fd, WJ_ROLE_CLIENT, transport, t_start, t_end);
        if (nonblocking) ev.flags |= WJ_OPEN_NONBLOCKING;
        wj_to_addr(&ev.peer, ev.path, addr, len);
        ev.err = connect_error(r, err);
        if (!ev.err) {
            wj_sock_name(fd, &ev.local, 0, 0);
            wj_conn *c = track(fd, &ev);  // ends a stale entry first
            if (c) wj_conn_note_nonblock(c, nonblocking);
            if (c && r != 0) {
                atomic_fetch_add(&wj_connecting_count, 1);
                WJ_STORE(c->connecting, 1);
                atomic_fetch_or(&c->watch, (uint32_t)WJ_WATCH_CONNECTING);
            } else if (c) {
                WJ_STORE(c->t_connected, t_end);
            }
        } else {
            ev.err_phase = WJ_ERR_CONNECT;
            ev.conn_id = wj_next_conn_id();
            wj_push(&ev);
            wj_lc_want_agent();
        }
    }
    if (!nonblocking && !pending && !udp) wj_stall_blocked("connect", fd, addr, 0, t_start, t_end, connect_error(r, err));
    errno = err;
    return r;
}

// UDP sockets are tracked from their creation (there is no connect or accept to wait for).
int wj_hook_socket(int domain, int type, int protocol) {
    int fd = WJ_REAL(socket)(domain, type, protocol);
    wj_socket_made(fd, domain, type, protocol);
    return fd;
}

void wj_socket_made(int fd, int domain, int type, int protocol) {
    if (fd < 0 || (domain != AF_INET && domain != AF_INET6) || (type & 0xf) != SOCK_DGRAM) return;
    if (transport_of(domain, type & 0xf, protocol) != WJ_TRANSPORT_UDP) return;
    int err = errno;
    wj_event ev;
    uint64_t now = wj_now_ns();
    wj_open_event(&ev, fd, WJ_ROLE_UNKNOWN, WJ_TRANSPORT_UDP, now, now);
    ev.local.family = (uint16_t)domain;
    wj_conn *c = track(fd, &ev);
    if (c && (type & SOCK_NONBLOCK)) wj_conn_note_nonblock(c, 1);
    errno = err;
}

// Both ends of a pair are the app's: two connections of role "pair".
int wj_hook_socketpair(int domain, int type, int protocol, int sv[2]) {
    int r = WJ_REAL(socketpair)(domain, type, protocol, sv);
    if (r != 0 || domain != AF_UNIX || transport_of(domain, type & 0xf, protocol) != WJ_TRANSPORT_UNIX) return r;
    int err = errno;
    {
        uint64_t now = wj_now_ns();
        for (int i = 0; i < 2; i++) {
            wj_event ev;
            wj_open_event(&ev, sv[i], WJ_ROLE_PAIR, WJ_TRANSPORT_UNIX, now, now);
            ev.flags &= ~(uint32_t)WJ_OPEN_HTTP;
            ev.local.family = ev.peer.family = AF_UNIX;
            wj_conn *c = track(sv[i], &ev);
            if (c) WJ_STORE(c->http, 0);
            if (c && (type & SOCK_NONBLOCK)) wj_conn_note_nonblock(c, 1);
        }
    }
    errno = err;
    return r;
}

int wj_hook_shutdown(int fd, int how) {
    int r = WJ_REAL(shutdown)(fd, how);
    if (r == 0) {
        wj_conn *c = wj_fd_conn(fd);
        if (c && !WJ_LOAD(c->t_shutdown)) WJ_STORE(c->t_shutdown, wj_now_ns());
    }
    return r;
}

// A listening process is a server, likely long-lived: start the agent now so its log exists
// (and is flushed) before the first client arrives, even if it is killed later.
int wj_hook_listen(int fd, int backlog) {
    wj_note_ready(WJ_READY_LISTEN);
    int r = WJ_REAL(listen)(fd, backlog);
    if (r == 0) {
        int err = errno;
        wj_lc_want_agent();
        errno = err;
    }
    return r;
}

// The peer comes from getpeername, never from the app's buffer: that may be shorter than
// the address (the kernel truncates it) or absent.
int wj_accepted(int r, int flags) {
    if (r < 0) return r;
    int err = errno;
    wj_event ev;
    uint64_t now = wj_now_ns();
    int type, proto;
    wj_open_event(&ev, r, WJ_ROLE_SERVER, 0, now, now);
    wj_sock_name(r, &ev.local, ev.path, 0);
    if (ev.local.family && sock_type(r, &type, &proto)) {
        // An inet stream socket from accept() is TCP (SCTP one-to-one sockets are not told apart).
        ev.transport = (uint8_t)transport_of(ev.local.family, type, ev.local.family == AF_UNIX ? 0 : IPPROTO_TCP);
        if (ev.transport == WJ_TRANSPORT_TCP || ev.transport == WJ_TRANSPORT_UNIX) {
            wj_sock_name(r, &ev.peer, ev.local.family == AF_UNIX && ev.path[0] ? 0 : ev.path, 1);
            if (!wj_proc.config.http) ev.flags &= ~(uint32_t)WJ_OPEN_HTTP;
            wj_conn *c = track(r, &ev);
            if (c) WJ_STORE(c->t_connected, now);
            if (c && (flags & SOCK_NONBLOCK)) wj_conn_note_nonblock(c, 1);
        }
    }
    errno = err;
    return r;
}

int wj_hook_accept(int fd, struct sockaddr *addr, socklen_t *len) {
    wj_note_ready(WJ_READY_ACCEPT);
    wj_lc_poke(0);
    return wj_accepted(WJ_REAL(accept)(fd, addr, len), 0);
}

int wj_hook_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    wj_note_ready(WJ_READY_ACCEPT4);
    wj_lc_poke(0);
    return wj_accepted(WJ_REAL(accept4)(fd, addr, len, flags), flags);
}

// How a program learns that a non-blocking connect failed: getsockopt(SO_ERROR).
int wj_hook_getsockopt(int fd, int level, int name, void *value, socklen_t *len) {
    int r = WJ_REAL(getsockopt)(fd, level, name, value, len);
    // (len is valid once the call succeeded: the kernel wrote it.)
    if (r != 0 || level != SOL_SOCKET || name != SO_ERROR || !value || !len || *len < (socklen_t)sizeof(int)) return r;
    wj_conn *c = wj_fd_conn(fd);
    if (!c || !WJ_LOAD(c->connecting)) return r;
    int so_error = *(int *)value;
    int err = errno;
    if (so_error == 0) wj_conn_connected(c, wj_now_ns());
    else if (so_error != EINPROGRESS && so_error != EALREADY) wj_conn_connect_failed(c, fd, so_error);
    errno = err;
    return r;
}


// A UDP socket's first datagram: who spoke first is the client; its addresses are bound by
// now (the aggregator updates the record it keeps from this second open event).
void wj_udp_first_io(wj_conn *c, int fd, int dir, uint64_t now) {
    uint8_t role = (uint8_t)(dir == WJ_OUT ? WJ_ROLE_CLIENT : WJ_ROLE_SERVER);
    uint8_t unknown = WJ_ROLE_UNKNOWN;
    if (!atomic_compare_exchange_strong(&c->role, &unknown, role)) return;
    int err = errno;
    wj_event ev;
    wj_open_event(&ev, fd, role, WJ_TRANSPORT_UDP, WJ_LOAD(c->t_open), now);
    wj_sock_name(fd, &ev.local, 0, 0);
    wj_sock_name(fd, &ev.peer, 0, 1);
    if (ev.peer.port == 53) {
        WJ_STORE(c->dns53, 1);
        atomic_fetch_or(&c->watch, (uint32_t)WJ_WATCH_DNS53);
    }
    ev.conn_id = WJ_LOAD(c->conn_id);
    ev.conn_slot = WJ_LOAD(c->slot);
    if (ev.conn_id) wj_push(&ev);
    errno = err;
}


void wj_inherited_first_use(wj_conn *c, int fd) {
    if (!(atomic_fetch_and(&c->watch, ~(uint32_t)WJ_WATCH_INHERITED) & WJ_WATCH_INHERITED)) return;
    int err = errno;
    wj_event ev;
    wj_open_event(&ev, fd, WJ_LOAD(c->role), WJ_LOAD(c->transport), WJ_LOAD(c->t_open), wj_now_ns());
    if (!WJ_LOAD(c->http)) ev.flags &= ~(uint32_t)WJ_OPEN_HTTP;
    ev.flags |= WJ_OPEN_INHERITED;
    wj_sock_name(fd, &ev.local, ev.path, 0);
    wj_sock_name(fd, &ev.peer, ev.local.family == AF_UNIX && ev.path[0] ? 0 : ev.path, 1);
    ev.conn_id = WJ_LOAD(c->conn_id);
    ev.conn_slot = WJ_LOAD(c->slot);
    ev.bytes_in = WJ_LOAD(c->base_in);
    ev.bytes_out = WJ_LOAD(c->base_out);
    if (ev.conn_id) {
        wj_push(&ev);
        wj_lc_want_agent();
    }
    errno = err;
}
