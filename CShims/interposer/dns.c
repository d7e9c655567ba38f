// Resolver hooks: time each lookup and report its answers (a `dns` record, and the name a
// later connection to one of these addresses was resolved from). glibc's own UDP traffic
// inside these calls is not interposable; the call itself is what the app waits for.
#include "internal.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#define WJ_EXPORT __attribute__((visibility("default")))

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

static void finish(wj_dns_event *ev, int error) {
    ev->t_end = wj_now_ns();
    ev->error = error;
    wj_push_dns(ev);
    wj_agent_ensure_started();
}

WJ_EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    if (is_numeric(node) || !wj_enter()) return WJ_REAL(getaddrinfo)(node, service, hints, res);
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
    wj_leave();
    errno = err;
    return r;
}

WJ_EXPORT int getnameinfo(const struct sockaddr *sa, socklen_t salen, char *host, socklen_t hostlen, char *serv,
                          socklen_t servlen, int flags) {
    if (!host || (flags & NI_NUMERICHOST) || !wj_enter())
        return WJ_REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen, flags);
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETNAMEINFO, 0, sa ? sa->sa_family : AF_UNSPEC);
    add_sockaddr(&ev, sa);
    int r = WJ_REAL(getnameinfo)(sa, salen, host, hostlen, serv, servlen, flags);
    int err = errno;
    if (r == 0) set_name(&ev, host);
    finish(&ev, r);
    wj_leave();
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

WJ_EXPORT struct hostent *gethostbyname(const char *name) {
    if (is_numeric(name) || !wj_enter()) return WJ_REAL(gethostbyname)(name);
    struct hostent *h = timed_gethostbyname(name, AF_INET, real_gethostbyname);
    wj_leave();
    return h;
}

WJ_EXPORT struct hostent *gethostbyname2(const char *name, int af) {
    if (is_numeric(name) || !wj_enter()) return WJ_REAL(gethostbyname2)(name, af);
    struct hostent *h = timed_gethostbyname(name, af, real_gethostbyname2);
    wj_leave();
    return h;
}

// The reentrant forms: r is the call's result; ERANGE means "retry with a larger buffer",
// not a lookup result, so it is not reported.
static void report_r(wj_dns_event *ev, int r, struct hostent **result, int *h_errnop) {
    if (r == ERANGE) return;
    if (result && *result) add_hostent(ev, *result);
    finish(ev, result && *result ? 0 : (h_errnop ? *h_errnop : r));
}

WJ_EXPORT int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen, struct hostent **result,
                              int *h_errnop) {
    if (is_numeric(name) || !wj_enter()) return WJ_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYNAME, name, AF_INET);
    int r = WJ_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
    int err = errno;
    report_r(&ev, r, result, h_errnop);
    wj_leave();
    errno = err;
    return r;
}

WJ_EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *ret, char *buf, size_t buflen,
                               struct hostent **result, int *h_errnop) {
    if (is_numeric(name) || !wj_enter()) return WJ_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYNAME, name, af);
    int r = WJ_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
    int err = errno;
    report_r(&ev, r, result, h_errnop);
    wj_leave();
    errno = err;
    return r;
}

WJ_EXPORT struct hostent *gethostbyaddr(const void *addr, socklen_t len, int type) {
    if (!addr || !wj_enter()) return WJ_REAL(gethostbyaddr)(addr, len, type);
    wj_dns_event ev;
    begin(&ev, WJ_DNS_GETHOSTBYADDR, 0, type);
    if ((type == AF_INET && len >= 4) || (type == AF_INET6 && len >= 16)) add_addr(&ev, type, addr);
    struct hostent *h = WJ_REAL(gethostbyaddr)(addr, len, type);
    int err = errno, herr = h_errno;
    if (h) set_name(&ev, h->h_name);
    finish(&ev, h ? 0 : herr);
    wj_leave();
    h_errno = herr;
    errno = err;
    return h;
}
