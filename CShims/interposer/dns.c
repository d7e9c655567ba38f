// Resolver hooks: time each lookup and report its answers (a `dns` record, and the name a
// later connection to one of these addresses was resolved from). glibc's own UDP traffic
// inside these calls is not interposable; the call itself is what the app waits for.
#include "dns.h"
#include "conns.h"
#include "context.h"
#include "events.h"
#include "hooks.h"
#include "lifecycle.h"
#include "stalls.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

static void set_name(wj_dns_event *ev, const char *name) {
    if (!name) return;
    size_t n = strlen(name);
    if (n >= sizeof ev->name) { n = sizeof ev->name - 1; ev->truncated = 1; }
    memcpy(ev->name, name, n);
    ev->name[n] = 0;
}

static void begin(wj_dns_event *ev, int api, const char *name, int family) {
    memset(ev, 0, sizeof *ev);
    ev->kind = WJ_EV_DNS;
    ev->api = (uint8_t)api;
    ev->family = family;
    set_name(ev, name);
    ev->t_start = wj_now_ns();
}

// Distinct addresses only: getaddrinfo repeats each one per socket type.
static void add_addr(wj_dns_event *ev, int family, const void *bytes) {
    wj_addr a;
    memset(&a, 0, sizeof a);
    a.family = (uint16_t)family;
    memcpy(a.bytes, bytes, family == AF_INET ? 4 : 16);
    for (unsigned i = 0; i < ev->n_addrs; i++)
        if (memcmp(&ev->addrs[i], &a, sizeof a) == 0) return;
    if (ev->n_addrs < WJ_DNS_ADDRS) ev->addrs[ev->n_addrs++] = a;
    ev->n_answers++;
}

static void add_sockaddr(wj_dns_event *ev, const struct sockaddr *sa) {
    if (!sa) return;
    if (sa->sa_family == AF_INET) add_addr(ev, AF_INET, &((const struct sockaddr_in *)sa)->sin_addr);
    else if (sa->sa_family == AF_INET6) add_addr(ev, AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static void add_hostent(wj_dns_event *ev, const struct hostent *h) {
    if (!h || (h->h_addrtype != AF_INET && h->h_addrtype != AF_INET6)) return;
    for (char **p = h->h_addr_list; p && *p; p++) add_addr(ev, h->h_addrtype, *p);
}

// A literal address is no lookup: nothing to report.
static int is_numeric(const char *name) {
    unsigned char buf[16];
    return !name || inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

// The lookups that block their caller (WJ_DNS_* order); UDP queries the app sent itself do not.
static const char *const api_names[] = {"", "getaddrinfo", "gethostbyname", "gethostbyaddr", "getnameinfo"};

static void finish(wj_dns_event *ev, int error) {
    ev->t_end = wj_now_ns();
    ev->error = error;
    if (WJ_UNLIKELY(wj_stall_ns) && ev->t_end - ev->t_start >= wj_stall_ns && ev->api < sizeof api_names / sizeof *api_names)
        wj_stall_blocked(api_names[ev->api], -1, 0, ev->name, ev->t_start, ev->t_end, 0);
    wj_push_dns(ev);
    wj_lc_want_agent();
}

int wj_hook_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    if (is_numeric(node)) return WJ_REAL(getaddrinfo)(node, service, hints, res);
    wj_guard_take();  // the resolver's own sockets (an NSS module's) are not the app's
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETADDRINFO, node, hints ? hints->ai_family : AF_UNSPEC);
    if (service) {
        size_t n = strnlen(service, sizeof ev.service - 1);
        memcpy(ev.service, service, n);
    }
    int r = WJ_REAL(getaddrinfo)(node, service, hints, res);
    int err = errno;
    if (r == 0 && res)
        for (const struct addrinfo *ai = *res; ai; ai = ai->ai_next) add_sockaddr(&ev, ai->ai_addr);
    finish(&ev, r);
    wj_guard_drop();
    errno = err;
    return r;
}

int wj_hook_getnameinfo(const struct sockaddr *sa, socklen_t salen, char *host, socklen_t hostlen, char *serv,
                        socklen_t servlen, int flags) {
    if (!host || (flags & NI_NUMERICHOST)) return WJ_REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen, flags);
    wj_guard_take();
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETNAMEINFO, 0, sa ? sa->sa_family : AF_UNSPEC);
    add_sockaddr(&ev, sa);
    int r = WJ_REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen, flags);
    int err = errno;
    if (r == 0) set_name(&ev, host);
    finish(&ev, r);
    wj_guard_drop();
    errno = err;
    return r;
}

// The gethostbyname family reports errors through h_errno, which we leave as it was.
// `lookup` performs the real call; `name`/`af` describe it for the record.
static struct hostent *timed_gethostbyname(const char *name, int af, struct hostent *(*lookup)(const char *, int)) {
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYNAME, name, af);
    struct hostent *h = lookup(name, af);
    int err = errno, herr = h_errno;
    add_hostent(&ev, h);
    finish(&ev, h ? 0 : herr);
    h_errno = herr;
    errno = err;
    return h;
}

static struct hostent *real_gethostbyname(const char *name, int af) { (void)af; return WJ_REAL(gethostbyname)(name); }
static struct hostent *real_gethostbyname2(const char *name, int af) { return WJ_REAL(gethostbyname2)(name, af); }

struct hostent *wj_hook_gethostbyname(const char *name) {
    if (is_numeric(name)) return WJ_REAL(gethostbyname)(name);
    wj_guard_take();
    struct hostent *h = timed_gethostbyname(name, AF_INET, real_gethostbyname);
    wj_guard_drop();
    return h;
}

struct hostent *wj_hook_gethostbyname2(const char *name, int af) {
    if (is_numeric(name)) return WJ_REAL(gethostbyname2)(name, af);
    wj_guard_take();
    struct hostent *h = timed_gethostbyname(name, af, real_gethostbyname2);
    wj_guard_drop();
    return h;
}

// The reentrant forms: r is the call's result; ERANGE means "retry with a larger buffer",
// not a lookup result, so it is not reported.
static void report_r(wj_dns_event *ev, int r, struct hostent **result, int *h_errnop) {
    if (r == ERANGE) return;
    if (result && *result) add_hostent(ev, *result);
    finish(ev, result && *result ? 0 : (h_errnop ? *h_errnop : r));
}

int wj_hook_gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen, struct hostent **result,
                            int *h_errnop) {
    if (is_numeric(name)) return WJ_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
    wj_guard_take();
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYNAME, name, AF_INET);
    int r = WJ_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
    int err = errno;
    report_r(&ev, r, result, h_errnop);
    wj_guard_drop();
    errno = err;
    return r;
}

int wj_hook_gethostbyname2_r(const char *name, int af, struct hostent *ret, char *buf, size_t buflen,
                             struct hostent **result, int *h_errnop) {
    if (is_numeric(name)) return WJ_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
    wj_guard_take();
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYNAME, name, af);
    int r = WJ_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
    int err = errno;
    report_r(&ev, r, result, h_errnop);
    wj_guard_drop();
    errno = err;
    return r;
}

struct hostent *wj_hook_gethostbyaddr(const void *addr, socklen_t len, int type) {
    if (!addr) return WJ_REAL(gethostbyaddr)(addr, len, type);
    wj_guard_take();
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYADDR, 0, type);
    if ((type == AF_INET && len >= 4) || (type == AF_INET6 && len >= 16)) add_addr(&ev, type, addr);
    struct hostent *h = WJ_REAL(gethostbyaddr)(addr, len, type);
    int err = errno, herr = h_errno;
    if (h) set_name(&ev, h->h_name);
    finish(&ev, h ? 0 : herr);
    wj_guard_drop();
    h_errno = herr;
    errno = err;
    return h;
}

// ---------------------------------------------------------------- DNS on the wire

// A resolver that bypasses libc (c-ares, dnspython, ...) sends its own queries over UDP to
// port 53. A query's id and time are kept in the connection (two outstanding, as for A and
// AAAA asked together); the answer with that id becomes a dns record: the question's name
// and type, the RCODE, the answer count and the A/AAAA addresses. Bounded parsing of the
// app's own bytes; malformed packets are ignored.
#define WJ_DNS_WIRE_MAX 1232

static unsigned get16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

// Skips a (possibly compressed) name at p[*off]; with out, also spells it (question only).
static int dns_name(const unsigned char *p, size_t n, size_t *off, char *out, size_t cap) {
    size_t o = *off, w = 0;
    for (int labels = 0; labels < 128; labels++) {
        if (o >= n) return 0;
        unsigned len = p[o];
        if (len == 0) { *off = o + 1; if (out) out[w] = 0; return 1; }
        if ((len & 0xc0) == 0xc0) { if (o + 2 > n) return 0; *off = o + 2; if (out) out[w] = 0; return !out; }
        if (len > 63 || o + 1 + len > n) return 0;
        if (out) {
            if (w && w + 1 < cap) out[w++] = '.';
            for (unsigned i = 0; i < len && w + 1 < cap; i++) out[w++] = (char)p[o + 1 + i];
        }
        o += 1 + len;
    }
    return 0;
}

void wj_dns_datagram(wj_conn *c, int dir, const void *buf, const struct iovec *iov, int iovcnt, uint64_t n) {
    unsigned char copy[WJ_DNS_WIRE_MAX];
    const unsigned char *p = (const unsigned char *)buf;
    if (n > WJ_DNS_WIRE_MAX) n = WJ_DNS_WIRE_MAX;
    if (!p) {
        if (!iov) return;
        size_t w = 0;
        for (int i = 0; i < iovcnt && w < n; i++) {
            size_t k = iov[i].iov_len < n - w ? iov[i].iov_len : n - w;
            memcpy(copy + w, iov[i].iov_base, k);
            w += k;
        }
        p = copy;
        n = w;
    }
    if (n < 12) return;
    unsigned id = get16(p), flags = get16(p + 2), qd = get16(p + 4), an = get16(p + 6);
    uint64_t now_us = wj_now_ns() / 1000;
    if (dir == WJ_OUT) {
        if (flags & 0x8000) return;  // not a query
        uint64_t q = ((uint64_t)id << 48) | (now_us & 0xffffffffffffull);
        // The older of the two slots makes room.
        uint64_t a = WJ_LOAD(c->dns_query[0]), b = WJ_LOAD(c->dns_query[1]);
        WJ_STORE(c->dns_query[(a & 0xffffffffffffull) <= (b & 0xffffffffffffull) ? 0 : 1], q);
        return;
    }
    if (!(flags & 0x8000) || qd < 1) return;
    int k = -1;
    for (int i = 0; i < 2; i++) {
        uint64_t q = WJ_LOAD(c->dns_query[i]);
        if (q && (q >> 48) == id) k = i;
    }
    if (k < 0) return;
    uint64_t sent_us = WJ_LOAD(c->dns_query[k]) & 0xffffffffffffull;
    WJ_STORE(c->dns_query[k], 0);
    wj_dns_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = WJ_EV_DNS;
    ev.api = WJ_DNS_UDP;
    ev.t_end = now_us * 1000;
    ev.t_start = ((now_us & ~0xffffffffffffull) | sent_us) * 1000;
    if (ev.t_start > ev.t_end) ev.t_start = ev.t_end;
    ev.error = (int32_t)(flags & 0xf);
    size_t off = 12;
    if (!dns_name(p, n, &off, ev.name, sizeof ev.name) || off + 4 > n) return;
    unsigned qtype = get16(p + off);
    ev.family = qtype == 1 ? AF_INET : qtype == 28 ? AF_INET6 : AF_UNSPEC;
    off += 4;
    for (unsigned i = 1; i < qd; i++) if (!dns_name(p, n, &off, 0, 0) || (off += 4) > n) return;
    for (unsigned i = 0; i < an; i++) {
        if (!dns_name(p, n, &off, 0, 0) || off + 10 > n) break;
        unsigned type = get16(p + off), rdlen = get16(p + off + 8);
        off += 10;
        if (off + rdlen > n) break;
        if (type == 1 && rdlen == 4) add_addr(&ev, AF_INET, p + off);
        else if (type == 28 && rdlen == 16) add_addr(&ev, AF_INET6, p + off);
        off += rdlen;
    }
    wj_push_dns(&ev);
}
