// OpenSSL 3 and GnuTLS, when the program links them dynamically: the handshake's start and
// end, version and ALPN, and the plaintext for the HTTP parser. A session is mapped to its
// socket by the library's own getter (SSL_get_fd, gnutls_transport_get_int); sessions over
// custom transports (curl's BIO, for one) by the tracked socket the call itself used,
// remembered in a small table.
#include "tls.h"
#include "conns.h"
#include "context.h"
#include "framing.h"
#include "hooks.h"
#include "sockets.h"
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

__thread int wj_tls_fd __attribute__((tls_model("initial-exec")));

// ---- functions of the TLS library that wedjat calls but does not hook: looked up in the
// library that defines the hooked one (which may have been dlopen'ed RTLD_LOCAL).
static void *sibling(void *defined_fn, const char *name) {
    Dl_info info;
    if (!defined_fn || !dladdr(defined_fn, &info) || !info.dli_fname) return 0;
    void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return 0;
    void *p = dlsym(h, name);
    dlclose(h);
    return p;
}

typedef struct {
    _Atomic int ready;
    int (*get_fd)(const void *ssl);
    int (*version)(const void *ssl);
    void (*alpn)(const void *ssl, const unsigned char **data, unsigned int *len);
    int (*get_error)(const void *ssl, int ret);
    int (*init_finished)(const void *ssl);
} openssl_api;
static openssl_api ossl;

static void openssl_resolve(void *any_real) {
    if (atomic_load_explicit(&ossl.ready, memory_order_acquire)) return;
    ossl.get_fd = (int (*)(const void *))sibling(any_real, "SSL_get_fd");
    ossl.version = (int (*)(const void *))sibling(any_real, "SSL_version");
    ossl.alpn = (void (*)(const void *, const unsigned char **, unsigned int *))sibling(any_real, "SSL_get0_alpn_selected");
    ossl.get_error = (int (*)(const void *, int))sibling(any_real, "SSL_get_error");
    ossl.init_finished = (int (*)(const void *))sibling(any_real, "SSL_is_init_finished");
    atomic_store_explicit(&ossl.ready, 1, memory_order_release);
}

typedef struct { unsigned char *data; unsigned int size; } gnutls_datum;
typedef struct {
    _Atomic int ready;
    int (*get_int)(void *session);
    int (*version)(void *session);
    int (*alpn)(void *session, gnutls_datum *out);
    int (*is_fatal)(int err);
} gnutls_api;
static gnutls_api gtls;

static void gnutls_resolve(void *any_real) {
    if (atomic_load_explicit(&gtls.ready, memory_order_acquire)) return;
    gtls.get_int = (int (*)(void *))sibling(any_real, "gnutls_transport_get_int");
    gtls.version = (int (*)(void *))sibling(any_real, "gnutls_protocol_get_version");
    gtls.alpn = (int (*)(void *, gnutls_datum *))sibling(any_real, "gnutls_alpn_get_selected_protocol");
    gtls.is_fatal = (int (*)(int))sibling(any_real, "gnutls_error_is_fatal");
    atomic_store_explicit(&gtls.ready, 1, memory_order_release);
}

// ---- session -> fd, for sessions whose transport the library cannot name
#define WJ_SESSIONS 4096
WJ_BIG static _Atomic uint64_t session_key[WJ_SESSIONS];
WJ_BIG static _Atomic int session_fd[WJ_SESSIONS];

static unsigned session_hash(const void *s) { return (unsigned)(((uintptr_t)s >> 4) * 2654435761u) % WJ_SESSIONS; }

static void session_remember(const void *s, int fd) {
    unsigned h = session_hash(s);
    for (unsigned i = 0; i < 16; i++) {
        unsigned k = (h + i) % WJ_SESSIONS;
        uint64_t cur = atomic_load(&session_key[k]);
        if (cur == (uintptr_t)s || cur == 0 || !wj_fd_conn(atomic_load(&session_fd[k]))) {
            atomic_store(&session_key[k], (uintptr_t)s);
            atomic_store(&session_fd[k], fd);
            return;
        }
    }
}

static int session_lookup(const void *s) {
    unsigned h = session_hash(s);
    for (unsigned i = 0; i < 16; i++) {
        unsigned k = (h + i) % WJ_SESSIONS;
        if (atomic_load(&session_key[k]) == (uintptr_t)s) return atomic_load(&session_fd[k]);
    }
    return -1;
}

static int session_fd_of(const void *s, int lib_fd) {
    if (lib_fd >= 0 && wj_fd_conn(lib_fd)) return lib_fd;
    return session_lookup(s);
}

// ---- one TLS call: before and after
typedef struct {
    int fd;
    wj_conn *c;
    uint64_t t;
} tls_call;

// TLS from now on: the raw bytes are records, the plaintext is framed.
static void tls_begins(wj_conn *c, int lib) {
    uint8_t none = 0;
    if (atomic_compare_exchange_strong(&c->tls, &none, (uint8_t)lib) && WJ_LOAD(c->http)) wj_framing_tls(c);
}

static void call_begin(tls_call *call, const void *session, int lib_fd, int lib) {
    call->fd = session_fd_of(session, lib_fd);
    call->c = call->fd >= 0 ? wj_fd_conn(call->fd) : 0;
    call->t = wj_now_ns();
    if (call->c && !WJ_LOAD(call->c->tls)) tls_begins(call->c, lib);
    // The socket unknown: the I/O this call does names it (off the hooks' fast path).
    if (!call->c) wj_self.flags |= WJ_T_TLS_LEARN;
    wj_tls_fd = -1;
}

// After the real call: learn the socket from the I/O it did, if the library could not say.
static wj_conn *call_end(tls_call *call, const void *session, int lib) {
    wj_self.flags &= ~(uint32_t)WJ_T_TLS_LEARN;
    if (!call->c && wj_tls_fd >= 0) {
        call->fd = wj_tls_fd;
        call->c = wj_fd_conn(call->fd);
        if (call->c) {
            session_remember(session, call->fd);
            if (!WJ_LOAD(call->c->tls)) tls_begins(call->c, lib);
        }
    } else if (call->c && session_lookup(session) < 0 && call->fd >= 0) {
        session_remember(session, call->fd);
    }
    return call->c;
}

static void handshake_started(wj_conn *c, uint64_t t) {
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&c->t_tls_start, &zero, t);
}

static void handshake_done(wj_conn *c, uint16_t version, const unsigned char *alpn, unsigned alpn_len) {
    uint64_t zero = 0;
    if (!atomic_compare_exchange_strong(&c->t_tls_end, &zero, wj_now_ns())) return;
    WJ_STORE(c->tls_version, version);
    if (alpn && alpn_len) {
        unsigned n = alpn_len < WJ_ALPN_MAX - 1 ? alpn_len : WJ_ALPN_MAX - 1;
        memcpy(c->alpn, alpn, n);
        c->alpn[n] = 0;
    }
}

static void plaintext(wj_conn *c, int fd, int dir, const void *buf, uint64_t n) {
    if (WJ_UNLIKELY(WJ_LOAD(c->watch) & WJ_WATCH_INHERITED)) wj_inherited_first_use(c, fd);
    uint64_t start = atomic_fetch_add_explicit(dir == WJ_IN ? &c->plain_in : &c->plain_out, n, memory_order_relaxed);
    if (WJ_LOAD(c->watch) & WJ_WATCH_FRAME_PLAIN) wj_framing_feed(c, WJ_STREAM_PLAIN, dir, buf, 0, 0, start, n, wj_now_ns());
}

// Before a client's write of plaintext: the request it begins is announced (framing.h).
static void plaintext_announce(wj_conn *c, const void *buf, size_t n) {
    if ((WJ_LOAD(c->watch) & (WJ_WATCH_FRAME_PLAIN | WJ_WATCH_CLIENT)) == (WJ_WATCH_FRAME_PLAIN | WJ_WATCH_CLIENT))
        wj_framing_announce(c, WJ_STREAM_PLAIN, buf, n, 0, 0, WJ_LOAD(c->plain_out));
}

// ---------------------------------------------------------------- OpenSSL

static int ossl_fd(const void *ssl) { return ossl.get_fd ? ossl.get_fd(ssl) : -1; }

static void ossl_handshake_result(wj_conn *c, const void *ssl, int r, uint64_t t_call) {
    handshake_started(c, t_call);
    if (r == 1) {
        const unsigned char *alpn = 0;
        unsigned len = 0;
        if (ossl.alpn) ossl.alpn(ssl, &alpn, &len);
        handshake_done(c, (uint16_t)(ossl.version ? ossl.version(ssl) : 0), alpn, len);
        return;
    }
    int e = ossl.get_error ? ossl.get_error(ssl, r) : 0;
    if (e != 2 && e != 3)  // SSL_ERROR_WANT_READ / WANT_WRITE: a non-blocking handshake goes on
        wj_note_error(c, EPROTO, WJ_ERR_TLS);
}

// A handshake the library ran inside a read or write (SSL_set_connect_state and no
// SSL_connect): its end is seen at the first call after it finished.
static void ossl_maybe_done(wj_conn *c, const void *ssl, uint64_t t_call) {
    if (WJ_LOAD(c->t_tls_end) || !ossl.init_finished || !ossl.init_finished(ssl)) return;
    ossl_handshake_result(c, ssl, 1, t_call);
}

#define OSSL_HANDSHAKE(name)                                          \
    int wj_hook_##name(void *ssl) {                                   \
        openssl_resolve((void *)WJ_REAL(name));                       \
        tls_call call;                                                \
        call_begin(&call, ssl, ossl_fd(ssl), WJ_TLS_OPENSSL);         \
        int r = WJ_REAL(name)(ssl);                                   \
        int err = errno;                                              \
        wj_conn *c = call_end(&call, ssl, WJ_TLS_OPENSSL);            \
        if (c) ossl_handshake_result(c, ssl, r, call.t);              \
        errno = err;                                                  \
        return r;                                                     \
    }
OSSL_HANDSHAKE(SSL_connect)
OSSL_HANDSHAKE(SSL_accept)
OSSL_HANDSHAKE(SSL_do_handshake)

int wj_hook_SSL_set_fd(void *ssl, int fd) {
    int r = WJ_REAL(SSL_set_fd)(ssl, fd);
    wj_conn *c = r == 1 ? wj_fd_conn(fd) : 0;
    if (c && !WJ_LOAD(c->tls)) tls_begins(c, WJ_TLS_OPENSSL);  // raw bytes are TLS from now on
    return r;
}

// One macro for the four data calls: `got` is the byte count when the call succeeded.
#define OSSL_DATA(name, params, args, dir, buf, want, got_expr)       \
    int wj_hook_##name params {                                       \
        openssl_resolve((void *)WJ_REAL(name));                       \
        tls_call call;                                                \
        call_begin(&call, ssl, ossl_fd(ssl), WJ_TLS_OPENSSL);         \
        wj_conn *held = call.c;  /* a close meanwhile waits for it */ \
        if (held) wj_conn_call_begin(held, dir);                      \
        if (dir == WJ_OUT && call.c) plaintext_announce(call.c, buf, (size_t)(want)); \
        int r = WJ_REAL(name) args;                                   \
        int err = errno;                                              \
        wj_conn *c = call_end(&call, ssl, WJ_TLS_OPENSSL);            \
        if (c) {                                                      \
            ossl_maybe_done(c, ssl, call.t);                          \
            uint64_t moved = (got_expr);                              \
            if (moved) plaintext(c, call.fd, dir, buf, moved);        \
        }                                                             \
        if (held) wj_conn_call_done(held, dir);                       \
        errno = err;                                                  \
        return r;                                                     \
    }
OSSL_DATA(SSL_read, (void *ssl, void *buf, int num), (ssl, buf, num), WJ_IN, buf, 0, r > 0 ? (uint64_t)r : 0)
OSSL_DATA(SSL_write, (void *ssl, const void *buf, int num), (ssl, buf, num), WJ_OUT, buf, num > 0 ? num : 0,
          r > 0 ? (uint64_t)r : 0)
OSSL_DATA(SSL_read_ex, (void *ssl, void *buf, size_t num, size_t *got), (ssl, buf, num, got), WJ_IN, buf, 0,
          r == 1 && got ? (uint64_t)*got : 0)
OSSL_DATA(SSL_write_ex, (void *ssl, const void *buf, size_t num, size_t *done), (ssl, buf, num, done), WJ_OUT, buf, num,
          r == 1 && done ? (uint64_t)*done : 0)

// ---------------------------------------------------------------- GnuTLS

static int gtls_fd(void *session) { return gtls.get_int ? gtls.get_int(session) : -1; }

static uint16_t gtls_wire_version(int v) {
    // gnutls_protocol_t: SSL3 = 1, TLS1_0 = 2, TLS1_1 = 3, TLS1_2 = 4, TLS1_3 = 5
    return v >= 1 && v <= 5 ? (uint16_t)(0x0300 + (v - 1)) : 0;
}

int wj_hook_gnutls_handshake(void *session) {
    gnutls_resolve((void *)WJ_REAL(gnutls_handshake));
    tls_call call;
    call_begin(&call, session, gtls_fd(session), WJ_TLS_GNUTLS);
    int r = WJ_REAL(gnutls_handshake)(session);
    int err = errno;
    wj_conn *c = call_end(&call, session, WJ_TLS_GNUTLS);
    if (c) {
        handshake_started(c, call.t);
        if (r == 0) {
            gnutls_datum alpn = {0, 0};
            if (!gtls.alpn || gtls.alpn(session, &alpn) != 0) alpn.size = 0;
            handshake_done(c, gtls_wire_version(gtls.version ? gtls.version(session) : 0), alpn.data, alpn.size);
        } else if (!gtls.is_fatal || gtls.is_fatal(r)) {
            wj_note_error(c, EPROTO, WJ_ERR_TLS);
        }
    }
    errno = err;
    return r;
}

#define GTLS_DATA(name, params, args, dir, buf)                       \
    ssize_t wj_hook_##name params {                                   \
        gnutls_resolve((void *)WJ_REAL(name));                        \
        tls_call call;                                                \
        call_begin(&call, session, gtls_fd(session), WJ_TLS_GNUTLS);  \
        wj_conn *held = call.c;  /* a close meanwhile waits for it */ \
        if (held) wj_conn_call_begin(held, dir);                      \
        if (dir == WJ_OUT && call.c) plaintext_announce(call.c, buf, n); \
        ssize_t r = WJ_REAL(name) args;                               \
        int err = errno;                                              \
        wj_conn *c = call_end(&call, session, WJ_TLS_GNUTLS);         \
        if (c && r > 0) plaintext(c, call.fd, dir, buf, (uint64_t)r); \
        if (held) wj_conn_call_done(held, dir);                       \
        errno = err;                                                  \
        return r;                                                     \
    }
GTLS_DATA(gnutls_record_send, (void *session, const void *data, size_t n), (session, data, n), WJ_OUT, data)
GTLS_DATA(gnutls_record_recv, (void *session, void *data, size_t n), (session, data, n), WJ_IN, data)
