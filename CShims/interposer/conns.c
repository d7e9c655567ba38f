// The connection pool and the fd table that refers into it, the close records, and the
// capture of bytes for the HTTP parser. Everything here runs on the app's threads: no
// allocation (chunks are mmap'ed), no locks; every shared field is a relaxed atomic.
#include "conns.h"
#include "events.h"
#include "process.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <unistd.h>
#include "sys_raw.h"

// 8 KiB each, after the small state (WJ_BIG): a process touches only their first entries.
WJ_BIG _Atomic(_Atomic uint64_t *) wj_fd_chunks[WJ_FD_CHUNKS];
WJ_BIG _Atomic(wj_conn *) wj_conn_chunks[WJ_CONN_CHUNKS];
static _Atomic unsigned fd_chunks_end;   // past the last fd chunk made: the walks stop there
uint64_t wj_fd_generation = 1;
_Atomic int wj_connecting_count;
static _Atomic uint64_t wj_conn_counter;
static _Atomic int ends_waiting;   // connections whose end waits for a call in flight
_Atomic uint32_t wj_forks;
uint64_t wj_untracked_fds;
_Atomic uint64_t wj_bytes_after_end;

uint64_t wj_next_conn_id(void) { return atomic_fetch_add(&wj_conn_counter, 1) + 1; }

void wj_conn_ids_next(uint64_t id) { atomic_store(&wj_conn_counter, id ? id - 1 : 0); }

void wj_conn_ids_after(uint64_t id) {
    if (atomic_load(&wj_conn_counter) < id) atomic_store(&wj_conn_counter, id);
}

static _Atomic(wj_conn_end_fn) conn_end_hook;
void wj_conns_on_end(wj_conn_end_fn fn) { atomic_store_explicit(&conn_end_hook, fn, memory_order_release); }

// A zeroed chunk the first time it is needed; mmap, not malloc: no allocator lock here.
static void *chunk(_Atomic(void *) *cell, size_t bytes) {
    void *c = atomic_load_explicit(cell, memory_order_acquire);
    if (WJ_LIKELY(c != 0)) return c;
    void *fresh = (void *)syscall(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) return 0;
    void *expected = 0;
    if (atomic_compare_exchange_strong(cell, &expected, fresh)) return fresh;
    syscall(SYS_munmap, fresh, bytes);
    return expected;
}

static _Atomic uint64_t *fd_cell(int fd) {
    if ((unsigned)fd >= WJ_FD_MAX) return 0;
    unsigned k = (unsigned)fd >> WJ_FD_CHUNK_BITS;
    _Atomic uint64_t *c = chunk((_Atomic(void *) *)&wj_fd_chunks[k], WJ_FD_CHUNK * sizeof(_Atomic uint64_t));
    if (WJ_UNLIKELY(c && atomic_load_explicit(&fd_chunks_end, memory_order_relaxed) <= k)) {
        unsigned end = atomic_load(&fd_chunks_end);
        while (end <= k && !atomic_compare_exchange_weak(&fd_chunks_end, &end, k + 1)) {}
    }
    return c ? &c[(unsigned)fd & (WJ_FD_CHUNK - 1)] : 0;
}

static wj_conn *conn_slot(uint32_t slot) {
    wj_conn *c = chunk((_Atomic(void *) *)&wj_conn_chunks[slot >> WJ_CONN_CHUNK_BITS], WJ_CONN_CHUNK * sizeof(wj_conn));
    return c ? &c[slot & (WJ_CONN_CHUNK - 1)] : 0;
}

static inline uint64_t live_state(void) { return (wj_fd_generation << 2) | WJ_SLOT_LIVE; }

// Claims a free slot: the fd's own number first (nearly always free: the previous socket
// with that number has ended), then the next ones. Slots a forked child inherited count as free.
static wj_conn *claim_slot(int fd, uint32_t *slot_out) {
    uint32_t start = (unsigned)fd < WJ_CONN_MAX ? (uint32_t)fd : 0;
    for (uint32_t probe = 0; probe < 4096; probe++) {
        uint32_t slot = (start + probe) & (WJ_CONN_MAX - 1);
        wj_conn *c = conn_slot(slot);
        if (!c) return 0;
        uint64_t st = atomic_load_explicit(&c->state, memory_order_acquire);
        if ((st & 3) == WJ_SLOT_LIVE && (st >> 2) == wj_fd_generation) continue;
        if (atomic_compare_exchange_strong(&c->state, &st, live_state())) {
            *slot_out = slot;
            return c;
        }
    }
    return 0;
}

// Byte counts, phase times, TLS facts and TCP_INFO, as close records carry them. fd (if
// >= 0) still refers to the socket.
static void fill_tcp_info(int fd, wj_event *ev) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (syscall(SYS_getsockopt, fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_total_retrans) + sizeof ti.tcpi_total_retrans)
        return;
    ev->has_tcp_info = 1;
    ev->rtt_us = ti.tcpi_rtt;
    ev->rttvar_us = ti.tcpi_rttvar;
    ev->retransmits = ti.tcpi_retransmits;
    ev->total_retrans = ti.tcpi_total_retrans;
    ev->lost = ti.tcpi_lost;
}

// TCP_INFO as the closer read it, for an end left to a call in flight (the fd is gone then).
static void keep_tcp_info(wj_conn *c, const wj_event *ti) {
    WJ_STORE(c->end_has_tcp, ti->has_tcp_info);
    WJ_STORE(c->end_rtt, ti->rtt_us);
    WJ_STORE(c->end_rttvar, ti->rttvar_us);
    WJ_STORE(c->end_retransmits, ti->retransmits);
    WJ_STORE(c->end_total_retrans, ti->total_retrans);
    WJ_STORE(c->end_lost, ti->lost);
}

static void kept_tcp_info(wj_conn *c, wj_event *ev) {
    ev->has_tcp_info = WJ_LOAD(c->end_has_tcp);
    ev->rtt_us = WJ_LOAD(c->end_rtt);
    ev->rttvar_us = WJ_LOAD(c->end_rttvar);
    ev->retransmits = WJ_LOAD(c->end_retransmits);
    ev->total_retrans = WJ_LOAD(c->end_total_retrans);
    ev->lost = WJ_LOAD(c->end_lost);
}

static int conn_busy(wj_conn *c) {
    return atomic_load(&c->busy[WJ_IN]) > 0 || atomic_load(&c->busy[WJ_OUT]) > 0;
}

static void copy_counters(int fd, wj_conn *c, wj_event *ev) {
    ev->role = WJ_LOAD(c->role);
    ev->transport = WJ_LOAD(c->transport);
    ev->t_start = WJ_LOAD(c->t_open);
    ev->bytes_in = WJ_LOAD(c->bytes_in);
    ev->bytes_out = WJ_LOAD(c->bytes_out);
    ev->t_connected = WJ_LOAD(c->t_connected);
    ev->t_first_out = WJ_LOAD(c->t_first_out);
    ev->t_first_in = WJ_LOAD(c->t_first_in);
    ev->t_last_io = WJ_LOAD(c->t_last_io);
    ev->t_shutdown = WJ_LOAD(c->t_shutdown);
    ev->t_tls_start = WJ_LOAD(c->t_tls_start);
    ev->t_tls_end = WJ_LOAD(c->t_tls_end);
    ev->plain_in = WJ_LOAD(c->plain_in);
    ev->plain_out = WJ_LOAD(c->plain_out);
    ev->tls_version = WJ_LOAD(c->tls_version);
    ev->tls_lib = WJ_LOAD(c->tls);
    if (ev->t_tls_end) memcpy(ev->alpn, c->alpn, sizeof ev->alpn);
    ev->alpn[WJ_ALPN_MAX - 1] = 0;
    ev->err = WJ_LOAD(c->err);
    ev->err_phase = WJ_LOAD(c->err_phase);
    if (fd >= 0 && ev->transport == WJ_TRANSPORT_TCP) fill_tcp_info(fd, ev);
}

// Ends the connection (its id taken by this call, so only one caller ends it) and fills the
// close event.
static int end_conn(wj_conn *c, uint32_t slot, int fd, uint64_t now, wj_event *ev) {
    memset(ev, 0, sizeof *ev);
    ev->conn_id = atomic_exchange(&c->conn_id, 0);
    if (!ev->conn_id) return 0;
    // A connection a forked child inherited and never used: the parent's to report.
    if (WJ_LOAD(c->watch) & WJ_WATCH_INHERITED) return 0;
    int forked = WJ_LOAD(c->fork_epoch) != atomic_load_explicit(&wj_forks, memory_order_relaxed);
    // What its framers hold goes first (their events carry this time: before the close's).
    wj_conn_end_fn end_hook = atomic_load_explicit(&conn_end_hook, memory_order_acquire);
    if (WJ_LOAD(c->http) && end_hook) end_hook(c, ev->conn_id, now, forked);
    if (atomic_exchange(&c->connecting, 0)) atomic_fetch_sub(&wj_connecting_count, 1);
    atomic_fetch_and(&c->watch, ~(uint32_t)WJ_WATCH_CONNECTING);
    ev->kind = WJ_EV_CONN_CLOSE;
    if (forked) ev->flags |= WJ_CLOSE_FORKED;
    ev->fd = fd;
    ev->conn_slot = slot;
    ev->t_end = now;
    copy_counters(fd, c, ev);
    return 1;
}

int wj_fd_drop(int fd, uint64_t now, wj_event *ev) {
    if ((unsigned)fd >= WJ_FD_MAX) return 0;
    _Atomic uint64_t *chunk = atomic_load_explicit(&wj_fd_chunks[(unsigned)fd >> WJ_FD_CHUNK_BITS], memory_order_acquire);
    if (!chunk) return 0;
    uint64_t ref = atomic_exchange(&chunk[(unsigned)fd & (WJ_FD_CHUNK - 1)], 0);
    if (!wj_ref_current(ref)) return 0;
    wj_conn *c = wj_ref_conn(ref);
    uint32_t slot = WJ_LOAD(c->slot);
    if (atomic_fetch_sub(&c->refs, 1) != 1) return 0;
    // The last fd: the socket closes with it, unless a call on another thread still holds it
    // (its bytes not yet counted): then that call ends it as it returns. The fd is still open,
    // for TCP_INFO.
    if (WJ_LOAD(c->conn_id) && WJ_LOAD(c->transport) == WJ_TRANSPORT_TCP && conn_busy(c)) {
        wj_event ti;
        memset(&ti, 0, sizeof ti);
        fill_tcp_info(fd, &ti);
        keep_tcp_info(c, &ti);
        WJ_STORE(c->t_end_asked, now);
        WJ_STORE(c->end_fd, fd);
        atomic_fetch_add(&ends_waiting, 1);
        atomic_store(&c->end_pending, 1);
        if (conn_busy(c)) return 0;
        // The call returned meanwhile: whichever of us takes end_pending ends it.
        if (!atomic_exchange(&c->end_pending, 0)) return 0;
        atomic_fetch_sub(&ends_waiting, 1);
    }
    int ended = end_conn(c, slot, fd, now, ev);
    atomic_store_explicit(&c->state, 0, memory_order_release);
    return ended;
}

// The end of a connection whose last fd was closed during a call, now that the calls (or the
// sweep) are done with it: its time is now, when the socket is released.
static void end_deferred(wj_conn *c, uint64_t now) {
    if (!atomic_exchange(&c->end_pending, 0)) return;
    atomic_fetch_sub(&ends_waiting, 1);
    int err = errno;
    wj_event ev;
    int ended = end_conn(c, WJ_LOAD(c->slot), -1, now, &ev);
    atomic_store_explicit(&c->state, 0, memory_order_release);
    if (ended) {
        ev.fd = WJ_LOAD(c->end_fd);
        kept_tcp_info(c, &ev);
        wj_push(&ev);
    }
    errno = err;
}

void wj_conn_end_deferred(wj_conn *c) {
    if (!conn_busy(c)) end_deferred(c, wj_now_ns());   // the last call on it: another may still run
}

void wj_conns_end_overdue(uint64_t now, uint64_t grace_ns) {
    if (!atomic_load_explicit(&ends_waiting, memory_order_relaxed)) return;
    for (unsigned k = 0; k < WJ_CONN_CHUNKS; k++) {
        wj_conn *chunk = atomic_load_explicit(&wj_conn_chunks[k], memory_order_acquire);
        if (!chunk) continue;
        for (unsigned i = 0; i < WJ_CONN_CHUNK; i++) {
            wj_conn *c = &chunk[i];
            if (!atomic_load(&c->end_pending)) continue;
            uint64_t asked = WJ_LOAD(c->t_end_asked), last_io = WJ_LOAD(c->t_last_io);
            // A call that returned unseen: the socket was released by its last I/O.
            if (!conn_busy(c)) end_deferred(c, last_io > asked ? last_io : asked);
            // `now` is the round's, taken before this sweep: an end asked since is newer than
            // it (now - asked would wrap and end a call in flight at once).
            else if (!grace_ns || (now >= asked && now - asked >= grace_ns)) end_deferred(c, now > asked ? now : asked);
        }
    }
}

static void set_fd_ref(int fd, uint64_t ref) {
    _Atomic uint64_t *cell = fd_cell(fd);
    if (!cell) { wj_untracked_fds++; return; }
    wj_event gone;  // the number's previous socket was closed where no hook saw it
    if (wj_fd_drop(fd, wj_now_ns(), &gone)) wj_push(&gone);
    atomic_store_explicit(cell, ref, memory_order_release);
}

wj_conn *wj_conn_new(int fd, int transport, int family, int role, uint64_t t_open, uint32_t *slot_out) {
    uint32_t slot;
    wj_conn *c = claim_slot(fd, &slot);
    if (!c || !fd_cell(fd)) {
        if (c) atomic_store_explicit(&c->state, 0, memory_order_release);
        wj_untracked_fds++;
        return 0;
    }
    WJ_STORE(c->refs, 1);
    WJ_STORE(c->connecting, 0);
    WJ_STORE(c->role, (uint8_t)role);
    WJ_STORE(c->transport, (uint8_t)transport);
    WJ_STORE(c->family, (uint8_t)family);
    WJ_STORE(c->tls, 0);
    WJ_STORE(c->tls_version, 0);
    WJ_STORE(c->http, (uint8_t)(wj_proc.config.http && transport != WJ_TRANSPORT_UDP && role != WJ_ROLE_PAIR));
    WJ_STORE(c->watch, 0);
    WJ_STORE(c->slot, slot);
    WJ_STORE(c->fork_epoch, atomic_load_explicit(&wj_forks, memory_order_relaxed));
    WJ_STORE(c->base_in, 0);
    WJ_STORE(c->base_out, 0);
    WJ_STORE(c->err, 0);
    WJ_STORE(c->err_phase, 0);
    WJ_STORE(c->epfd, -1);
    WJ_STORE(c->epdata, 0);
    WJ_STORE(c->bytes_in, 0);
    WJ_STORE(c->bytes_out, 0);
    WJ_STORE(c->plain_in, 0);
    WJ_STORE(c->plain_out, 0);
    WJ_STORE(c->t_open, t_open);
    WJ_STORE(c->t_connected, 0);
    WJ_STORE(c->t_first_out, 0);
    WJ_STORE(c->t_first_in, 0);
    WJ_STORE(c->t_last_io, 0);
    WJ_STORE(c->t_shutdown, 0);
    WJ_STORE(c->t_tls_start, 0);
    WJ_STORE(c->t_tls_end, 0);
    WJ_STORE(c->dns_query[0], 0);
    WJ_STORE(c->dns_query[1], 0);
    WJ_STORE(c->dns53, 0);
    WJ_STORE(c->busy[WJ_IN], 0);
    WJ_STORE(c->busy[WJ_OUT], 0);
    WJ_STORE(c->end_pending, 0);
    WJ_STORE(c->nonblock, 0);
    WJ_STORE(c->direct, WJ_DIRECT_NONE);
    WJ_STORE(c->open_epoch, atomic_load(&wj_direct_epoch) & ~WJ_DIRECT_OFF);
    memset(c->alpn, 0, sizeof c->alpn);
    atomic_store_explicit(&c->conn_id, wj_next_conn_id(), memory_order_release);
    set_fd_ref(fd, wj_ref_make(c));
    *slot_out = slot;
    return c;
}

void wj_fd_add_ref(int fd, uint64_t ref) {
    wj_conn *c = wj_ref_conn(ref);
    if (!c) return;
    if (atomic_fetch_add(&c->refs, 1) == 0) {  // it ended meanwhile (a racing close)
        atomic_fetch_sub(&c->refs, 1);
        return;
    }
    set_fd_ref(fd, ref);
}

void wj_close_tracked_range(unsigned lo, unsigned hi) {
    if (hi >= WJ_FD_MAX) hi = WJ_FD_MAX - 1;
    if (lo > hi) return;
    uint64_t now = wj_now_ns();
    for (unsigned c = lo >> WJ_FD_CHUNK_BITS; c <= (hi >> WJ_FD_CHUNK_BITS); c++) {
        _Atomic uint64_t *chunk = atomic_load(&wj_fd_chunks[c]);
        if (!chunk) continue;
        for (unsigned i = 0; i < WJ_FD_CHUNK; i++) {
            unsigned fd = (c << WJ_FD_CHUNK_BITS) | i;
            if (fd < lo || fd > hi || !atomic_load_explicit(&chunk[i], memory_order_relaxed)) continue;
            wj_event ev;
            if (wj_fd_drop((int)fd, now, &ev)) {
                ev.has_tcp_info = 0;  // the fd is gone already: not this socket's numbers
                wj_push(&ev);
            }
        }
    }
}

void wj_fds_each(int (*fn)(int fd, wj_conn *c, void *ctx), void *ctx) {
    unsigned end = atomic_load(&fd_chunks_end);
    for (unsigned k = 0; k < end; k++) {
        _Atomic uint64_t *chunk = atomic_load(&wj_fd_chunks[k]);
        if (!chunk) continue;
        for (unsigned i = 0; i < WJ_FD_CHUNK; i++) {
            uint64_t ref = atomic_load_explicit(&chunk[i], memory_order_relaxed);
            if (ref && fn((int)((k << WJ_FD_CHUNK_BITS) | i), wj_ref_conn(ref), ctx)) return;
        }
    }
}

void wj_conn_note_nonblock(wj_conn *c, int nonblock) {
    WJ_STORE(c->nonblock, (uint8_t)(nonblock != 0));
    uint32_t e = atomic_load(&wj_direct_epoch);
    WJ_STORE(c->direct, nonblock && !(e & WJ_DIRECT_OFF) && WJ_LOAD(c->open_epoch) == e ? e : WJ_DIRECT_NONE);
}

void wj_conns_fork_parent(void) { atomic_fetch_add(&wj_forks, 1); }

void wj_conns_forked(void) {
    // The child is the only thread now. Its sockets are the parent's too: each connection an
    // fd still refers to stays, in the new generation, marked inherited (the child reports it
    // from its first use, as the parent's connection going on); a slot no fd refers to is free.
    uint64_t old = wj_fd_generation++;
    unsigned end = atomic_load(&fd_chunks_end);
    for (unsigned k = 0; k < end; k++) {
        _Atomic uint64_t *chunk = atomic_load(&wj_fd_chunks[k]);
        if (!chunk) continue;
        for (unsigned i = 0; i < WJ_FD_CHUNK; i++) {
            uint64_t ref = atomic_load_explicit(&chunk[i], memory_order_relaxed);
            if (!ref) continue;
            wj_conn *c = wj_ref_conn(ref);
            uint64_t st = atomic_load_explicit(&c->state, memory_order_relaxed);
            if ((st & 3) == WJ_SLOT_LIVE && (st >> 2) == wj_fd_generation) continue;   // another fd's
            if ((st & 3) != WJ_SLOT_LIVE || (st >> 2) != old || !WJ_LOAD(c->conn_id)) {
                atomic_store_explicit(&chunk[i], 0, memory_order_relaxed);
                continue;
            }
            atomic_store_explicit(&c->state, (wj_fd_generation << 2) | WJ_SLOT_LIVE, memory_order_relaxed);
            WJ_STORE(c->base_in, WJ_LOAD(c->bytes_in));
            WJ_STORE(c->base_out, WJ_LOAD(c->bytes_out));
            WJ_STORE(c->connecting, 0);
            WJ_STORE(c->busy[WJ_IN], 0);   // the threads in calls on it are the parent's
            WJ_STORE(c->busy[WJ_OUT], 0);
            WJ_STORE(c->fork_epoch, atomic_load_explicit(&wj_forks, memory_order_relaxed));
            atomic_fetch_and(&c->watch, ~(uint32_t)WJ_WATCH_CONNECTING);
            atomic_fetch_or(&c->watch, (uint32_t)WJ_WATCH_INHERITED);
        }
    }
    // Written only when it changes: each page written here is a copy the child pays for.
    if (atomic_load(&wj_connecting_count)) atomic_store(&wj_connecting_count, 0);
    // Ends the parent left to its calls in flight are the parent's to report.
    if (atomic_load(&ends_waiting) && atomic_exchange(&ends_waiting, 0))
        for (unsigned k = 0; k < WJ_CONN_CHUNKS; k++) {
            wj_conn *chunk = atomic_load(&wj_conn_chunks[k]);
            if (chunk)
                for (unsigned i = 0; i < WJ_CONN_CHUNK; i++) WJ_STORE(chunk[i].end_pending, 0);
        }
}

void wj_note_error(wj_conn *c, int err, int phase) {
    int32_t none = 0;
    if (atomic_compare_exchange_strong(&c->err, &none, err)) WJ_STORE(c->err_phase, (uint8_t)phase);
}

void wj_conn_connected(wj_conn *c, uint64_t now) {
    if (!atomic_exchange(&c->connecting, 0)) return;
    atomic_fetch_and(&c->watch, ~(uint32_t)WJ_WATCH_CONNECTING);
    atomic_fetch_sub(&wj_connecting_count, 1);
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&c->t_connected, &zero, now);
}

// A pending connect failed after all: the connection ends now with err (the fd stays the
// app's, but nothing more is recorded on it).
void wj_conn_connect_failed(wj_conn *c, int fd, int err) {
    if (!WJ_LOAD(c->connecting)) return;
    wj_note_error(c, err, WJ_ERR_CONNECT);
    wj_event ev;
    if (end_conn(c, WJ_LOAD(c->slot), fd, wj_now_ns(), &ev)) {
        ev.err = err;
        ev.err_phase = WJ_ERR_CONNECT;
        wj_push(&ev);
    }
}

int wj_conn_snapshot(uint32_t slot, uint64_t conn_id, wj_event *out) {
    wj_conn *c = wj_conn_at(slot);
    if (!c || atomic_load(&c->conn_id) != conn_id) return 0;
    memset(out, 0, sizeof *out);
    out->conn_id = conn_id;
    out->conn_slot = slot;
    copy_counters(-1, c, out);
    return 1;
}
