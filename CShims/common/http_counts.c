// The table of counted exchanges (wedjat_http_counts.h). Lock-free: a key is claimed once by
// compare-and-swap and never moves; its counters are atomics that the agent takes by exchange.
// Mapped on first use (no allocator: a hook may run inside malloc or a signal handler).
#include "wedjat_http_counts.h"
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEYS 64   // summary keys a process counts at once; past them, exchanges go to the agent

enum { KEY_FREE = 0, KEY_FILLING = 1, KEY_READY = 2 };

typedef struct key_counts {
    _Atomic uint32_t state;
    uint8_t server, tls, minor, method_len, host_len;
    uint16_t status;
    char method[WJ_H1_METHOD_MAX];
    char host[WJ_H1_HOST_MAX];
    _Atomic uint64_t count, request_bytes, response_bytes, first_mono, last_mono;
    _Atomic uint64_t duration_sum, duration_min, duration_max, ttfb_max;
    _Atomic uint64_t bounded[WJ_COUNT_BOUNDS + 1];
    _Atomic uint32_t duration_hist[WJ_COUNT_HIST];
    _Atomic uint32_t ttfb_hist[WJ_COUNT_HIST];
} key_counts;

static _Atomic(key_counts *) table;

// OpenTelemetry's http.*.request.duration bounds (HTTPSummary.swift, BoundedCounts.boundsUs).
static const uint64_t bounds_us[WJ_COUNT_BOUNDS] = {5000,    10000,   25000,   50000,   75000,   100000,  250000,
                                                    500000,  750000,  1000000, 2500000, 5000000, 7500000, 10000000};

// DurationHistogram.index: 16 sub-buckets per power of two.
static inline uint32_t hist_index(uint64_t v) {
    if (v < 16) return (uint32_t)v;
    int e = 63 - __builtin_clzll(v);
    uint32_t i = (uint32_t)(e - 3) * 16 + (uint32_t)((v >> (e - 4)) & 15);
    return i < WJ_COUNT_HIST ? i : WJ_COUNT_HIST - 1;
}

static inline uint32_t bounded_index(uint64_t us) {
    uint32_t i = 0;
    while (i < WJ_COUNT_BOUNDS && us > bounds_us[i]) i++;
    return i;
}

static key_counts *table_get(void) {
    key_counts *t = atomic_load_explicit(&table, memory_order_acquire);
    if (__builtin_expect(t != 0, 1)) return t;
    void *m = (void *)syscall(SYS_mmap, 0, KEYS * sizeof(key_counts), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    key_counts *expected = 0;
    if (atomic_compare_exchange_strong(&table, &expected, (key_counts *)m)) return (key_counts *)m;
    syscall(SYS_munmap, m, KEYS * sizeof(key_counts));
    return expected;
}

// n bytes equal, without a call for the short strings a method or host is: a word at a time,
// the last word overlapping the one before.
static inline int same_bytes(const char *a, const char *b, size_t n) {
    uint64_t x, y;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

static inline int same_key(const key_counts *k, int server, int tls, const wj_h1_msg *req, uint16_t status) {
    return k->status == status && k->server == server && k->tls == tls && k->minor == req->minor &&
           k->method_len == req->method_len && k->host_len == req->host_len &&
           same_bytes(k->method, req->method, req->method_len) && same_bytes(k->host, req->host, req->host_len);
}

static uint32_t key_hash(int server, int tls, const wj_h1_msg *req, uint16_t status) {
    uint32_t h = 2166136261u ^ (uint32_t)(server | tls << 1 | req->minor << 2) ^ (uint32_t)status << 8;
    for (uint32_t i = 0; i < req->method_len; i++) h = (h ^ (uint8_t)req->method[i]) * 16777619u;
    for (uint32_t i = 0; i < req->host_len; i++) h = (h ^ (uint8_t)req->host[i]) * 16777619u;
    return h;
}

// The key's counts, claimed if new; 0 when the table is full.
static key_counts *find(key_counts *t, int server, int tls, const wj_h1_msg *req, uint16_t status, int32_t *hint) {
    if (*hint >= 0 && *hint < KEYS) {
        key_counts *k = &t[*hint];
        if (atomic_load_explicit(&k->state, memory_order_acquire) == KEY_READY && same_key(k, server, tls, req, status)) return k;
    }
    uint32_t start = key_hash(server, tls, req, status) % KEYS;
    for (uint32_t probe = 0; probe < KEYS; probe++) {
        uint32_t i = (start + probe) % KEYS;
        key_counts *k = &t[i];
        uint32_t st = atomic_load_explicit(&k->state, memory_order_acquire);
        if (st == KEY_FREE) {
            if (!atomic_compare_exchange_strong(&k->state, &st, KEY_FILLING)) {
                if (st != KEY_READY) continue;   // being filled by another thread: a key of its own
            } else {
                k->server = (uint8_t)server;
                k->tls = (uint8_t)tls;
                k->minor = req->minor;
                k->status = status;
                k->method_len = req->method_len;
                k->host_len = req->host_len;
                memcpy(k->method, req->method, req->method_len);
                memcpy(k->host, req->host, req->host_len);
                atomic_store_explicit(&k->first_mono, UINT64_MAX, memory_order_relaxed);
                atomic_store_explicit(&k->duration_min, UINT64_MAX, memory_order_relaxed);
                atomic_store_explicit(&k->state, KEY_READY, memory_order_release);
                *hint = (int32_t)i;
                return k;
            }
        }
        if (st == KEY_READY && same_key(k, server, tls, req, status)) {
            *hint = (int32_t)i;
            return k;
        }
    }
    return 0;
}

static inline void store_min(_Atomic uint64_t *a, uint64_t v) {
    uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (v < cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static inline void store_max(_Atomic uint64_t *a, uint64_t v) {
    uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

int wj_http_count_exchange(int server, int tls, const wj_h1_msg *req, const wj_h1_msg *resp, int32_t *hint) {
    key_counts *t = table_get();
    if (!t) return 0;
    key_counts *k = find(t, server ? 1 : 0, tls ? 1 : 0, req, resp->status, hint);
    if (!k) return 0;
    // As HTTPSummaryEntry.add: durations from the request's first byte, in microseconds.
    atomic_fetch_add_explicit(&k->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->request_bytes, req->header_bytes + req->body_bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->response_bytes, resp->header_bytes + resp->body_bytes, memory_order_relaxed);
    if (resp->t_end >= req->t_first) {
        uint64_t us = (resp->t_end - req->t_first) / 1000;
        atomic_fetch_add_explicit(&k->duration_hist[hist_index(us)], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&k->bounded[bounded_index(us)], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&k->duration_sum, us, memory_order_relaxed);
        store_min(&k->duration_min, us);
        store_max(&k->duration_max, us);
    }
    if (resp->t_first >= req->t_first) {
        uint64_t us = (resp->t_first - req->t_first) / 1000;
        atomic_fetch_add_explicit(&k->ttfb_hist[hist_index(us)], 1, memory_order_relaxed);
        store_max(&k->ttfb_max, us);
    }
    store_min(&k->first_mono, resp->t_end);
    store_max(&k->last_mono, resp->t_end);
    return 1;
}

int wj_http_counts_take(uint32_t index, wj_http_count *out, uint32_t *duration_hist, uint32_t *ttfb_hist) {
    key_counts *t = atomic_load_explicit(&table, memory_order_acquire);
    if (!t || index >= KEYS) return -1;
    key_counts *k = &t[index];
    if (atomic_load_explicit(&k->state, memory_order_acquire) != KEY_READY) return 0;
    if (!atomic_load_explicit(&k->count, memory_order_relaxed)) return 0;
    memset(out, 0, sizeof *out);
    out->server = k->server;
    out->tls = k->tls;
    out->minor = k->minor;
    out->status = k->status;
    out->method_len = k->method_len;
    out->host_len = k->host_len;
    memcpy(out->method, k->method, k->method_len);
    memcpy(out->host, k->host, k->host_len);
    out->count = atomic_exchange_explicit(&k->count, 0, memory_order_relaxed);
    out->request_bytes = atomic_exchange_explicit(&k->request_bytes, 0, memory_order_relaxed);
    out->response_bytes = atomic_exchange_explicit(&k->response_bytes, 0, memory_order_relaxed);
    out->first_mono = atomic_exchange_explicit(&k->first_mono, UINT64_MAX, memory_order_relaxed);
    out->last_mono = atomic_exchange_explicit(&k->last_mono, 0, memory_order_relaxed);
    out->duration_sum = atomic_exchange_explicit(&k->duration_sum, 0, memory_order_relaxed);
    out->duration_min = atomic_exchange_explicit(&k->duration_min, UINT64_MAX, memory_order_relaxed);
    out->duration_max = atomic_exchange_explicit(&k->duration_max, 0, memory_order_relaxed);
    out->ttfb_max = atomic_exchange_explicit(&k->ttfb_max, 0, memory_order_relaxed);
    for (int i = 0; i <= WJ_COUNT_BOUNDS; i++)
        out->duration_bounded[i] = atomic_exchange_explicit(&k->bounded[i], 0, memory_order_relaxed);
    for (int i = 0; i < WJ_COUNT_HIST; i++) {
        // Most buckets are empty: a load is cheaper than an exchange.
        duration_hist[i] = atomic_load_explicit(&k->duration_hist[i], memory_order_relaxed)
                               ? atomic_exchange_explicit(&k->duration_hist[i], 0, memory_order_relaxed) : 0;
        ttfb_hist[i] = atomic_load_explicit(&k->ttfb_hist[i], memory_order_relaxed)
                           ? atomic_exchange_explicit(&k->ttfb_hist[i], 0, memory_order_relaxed) : 0;
    }
    return 1;
}

void wj_http_counts_forked(void) {
    key_counts *t = atomic_exchange(&table, (key_counts *)0);
    if (t) syscall(SYS_munmap, t, KEYS * sizeof(key_counts));
}
