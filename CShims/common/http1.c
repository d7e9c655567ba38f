// HTTP/1.x framing (wedjat_http1.h): a port of the framing of Sources/WedjatCore/HTTP1Parser.swift
// to C, without its buffers. The structure follows the Swift code function by function, so
// that the two can be read side by side; the differential tests hold them to the same output.
#include "wedjat_http1.h"
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {  // wj_h1_side.phase
    PH_START, PH_HEADERS, PH_CHUNK_SIZE, PH_CHUNK_CRLF, PH_TRAILERS,  // line phases
    PH_BODY, PH_CHUNK_DATA, PH_UNTIL_CLOSE, PH_PAUSED,                 // skip phases
};

#define NO_EXCHANGE UINT32_MAX
#define WJ_H1_UNLIKELY_DETECTING(h) __builtin_expect(state_of(h) == WJ_H1_DETECTING, 0)

typedef struct {
    wj_h1 *h;
    const wj_h1_sink *sink;
} ctx;

// ---------------------------------------------------------------- syntax (HTTP1Syntax)

// tchar (RFC 9110 5.6.2): ! # $ % & ' * + - . ^ _ ` | ~ DIGIT ALPHA
static const uint8_t tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1,
    ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

// How many bytes at p are token characters (at most n; p[0..avail) may be read, avail >= n).
// Field names are nearly always letters, digits and '-': 16 bytes are checked at once for
// those, the rest (and the first other byte) by the table.
static inline size_t tchar_span(const uint8_t *p, size_t n, size_t avail) {
    size_t i = 0;
#if defined(__SSE2__)
    while (i + 16 <= avail && i < n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
        __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)), _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
        __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
        __m128i dash = _mm_cmpeq_epi8(v, _mm_set1_epi8('-'));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), dash));
        if (mask != 0xffff) {
            i += (size_t)__builtin_ctz(~mask);
            break;
        }
        i += 16;
    }
#else
    (void)avail;
#endif
    while (i < n && tchar[p[i]]) i++;
    return i < n ? i : n;
}

// One pass over a field line from its first byte: where its LF is (SIZE_MAX: not in these
// `rest` bytes), where its first ':' before the LF is (SIZE_MAX: none), and whether a byte
// before that is other than a letter, a digit or '-' (then the name needs tchar_span to say
// whether it is still a token). 16 bytes at a time; the last few through a copy.
typedef struct { size_t lf, colon; int odd_name; } line_scan;

static inline line_scan scan_field_line(const uint8_t *q, size_t rest) {
    line_scan r = {SIZE_MAX, SIZE_MAX, 0};
#if defined(__SSE2__)
    size_t off = 0;
    while (off < rest) {
        size_t avail = rest - off;
        __m128i v;
        unsigned valid = 0xffff;
        if (avail >= 16) {
            v = _mm_loadu_si128((const __m128i *)(const void *)(q + off));
        } else {
            uint8_t tmp[16] = {0};
            memcpy(tmp, q + off, avail);
            v = _mm_loadu_si128((const __m128i *)(const void *)tmp);
            valid = (1u << avail) - 1;
        }
        unsigned lf = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))) & valid;
        if (r.colon == SIZE_MAX) {
            unsigned colon = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(':'))) & valid;
            __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)), _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
            __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
            __m128i dash = _mm_cmpeq_epi8(v, _mm_set1_epi8('-'));
            unsigned plain = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), dash));
            unsigned stop = colon | lf;
            unsigned before = stop ? (stop & (0u - stop)) - 1 : valid;   // bytes before the first ':' or LF
            if (~plain & before & valid) r.odd_name = 1;
            if (colon && (!lf || __builtin_ctz(colon) < __builtin_ctz(lf))) r.colon = off + (size_t)__builtin_ctz(colon);
        }
        if (lf) {
            r.lf = off + (size_t)__builtin_ctz(lf);
            return r;
        }
        off += 16;
    }
    return r;
#else
    const uint8_t *nl = memchr(q, '\n', rest);
    size_t end = nl ? (size_t)(nl - q) : rest;
    for (size_t i = 0; i < end; i++) {
        if (q[i] == ':') { r.colon = i; break; }
        uint8_t b = q[i] | 0x20;
        if (!((b >= 'a' && b <= 'z') || (q[i] >= '0' && q[i] <= '9') || q[i] == '-')) r.odd_name = 1;
    }
    if (nl) r.lf = end;
    return r;
#endif
}

static inline int is_upper(uint8_t b) { return b >= 'A' && b <= 'Z'; }
static inline int is_method_char(uint8_t b) { return is_upper(b) || b == '-' || b == '_'; }
static inline int is_target_char(uint8_t b) { return b > 32 && b < 127; }

static int equals(const uint8_t *p, const char *lit) {
    for (size_t k = 0; lit[k]; k++)
        if (p[k] != (uint8_t)lit[k]) return 0;
    return 1;
}

// The first min(n, len(lit)) bytes match the lowercase literal, letters in any case.
static int case_compatible(const uint8_t *p, size_t n, const char *lit) {
    for (size_t k = 0; k < n && lit[k]; k++) {
        uint8_t t = (uint8_t)lit[k], b = p[k];
        if (t >= 'a') {
            if ((b | 0x20) != t) return 0;
        } else if (b != t) {
            return 0;
        }
    }
    return 1;
}

// Case-insensitive match against a lowercase literal of the same length.
static int name_is(const uint8_t *p, const char *lit) { return case_compatible(p, SIZE_MAX, lit); }

// The same for a field name already checked to be a token, `n` (4 to 17) bytes long, a word
// at a time: OR 0x20 lowers a letter, keeps '-' and digits, and maps no other token byte onto
// a lowercase letter or '-' (CR, which would become '-', is not a token byte).
static inline uint64_t load_lowered(const uint8_t *p, size_t n) {
    uint64_t w = 0;
    memcpy(&w, p, n);
    return w | (0x2020202020202020ull >> (8 * (8 - n)));
}

static inline int token_name_is(const uint8_t *p, size_t n, const char *lit) {
    if (n <= 8) return load_lowered(p, n) == load_lowered((const uint8_t *)lit, n);
    for (size_t k = 0; k + 8 <= n; k += 8) {
        if (load_lowered(p + k, 8) != load_lowered((const uint8_t *)lit + k, 8)) return 0;
    }
    size_t tail = n % 8;
    return !tail || load_lowered(p + n - tail, tail) == load_lowered((const uint8_t *)lit + n - tail, tail);
}

static size_t scheme_prefix(const uint8_t *p, size_t n) {
    if (n >= 7 && name_is(p, "http://")) return 7;
    if (n >= 8 && name_is(p, "https://")) return 8;
    return 0;
}

static inline __attribute__((always_inline)) int request_prefix_ok(const uint8_t *p, size_t n) {
    if (n >= 5 && memcmp(p, "GET /", 5) == 0) return 1;   // the usual request, in one compare
    if (n == 0) return 1;
    if (!is_upper(p[0])) return 0;
    size_t i = 1;
    while (i < n && is_method_char(p[i])) i++;
    if (i > 20) return 0;
    if (i == n) return 1;
    if (p[i] != ' ') return 0;
    i++;
    if (i == n) return 1;
    uint8_t c = p[i];
    if (c == '/' || c == '*') return 1;
    if (i == 8 && equals(p, "CONNECT")) return is_target_char(c);
    return case_compatible(p + i, n - i, "http://") || case_compatible(p + i, n - i, "https://");
}

static inline __attribute__((always_inline)) int status_prefix_ok(const uint8_t *p, size_t n) {
    static const char lit[] = "HTTP/1.";
    if (n >= 7) {   // the common case, one compare
        uint64_t w = 0, want = 0;
        memcpy(&w, p, 7);
        memcpy(&want, lit, 7);
        return w == want;
    }
    for (size_t k = 0; k < n && k < 7; k++)
        if (p[k] != (uint8_t)lit[k]) return 0;
    return 1;
}

static int prefix_ok(int is_request, const uint8_t *p, size_t n) {
    return is_request ? request_prefix_ok(p, n) : status_prefix_ok(p, n);
}

// 1*DIGIT, or a comma-separated list of identical values (OWS around the items).
static int content_length(const uint8_t *p, size_t n, uint64_t *out) {
    int have = 0;
    uint64_t result = 0;
    size_t i = 0;
    for (;;) {
        while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
        uint64_t v = 0;
        int digits = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9') {
            uint64_t d = (uint64_t)(p[i] - '0');
            if (v >= UINT64_MAX / 10 && (v > UINT64_MAX / 10 || d > UINT64_MAX % 10)) return 0;   // would overflow
            v = v * 10 + d;
            digits++;
            i++;
        }
        if (!digits) return 0;
        if (have && result != v) return 0;
        result = v;
        have = 1;
        while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
        if (i == n) break;
        if (p[i] != ',') return 0;
        i++;
    }
    *out = result;
    return 1;
}

// Whether the last transfer coding of a Transfer-Encoding value is "chunked".
static int last_coding_is_chunked(const uint8_t *p, size_t n) {
    size_t e = n;
    while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t')) e--;
    if (e < 7 || !name_is(p + e - 7, "chunked")) return 0;
    size_t s = e - 7;
    while (s > 0 && (p[s - 1] == ' ' || p[s - 1] == '\t')) s--;
    return s == 0 || p[s - 1] == ',';
}

// chunk-size [ BWS ; chunk-ext ]; 0 if malformed or over 2^60.
static int chunk_size(const uint8_t *p, size_t n, uint64_t *out) {
    uint64_t v = 0;
    size_t i = 0;
    while (i < n) {
        uint8_t b = p[i], h;
        if (b >= '0' && b <= '9') h = (uint8_t)(b - '0');
        else if ((b | 0x20) >= 'a' && (b | 0x20) <= 'f') h = (uint8_t)((b | 0x20) - 'a' + 10);
        else break;
        if (v >> 59) return 0;
        v = v << 4 | h;
        i++;
    }
    if (i == 0) return 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    if (i != n && p[i] != ';') return 0;
    *out = v;
    return 1;
}

// ---------------------------------------------------------------- a line

// A complete line (CR already stripped from n): its first bytes at p (all of them unless
// `cut`), and for a cut line its last bytes and the counts taken over all of it.
typedef struct {
    const uint8_t *p;
    size_t n;
    size_t avail;            // bytes at p that may be read (>= n for a line not cut)
    int cut;
    const uint8_t *tail;     // the last WJ_H1_TAIL bytes before the CR (cut lines)
    uint32_t nontarget;      // bytes outside 33..126 (cut request lines)
    int32_t nontchar_at;     // index of the first non-token byte, -1 if none (cut lines)
    uint8_t nontchar;
} line;

static inline uint8_t byte_from_end(const line *l, size_t k) {  // p[n - 1 - k]
    if (!l->cut) return l->p[l->n - 1 - k];
    return l->tail[WJ_H1_TAIL - 1 - k];
}

// ---------------------------------------------------------------- the stream

static inline uint8_t state_of(const wj_h1 *h) { return atomic_load_explicit(&((wj_h1 *)h)->state, memory_order_relaxed); }
static inline int live(const wj_h1 *h) { uint8_t s = state_of(h); return s == WJ_H1_DETECTING || s == WJ_H1_HTTP; }

static void side_init(wj_h1_side *s, int is_request) {
    memset(s, 0, sizeof *s);
    s->is_request = (uint8_t)is_request;
    s->phase = PH_START;
    s->line_nontchar_at = -1;   // the carried line's state, as carry_reset leaves it
}

void wj_h1_init(wj_h1 *h, int client) {
    atomic_store_explicit(&h->state, WJ_H1_DETECTING, memory_order_relaxed);
    h->client = (uint8_t)client;
    atomic_store_explicit(&h->resume, 0, memory_order_relaxed);
    atomic_store_explicit(&h->stop_said, 0, memory_order_relaxed);
    atomic_store_explicit(&h->why, WJ_H1_WHY_OTHER, memory_order_relaxed);
    atomic_store_explicit(&h->announced, 0, memory_order_relaxed);
    h->announce_seq = UINT32_MAX;
    h->announce_mono = 0;
    for (int i = 0; i < WJ_H1_FACTS; i++) atomic_store_explicit(&h->facts[i], 0, memory_order_relaxed);
    for (int i = 0; i < WJ_H1_STASH; i++) atomic_store_explicit(&h->stash[i].tag, 0, memory_order_relaxed);
    side_init(&h->req, 1);
    side_init(&h->resp, 0);
}

static uint32_t facts_of(const wj_h1 *h, uint32_t seq) {
    uint32_t f = atomic_load_explicit(&((wj_h1 *)h)->facts[seq % WJ_H1_FACTS], memory_order_acquire);
    if (!(f & WJ_H1_FACT_KNOWN) || (f >> 8) != (seq & 0xffffffu)) return 0;
    return f & 0xff;
}

int wj_h1_carry(const wj_h1 *h, wj_h1_carried *out) {
    const wj_h1_side *q = &h->req, *a = &h->resp;
    uint32_t requests = atomic_load_explicit(&((wj_h1_side *)q)->next, memory_order_acquire);
    uint32_t answered = atomic_load_explicit(&((wj_h1_side *)a)->next, memory_order_acquire);
    if (atomic_load_explicit(&((wj_h1 *)h)->state, memory_order_acquire) != WJ_H1_HTTP) return 0;
    if (q->phase != PH_START || q->started || q->line_len || atomic_load(&((wj_h1_side *)q)->open)) return 0;
    if (a->phase != PH_START || a->started || a->line_len || atomic_load(&((wj_h1_side *)a)->open)) return 0;
    if (answered > requests || requests - answered > WJ_H1_CARRY_FACTS) return 0;
    memset(out, 0, sizeof *out);
    out->requests = requests;
    out->answered = answered;
    out->announced = atomic_load_explicit(&((wj_h1 *)h)->announced, memory_order_acquire);
    for (uint32_t k = answered; k < requests; k++) out->facts[k - answered] = (uint8_t)(facts_of(h, k) & 0x7f);
    return 1;
}

void wj_h1_resume(wj_h1 *h, const wj_h1_carried *r) {
    if (r->answered > r->requests || r->requests - r->answered > WJ_H1_CARRY_FACTS) return;
    atomic_store_explicit(&h->req.next, r->requests, memory_order_relaxed);
    atomic_store_explicit(&h->resp.next, r->answered, memory_order_relaxed);
    h->req.seq = r->requests;
    h->resp.seq = r->answered;
    atomic_store_explicit(&h->announced, r->announced > r->requests ? r->requests : r->announced, memory_order_relaxed);
    for (uint32_t k = r->answered; k < r->requests; k++)
        atomic_store_explicit(&h->facts[k % WJ_H1_FACTS], (k & 0xffffffu) << 8 | WJ_H1_FACT_KNOWN | r->facts[k - r->answered],
                              memory_order_relaxed);
    atomic_store_explicit(&h->state, WJ_H1_HTTP, memory_order_release);
}

static void set_facts(wj_h1 *h, uint32_t seq, uint32_t flags) {
    atomic_store_explicit(&h->facts[seq % WJ_H1_FACTS], ((seq & 0xffffffu) << 8) | WJ_H1_FACT_KNOWN | flags,
                          memory_order_release);
}

// Every message says how many responses had ended when it was handed over: the exchanges
// before that which never came as messages were taken whole by sink->exchange.
static void emit(const ctx *c, wj_h1_msg *m) {
    m->answered = atomic_load_explicit(&c->h->resp.next, memory_order_acquire);
    if (c->sink->msg) c->sink->msg(c->sink->ctx, m);
}

// Hands over the side's open message (cut short: the stream stopped or the connection ended).
static void hand_over_open(const ctx *c, wj_h1_side *s) {
    if (atomic_exchange_explicit(&s->open, 0, memory_order_acq_rel)) emit(c, &s->cur);
}

static inline uint32_t response_next(const wj_h1 *h) {
    return atomic_load_explicit(&((wj_h1 *)h)->resp.next, memory_order_acquire);
}

// ---------------------------------------------------------------- whole exchanges (sink->exchange)

static inline uint32_t stash_tag(uint32_t seq, uint32_t st) { return ((seq + 1u) << 2) | st; }
static inline int stash_for(uint32_t tag, uint32_t seq) { return (tag >> 2) == ((seq + 1u) & 0x3fffffffu); }

// A request the sink may take whole with its response (wedjat_http1.h, wj_h1_sink.exchange).
static int plain_request(const wj_h1_msg *m, uint32_t facts) {
    const uint16_t need = WJ_H1_M_ENDED | WJ_H1_M_HEADERS;
    return (m->flags & need) == need && !(m->flags & (WJ_H1_M_DETAILED | WJ_H1_M_CONNECT | WJ_H1_M_HOST_CUT)) &&
           (m->flags & (WJ_H1_M_HOST_FIELD | WJ_H1_M_HOST_TARGET)) && m->host_len > 0 && !(facts & WJ_H1_FACT_PAUSES);
}

static int plain_response(const wj_h1_msg *m) {
    const uint16_t need = WJ_H1_M_ENDED | WJ_H1_M_HEADERS;
    return (m->flags & need) == need && !(m->flags & WJ_H1_M_UPGRADED);
}

// The request side, at its message's end: 1 if the message now waits in the stash for its
// response (and is not handed over now).
static int stash_request(const ctx *c, wj_h1_side *s) {
    wj_h1 *h = c->h;
    if (!c->sink->exchange || !atomic_load_explicit(&s->open, memory_order_relaxed)) return 0;
    if (!plain_request(&s->cur, facts_of(h, s->seq))) return 0;
    wj_h1_stash *st = &h->stash[s->seq % WJ_H1_STASH];
    uint32_t t = atomic_load_explicit(&st->tag, memory_order_acquire);
    // An older request still waits there (more than WJ_H1_STASH pipelined), or this one's
    // response already ended: handed over now.
    if ((t & 3u) == WJ_H1_STASH_STASHED || (t & 3u) == WJ_H1_STASH_TAKEN || stash_for(t, s->seq)) return 0;
    st->msg = s->cur;
    if (!atomic_compare_exchange_strong_explicit(&st->tag, &t, stash_tag(s->seq, WJ_H1_STASH_STASHED),
                                                 memory_order_acq_rel, memory_order_acquire))
        return 0;   // its response ended meanwhile (GONE)
    atomic_store_explicit(&s->open, 0, memory_order_release);
    return 1;
}

// The response side, at its message's end: 1 if the exchange was handled here (taken by the
// sink, or both messages handed over), 0 if the response goes out alone as usual.
static int take_exchange(const ctx *c, wj_h1_side *s) {
    wj_h1 *h = c->h;
    if (!c->sink->exchange) return 0;
    wj_h1_stash *st = &h->stash[s->seq % WJ_H1_STASH];
    uint32_t t = atomic_load_explicit(&st->tag, memory_order_acquire);
    for (;;) {
        if (t == stash_tag(s->seq, WJ_H1_STASH_STASHED)) {
            // TAKEN while it is read in place: nobody else touches the slot then.
            if (!atomic_compare_exchange_strong_explicit(&st->tag, &t, stash_tag(s->seq, WJ_H1_STASH_TAKEN),
                                                         memory_order_acq_rel, memory_order_acquire))
                continue;   // stop() handed it over meanwhile
            if (plain_response(&s->cur) && atomic_load_explicit(&s->open, memory_order_relaxed) &&
                c->sink->exchange(c->sink->ctx, &st->msg, &s->cur)) {
                atomic_store_explicit(&s->open, 0, memory_order_release);
            } else {
                emit(c, &st->msg);
                hand_over_open(c, s);
            }
            atomic_store_explicit(&st->tag, stash_tag(s->seq, WJ_H1_STASH_FREE), memory_order_release);
            return 1;
        }
        if ((t & 3u) == WJ_H1_STASH_STASHED || (t & 3u) == WJ_H1_STASH_TAKEN) return 0;   // another exchange's
        if (atomic_compare_exchange_strong_explicit(&st->tag, &t, stash_tag(s->seq, WJ_H1_STASH_GONE),
                                                    memory_order_acq_rel, memory_order_acquire))
            return 0;
    }
}

// Stashed requests whose responses will not come now, oldest first.
static void hand_over_stashed(const ctx *c) {
    wj_h1 *h = c->h;
    for (;;) {
        int oldest = -1;
        uint32_t ot = 0;
        for (int i = 0; i < WJ_H1_STASH; i++) {
            uint32_t t = atomic_load_explicit(&h->stash[i].tag, memory_order_acquire);
            if ((t & 3u) == WJ_H1_STASH_STASHED && (oldest < 0 || (t >> 2) < (ot >> 2))) {
                oldest = i;
                ot = t;
            }
        }
        if (oldest < 0) return;
        wj_h1_msg m = h->stash[oldest].msg;
        if (atomic_compare_exchange_strong_explicit(&h->stash[oldest].tag, &ot, (ot & ~3u) | WJ_H1_STASH_FREE,
                                                    memory_order_acq_rel, memory_order_acquire))
            emit(c, &m);
    }
}

// stop(): the stream is not parsed further. Open messages are handed over (the other side's
// only if it is not being framed right now: then it hands its own over when it sees the stop),
// then the STOP, which tells which exchange the error is for.
static void stop(const ctx *c, wj_h1_side *self, uint8_t new_state, uint8_t error, uint32_t current, uint16_t flags) {
    wj_h1 *h = c->h;
    uint8_t expected = state_of(h);
    if (expected != WJ_H1_DETECTING && expected != WJ_H1_HTTP) return;
    atomic_store_explicit(&h->state, new_state, memory_order_release);
    wj_h1_side *other = self == &h->req ? &h->resp : &h->req;
    hand_over_stashed(c);
    hand_over_open(c, self);
    if (!atomic_load_explicit(&other->busy, memory_order_acquire)) hand_over_open(c, other);
    wj_h1_msg m;
    memset(&m, 0, sizeof m);
    m.kind = WJ_H1_STOP;
    m.state = new_state;
    m.error = error;
    m.seq = current;
    m.flags = flags;
    m.why = atomic_load_explicit(&h->why, memory_order_relaxed);
    // Where decoding stopped, each direction: the failing side at the line it could not take.
    m.header_bytes = self == &h->req && h->req.line_at < h->req.pos ? h->req.line_at : h->req.pos;
    m.body_bytes = self == &h->resp && h->resp.line_at < h->resp.pos ? h->resp.line_at : h->resp.pos;
    atomic_store_explicit(&h->stop_said, 1, memory_order_release);
    emit(c, &m);
}

// The first bytes of a stream still being detected: what they look like, if not HTTP/1.
static void classify(wj_h1 *h, const uint8_t *q, size_t n) {
    uint8_t why = WJ_H1_WHY_OTHER;
    if (n >= 1 && q[0] == 0x16 && (n < 2 || q[1] == 0x03)) why = WJ_H1_WHY_TLS;
    else if (n >= 3 && q[0] == 'P' && q[1] == 'R' && q[2] == 'I') why = WJ_H1_WHY_HTTP2;
    atomic_store_explicit(&h->why, why, memory_order_relaxed);
}

static void fail(const ctx *c, wj_h1_side *s, uint8_t error, uint32_t current) {
    if (state_of(c->h) == WJ_H1_DETECTING) {
        stop(c, s, WJ_H1_NOT_HTTP, WJ_H1_ERR_NONE, NO_EXCHANGE, 0);
        return;
    }
    stop(c, s, WJ_H1_DESYNCED, error, current, 0);
}

static void reset_framing(wj_h1_side *s) {
    s->content_length = 0;
    s->has_cl = 0;
    s->chunked = 0;
    s->te = 0;
    s->upgrade = 0;
}


// The current message ended at stream offset `end` (exclusive), at time `mono`.
static void end_message(const ctx *c, wj_h1_side *s, uint64_t end, uint64_t mono) {
    wj_h1 *h = c->h;
    s->cur.t_end = mono;
    s->cur.body_bytes = end - s->body_start;
    s->cur.flags |= WJ_H1_M_ENDED;
    if (s->is_request) {
        uint32_t f = facts_of(h, s->seq);
        // After CONNECT/Upgrade, wait for the answer unless it already came.
        s->phase = (f & WJ_H1_FACT_PAUSES) && response_next(h) <= s->seq ? PH_PAUSED : PH_START;
        if (!stash_request(c, s)) hand_over_open(c, s);
    } else {
        uint32_t f = facts_of(h, s->seq);
        if (!take_exchange(c, s)) hand_over_open(c, s);
        atomic_store_explicit(&s->next, s->seq + 1, memory_order_release);
        s->phase = PH_START;
        if (f & WJ_H1_FACT_PAUSES) {
            // Answered without a tunnel: the request side may go on (it never parsed what it
            // sent meanwhile: that is lost).
            if (h->req.lost) {
                stop(c, s, WJ_H1_DESYNCED, WJ_H1_ERR_DESYNC, NO_EXCHANGE, WJ_H1_M_PAUSE_LOST);
            } else {
                atomic_store_explicit(&h->resume, 1, memory_order_release);
            }
        }
    }
    s->started = 0;
    s->block_bytes = 0;
}

static int enter_body(const ctx *c, wj_h1_side *s) {
    uint64_t end = s->pos + s->content_length;
    if (end < s->pos || end == UINT64_MAX) {
        fail(c, s, WJ_H1_ERR_PARSE, s->seq);
        return 0;
    }
    s->skip_end = end;
    s->phase = PH_BODY;
    return 1;
}

// The call that ended the headers does not count as a body call (see HTTP1.swift).
static void enter_until_close(wj_h1_side *s) {
    s->phase = PH_UNTIL_CLOSE;
    s->close_max_io_end = s->pos > s->seg_io_end ? s->pos : s->seg_io_end;
    s->close_seen = 0;
    s->close_last_mono = 0;
}

// Copies at most `cap` bytes of text into dst (len in *len); 1 if it was cut.
static int keep(char *dst, size_t cap, uint8_t *len, const uint8_t *src, size_t n) {
    size_t k = n < cap ? n : cap;
    memcpy(dst, src, k);
    *len = (uint8_t)k;
    return k < n;
}

// The host of an absolute-form or authority-form target, from what the line holds of it.
static void target_host(wj_h1_msg *m, const uint8_t *t, size_t n, int is_connect, int target_cut) {
    size_t auth_start, auth_end;
    if (is_connect) {
        auth_start = 0;
        auth_end = n;
    } else {
        size_t s = scheme_prefix(t, n);
        if (!s) return;
        auth_start = auth_end = s;
        while (auth_end < n && t[auth_end] != '/' && t[auth_end] != '?' && t[auth_end] != '#') auth_end++;
    }
    size_t from = auth_start;
    for (size_t k = auth_start; k < auth_end; k++)
        if (t[k] == '@') from = k + 1;   // the last '@'
    if (keep(m->host, sizeof m->host, &m->host_len, t + from, auth_end - from) || (target_cut && auth_end == n))
        m->flags |= WJ_H1_M_HOST_CUT;
    m->flags |= WJ_H1_M_HOST_TARGET;
}

// ---------------------------------------------------------------- start lines

typedef struct {
    size_t method_end, target_start, target_end;  // target_end: within what the line holds
    uint8_t minor;
    int is_connect, is_head;
} request_line;

// RequestLine: METHOD SP target SP HTTP/1.x, checked on the whole line (a cut line: on its
// first bytes, its last bytes and its count of bytes that cannot be in a target, which must
// be the two spaces and nothing else).
// "HTTP/1.0" or "HTTP/1.1" at p (8 bytes).
static inline int is_http1_version(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t want0, want1;
    memcpy(&want0, "HTTP/1.0", 8);
    memcpy(&want1, "HTTP/1.1", 8);
    return w == want0 || w == want1;
}

static int parse_request_line(const line *l, request_line *out) {
    const uint8_t *p = l->p;
    size_t n = l->n, avail = l->cut ? WJ_H1_CARRY : n;
    if (n < 14 || !is_upper(p[0])) return 0;
    size_t i = 1;
    if (memcmp(p, "GET ", 4) == 0) i = 3;   // the usual method, without the loop (n >= 14 here)
    else while (i < avail && i <= 20 && is_method_char(p[i])) i++;
    if (i > 20 || i >= avail || p[i] != ' ') return 0;
    out->method_end = i;
    out->target_start = ++i;
    if (!l->cut) {
        // The target runs to the space 9 bytes before the end (" HTTP/1.x"), every byte of it
        // a target character: checked 16 at a time, as far as the bytes that may be read allow.
        if (n < i + 10 || p[n - 9] != ' ' || !is_http1_version(p + n - 8)) return 0;
        size_t end = n - 9;
#if defined(__SSE2__)
        while (i + 16 <= end || (i < end && i + 16 <= l->avail)) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
            __m128i ok = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(32)), _mm_cmplt_epi8(v, _mm_set1_epi8(127)));
            unsigned bad = ~(unsigned)_mm_movemask_epi8(ok) & 0xffff;
            if (bad) {
                i += (size_t)__builtin_ctz(bad);
                break;
            }
            i += 16;
        }
        if (i > end) i = end;
#endif
        while (i < end && is_target_char(p[i])) i++;
        out->target_end = i;
        if (i != end || end <= out->target_start) return 0;
    } else {
        uint8_t v[9];
        for (size_t k = 0; k < 9; k++) v[k] = byte_from_end(l, 8 - k);
        if (l->nontarget != 2 || v[0] != ' ' || !equals(v + 1, "HTTP/1.") || (v[8] != '0' && v[8] != '1') ||
            i >= avail || !is_target_char(p[i]))
            return 0;
        out->target_end = n - 9 < avail ? n - 9 : avail;
    }
    out->minor = byte_from_end(l, 0) == '0' ? 0 : 1;
    out->is_connect = out->method_end == 7 && equals(p, "CONNECT");
    out->is_head = out->method_end == 4 && equals(p, "HEAD");
    uint8_t t0 = p[out->target_start];
    if (!out->is_connect && t0 != '/' && t0 != '*' &&
        !scheme_prefix(p + out->target_start, out->target_end - out->target_start))
        return 0;
    return 1;
}

static uint32_t request_facts(const request_line *rl, int detailed) {
    return (rl->is_head ? WJ_H1_FACT_HEAD : 0) | (rl->is_connect ? WJ_H1_FACT_CONNECT | WJ_H1_FACT_PAUSES : 0) |
           (detailed ? WJ_H1_FACT_DETAILED : 0);
}

static int start_request(const ctx *c, wj_h1_side *s, const line *l) {
    wj_h1 *h = c->h;
    request_line rl;
    if (!parse_request_line(l, &rl)) {
        fail(c, s, WJ_H1_ERR_PARSE, NO_EXCHANGE);
        return 0;
    }
    uint32_t seq = atomic_load_explicit(&s->next, memory_order_relaxed), answered = response_next(h);
    if (seq > answered && seq - answered >= WJ_H1_MAX_PENDING) {
        fail(c, s, WJ_H1_ERR_DESYNC, NO_EXCHANGE);
        return 0;
    }
    if (state_of(h) == WJ_H1_DETECTING) atomic_store_explicit(&h->state, WJ_H1_HTTP, memory_order_release);
    wj_h1_msg *m = &s->cur;
    memset(m, 0, offsetof(wj_h1_msg, method));   // method and host count by their lengths
    m->kind = WJ_H1_REQUEST;
    m->seq = seq;
    m->t_first = s->msg_start_mono;
    m->minor = rl.minor;
    uint8_t len;
    keep(m->method, sizeof m->method, &len, l->p, rl.method_end);
    m->method_len = len;
    m->flags = (uint16_t)((rl.is_head ? WJ_H1_M_HEAD : 0) | (rl.is_connect ? WJ_H1_M_CONNECT : 0) |
                          (s->detailed ? WJ_H1_M_DETAILED : 0));
    uint8_t t0 = l->p[rl.target_start];
    if (rl.is_connect || (t0 != '/' && t0 != '*'))
        target_host(m, l->p + rl.target_start, rl.target_end - rl.target_start, rl.is_connect,
                    l->cut && rl.target_end == WJ_H1_CARRY);
    s->seq = seq;
    atomic_store_explicit(&s->open, 1, memory_order_relaxed);
    atomic_store_explicit(&s->next, seq + 1, memory_order_release);
    if (atomic_load_explicit(&h->announced, memory_order_acquire) <= seq) {
        set_facts(h, seq, request_facts(&rl, s->detailed));
        atomic_store_explicit(&h->announced, seq + 1, memory_order_release);
    }
    reset_framing(s);
    s->phase = PH_HEADERS;
    return 1;
}

// HTTP/1.x SP 3DIGIT [SP reason]
static int start_response(const ctx *c, wj_h1_side *s, const line *l) {
    wj_h1 *h = c->h;
    const uint8_t *p = l->p;
    size_t n = l->n;
    int code = 0, ok = n >= 12 && is_http1_version(p) && p[8] == ' ';
    for (int k = 9; ok && k < 12; k++) {
        uint8_t d = (uint8_t)(p[k] - '0');
        if (d > 9) ok = 0;
        else code = code * 10 + d;
    }
    if (ok) ok = code >= 100 && (n == 12 || p[12] == ' ');
    uint32_t seq = atomic_load_explicit(&s->next, memory_order_relaxed);
    if (!ok) {
        fail(c, s, WJ_H1_ERR_PARSE, seq);
        return 0;
    }
    if (seq >= atomic_load_explicit(&h->announced, memory_order_acquire)) {  // unsolicited
        fail(c, s, WJ_H1_ERR_DESYNC, NO_EXCHANGE);
        return 0;
    }
    s->seq = seq;
    s->status = (uint16_t)code;
    s->minor = (uint8_t)(p[7] - '0');
    if (!atomic_load_explicit(&s->open, memory_order_relaxed)) {
        wj_h1_msg *m = &s->cur;
        memset(m, 0, offsetof(wj_h1_msg, method));   // method and host count by their lengths
        m->kind = WJ_H1_RESPONSE;
        m->seq = seq;
        m->t_first = s->msg_start_mono;
        if (s->detailed) m->flags |= WJ_H1_M_DETAILED;
        atomic_store_explicit(&s->open, 1, memory_order_relaxed);
    }
    reset_framing(s);
    s->phase = PH_HEADERS;
    return 1;
}

// ---------------------------------------------------------------- header fields

static inline __attribute__((always_inline)) void trim(const uint8_t *q, size_t *vs, size_t *ve) {
    size_t a = *vs, b = *ve;   // in locals: a store through a size_t * could alias q
    while (a < b && (q[a] == ' ' || q[a] == '\t')) a++;
    while (b > a && (q[b - 1] == ' ' || q[b - 1] == '\t')) b--;
    *vs = a;
    *ve = b;
}

// A field line whose name (a token) ends at name_end, before its ':'.
static int field_line(const ctx *c, wj_h1_side *s, const line *l, size_t name_end) {
    const uint8_t *q = l->p;
    size_t n = l->n;
    size_t vs = name_end + 1, ve = l->cut ? WJ_H1_CARRY : n;
    switch (name_end) {
    case 4:
        if (!s->is_request || !token_name_is(q, 4, "host")) return 1;
        if (s->cur.flags & (WJ_H1_M_HOST_TARGET | WJ_H1_M_HOST_FIELD)) return 1;
        trim(q, &vs, &ve);
        if (keep(s->cur.host, sizeof s->cur.host, &s->cur.host_len, q + vs, ve - vs) || l->cut)
            s->cur.flags |= WJ_H1_M_HOST_CUT;
        s->cur.flags |= WJ_H1_M_HOST_FIELD;
        return 1;
    case 7:
        if (s->is_request && token_name_is(q, 7, "upgrade")) s->upgrade = 1;
        return 1;
    case 14: {
        if (!token_name_is(q, 14, "content-length")) return 1;
        uint64_t len;
        trim(q, &vs, &ve);
        // A value longer than a kept line: not one C can check (a documented limit).
        if (l->cut || !content_length(q + vs, ve - vs, &len) || (s->has_cl && len != s->content_length)) {
            fail(c, s, WJ_H1_ERR_PARSE, s->seq);
            return 0;
        }
        s->has_cl = 1;
        s->content_length = len;
        return 1;
    }
    case 17:
        if (!token_name_is(q, 17, "transfer-encoding")) return 1;
        s->te = 1;
        if (!l->cut) {
            s->chunked = (uint8_t)last_coding_is_chunked(q + name_end + 1, n - name_end - 1);
        } else {
            uint8_t t[WJ_H1_TAIL];
            for (size_t k = 0; k < WJ_H1_TAIL; k++) t[k] = byte_from_end(l, WJ_H1_TAIL - 1 - k);
            size_t e = WJ_H1_TAIL;
            while (e > 0 && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
            size_t st = e >= 7 ? e - 7 : 0;
            while (st > 0 && (t[st - 1] == ' ' || t[st - 1] == '\t')) st--;
            s->chunked = (uint8_t)(e >= 7 && name_is(t + e - 7, "chunked") && st > 0 && t[st - 1] == ',');
        }
        return 1;
    default:
        return 1;
    }
}

static int header_line(const ctx *c, wj_h1_side *s, const line *l) {
    const uint8_t *q = l->p;
    size_t n = l->n, name_end;
    uint8_t after;
    if (!l->cut) {
        name_end = tchar_span(q, n, l->avail);
        after = name_end < n ? q[name_end] : 0;
    } else {
        name_end = l->nontchar_at < 0 ? n : (size_t)l->nontchar_at;
        after = l->nontchar;
    }
    if (name_end == 0 || name_end == n || after != ':') {
        fail(c, s, WJ_H1_ERR_PARSE, s->seq);
        return 0;
    }
    return field_line(c, s, l, name_end);
}

static int headers_done(const ctx *c, wj_h1_side *s, uint64_t mono) {
    wj_h1 *h = c->h;
    uint64_t header_bytes = s->pos - s->msg_start;
    s->body_start = s->pos;
    if (s->is_request) {
        s->cur.header_bytes = header_bytes;
        s->cur.flags |= WJ_H1_M_HEADERS;
        if (s->upgrade) set_facts(h, s->seq, facts_of(h, s->seq) | WJ_H1_FACT_PAUSES);
        if (s->te) {
            if (!s->chunked) {
                fail(c, s, WJ_H1_ERR_PARSE, s->seq);
                return 0;
            }
            s->phase = PH_CHUNK_SIZE;
            s->block_bytes = 0;
        } else if (s->has_cl && s->content_length > 0) {
            return enter_body(c, s);
        } else {
            end_message(c, s, s->pos, mono);
        }
        return live(h);
    }
    s->cur.header_bytes += header_bytes;
    if (s->status < 200 && s->status != 101) {  // interim
        s->cur.interim++;
        s->phase = PH_START;
        s->started = 0;
        s->block_bytes = 0;
        return 1;
    }
    s->cur.status = s->status;
    s->cur.minor = s->minor;
    s->cur.flags |= WJ_H1_M_HEADERS;
    uint32_t f = facts_of(h, s->seq);
    if (s->status == 101 || ((f & WJ_H1_FACT_CONNECT) && s->status >= 200 && s->status < 300)) {
        s->cur.flags |= WJ_H1_M_UPGRADED | WJ_H1_M_ENDED;
        s->cur.t_end = mono;
        if (atomic_exchange_explicit(&s->open, 0, memory_order_acq_rel)) emit(c, &s->cur);
        atomic_store_explicit(&s->next, s->seq + 1, memory_order_release);
        stop(c, s, WJ_H1_TUNNEL, WJ_H1_ERR_DESYNC, NO_EXCHANGE, 0);
        return 0;
    }
    if ((f & WJ_H1_FACT_HEAD) || s->status == 204 || s->status == 304) {
        end_message(c, s, s->pos, mono);
    } else if (s->te) {
        if (s->chunked) {
            s->phase = PH_CHUNK_SIZE;
            s->block_bytes = 0;
        } else {
            enter_until_close(s);
        }
    } else if (s->has_cl) {
        if (s->content_length > 0) return enter_body(c, s);
        end_message(c, s, s->pos, mono);
    } else {
        enter_until_close(s);
    }
    return live(h);
}

// ---------------------------------------------------------------- lines

static inline __attribute__((always_inline)) int handle_line(const ctx *c, wj_h1_side *s, const line *l, uint64_t mono) {
    size_t n = l->n;
    switch (s->phase) {
    case PH_START:
        if (n == 0) {
            // Empty lines between messages are tolerated, not before the first one.
            if (state_of(c->h) == WJ_H1_DETECTING) {
                fail(c, s, WJ_H1_ERR_PARSE, NO_EXCHANGE);
                return 0;
            }
            s->started = 0;
            s->detailed = 0;
            s->block_bytes = 0;
            return 1;
        }
        return s->is_request ? start_request(c, s, l) : start_response(c, s, l);
    case PH_HEADERS:
        if (n == 0) return headers_done(c, s, mono);
        return header_line(c, s, l);
    case PH_CHUNK_SIZE: {
        uint64_t size;
        int ok;
        if (!l->cut) {
            ok = chunk_size(l->p, n, &size);
        } else {  // the size and the ';' of a chunk extension must be in the kept bytes
            size_t i = 0;
            while (i < WJ_H1_CARRY && l->p[i] != ';') i++;
            ok = i < WJ_H1_CARRY && chunk_size(l->p, i, &size);
        }
        if (!ok) {
            fail(c, s, WJ_H1_ERR_PARSE, s->seq);
            return 0;
        }
        s->block_bytes = 0;
        if (size == 0) {
            s->phase = PH_TRAILERS;
            return 1;
        }
        uint64_t end = s->pos + size;
        if (end < s->pos || end == UINT64_MAX) {
            fail(c, s, WJ_H1_ERR_PARSE, s->seq);
            return 0;
        }
        s->skip_end = end;
        s->phase = PH_CHUNK_DATA;
        return 1;
    }
    case PH_CHUNK_CRLF:
        if (n != 0) {
            fail(c, s, WJ_H1_ERR_PARSE, s->seq);
            return 0;
        }
        s->block_bytes = 0;
        s->phase = PH_CHUNK_SIZE;
        return 1;
    case PH_TRAILERS:
        if (n == 0) {
            end_message(c, s, s->pos, mono);
            return live(c->h);
        }
        return 1;
    default:
        return 1;
    }
}

static void carry_reset(wj_h1_side *s) {
    s->line_len = 0;
    s->line_nontarget = 0;
    s->line_nontchar_at = -1;
    s->line_nontchar = 0;
}

static void carry_add(wj_h1_side *s, const uint8_t *q, size_t k) {
    if (s->line_len < WJ_H1_CARRY) {
        size_t room = WJ_H1_CARRY - s->line_len, t = k < room ? k : room;
        memcpy(s->line_head + s->line_len, q, t);
    }
    if (k >= WJ_H1_TAIL) {
        memcpy(s->line_tail, q + k - WJ_H1_TAIL, WJ_H1_TAIL);
    } else if (k) {
        memmove(s->line_tail, s->line_tail + k, WJ_H1_TAIL - k);
        memcpy(s->line_tail + WJ_H1_TAIL - k, q, k);
    }
    if (s->phase == PH_START && s->is_request)
        for (size_t i = 0; i < k; i++) s->line_nontarget += !is_target_char(q[i]);
    if (s->phase == PH_HEADERS && s->line_nontchar_at < 0)
        for (size_t i = 0; i < k; i++)
            if (!tchar[q[i]]) {
                s->line_nontchar_at = (int32_t)(s->line_len + i);
                s->line_nontchar = q[i];
                break;
            }
    s->line_len += (uint32_t)k;
}

// A line's view without its CR; `avail` bytes from q may be read.
static inline void line_direct(line *l, const uint8_t *q, size_t n, size_t avail) {
    if (n > 0 && q[n - 1] == '\r') n--;
    l->p = q;
    l->n = n;
    l->avail = avail;
    l->cut = 0;
}

static void line_carried(line *l, wj_h1_side *s) {
    size_t n = s->line_len;
    l->p = s->line_head;
    l->cut = n > WJ_H1_CARRY;
    l->avail = n < WJ_H1_CARRY ? n : WJ_H1_CARRY;
    l->tail = s->line_tail;
    l->nontarget = s->line_nontarget;
    l->nontchar_at = s->line_nontchar_at;
    l->nontchar = s->line_nontchar;
    int cr = n > 0 && (l->cut ? s->line_tail[WJ_H1_TAIL - 1] : s->line_head[n - 1]) == '\r';
    if (cr) {
        n--;
        if (l->cut) {
            // the tail without the CR: one byte fewer at its end
            memmove(s->line_tail + 1, s->line_tail, WJ_H1_TAIL - 1);
            l->nontarget--;
        }
    }
    l->n = n;
    if (l->cut && l->nontchar_at >= 0 && (size_t)l->nontchar_at >= n) l->nontchar_at = -1;
}

static void too_large(const ctx *c, wj_h1_side *s) {
    uint32_t current = s->phase == PH_START ? (s->is_request ? NO_EXCHANGE : atomic_load(&s->next)) : s->seq;
    fail(c, s, WJ_H1_ERR_PARSE, current);
}

// An incomplete first line: reject early what cannot become a start line.
static int plausible_start(const ctx *c, wj_h1_side *s) {
    if (s->line_head[0] == '\r' || s->line_head[0] == '\n') return 1;
    size_t n = s->line_len < 32 ? s->line_len : 32;
    if (prefix_ok(s->is_request, s->line_head, n)) return 1;
    fail(c, s, WJ_H1_ERR_PARSE, s->is_request ? NO_EXCHANGE : atomic_load(&s->next));
    return 0;
}

// A message's first byte (not an empty line's): whether its header blocks are handed over.
static void begin_message(const ctx *c, wj_h1_side *s, uint64_t mono) {
    wj_h1 *h = c->h;
    uint32_t seq = atomic_load_explicit(&s->next, memory_order_relaxed);
    s->head_seq = seq;
    s->head_given = 0;
    if (!s->is_request || atomic_load_explicit(&h->announced, memory_order_acquire) > seq) {
        s->detailed = (facts_of(h, seq) & WJ_H1_FACT_DETAILED) != 0;
        // Announced before its call: that call's start is the request's first byte.
        if (s->is_request && h->announce_seq == seq && h->announce_mono && h->announce_mono < s->msg_start_mono)
            s->msg_start_mono = h->announce_mono;
    } else {
        s->detailed = c->sink->want_detail ? c->sink->want_detail(c->sink->ctx, mono) != 0 : 1;
    }
}

// Bytes of a detailed message's header block, as they pass (at most head_cap of a block).
static inline void give_head(const ctx *c, wj_h1_side *s, uint64_t offset, const uint8_t *q, size_t k) {
    if (!s->detailed || !c->sink->head || !s->started || (s->phase != PH_START && s->phase != PH_HEADERS)) return;
    uint64_t room = c->sink->head_cap > s->head_given ? c->sink->head_cap - s->head_given : 0;
    if (k > room) k = (size_t)room;
    if (!k) return;
    c->sink->head(c->sink->ctx, s->is_request, s->head_seq, offset, q, k);
    s->head_given += k;
}

// ---------------------------------------------------------------- header blocks of a known shape

static int framing_field(const uint8_t *q, size_t name_end) {
    switch (name_end) {
    case 4: return token_name_is(q, 4, "host");
    case 7: return token_name_is(q, 7, "upgrade");
    case 14: return token_name_is(q, 14, "content-length");
    case 17: return token_name_is(q, 17, "transfer-encoding");
    default: return 0;
    }
}

// Keeps the shape of field lines [q, q + len) that were just framed whole (wj_h1_shape).
static void shape_keep(wj_h1_shape *sh, const uint8_t *q, size_t len) {
    sh->len = 0;
    sh->misses = 0;
    if (!len || len > WJ_H1_SHAPE_MAX) return;
    size_t at = 0, last = 0;
    unsigned nf = 0;
    while (at < len) {
        const uint8_t *lf = memchr(q + at, '\n', len - at);
        if (!lf) return;
        size_t n = (size_t)(lf - (q + at));
        const uint8_t *colon = memchr(q + at, ':', n);
        if (!colon) return;
        size_t name_end = (size_t)(colon - (q + at));
        memset(sh->must + at, 0xff, name_end + 1);
        memset(sh->must + at + name_end + 1, 0, n - name_end - 1);
        sh->must[at + n] = 0xff;
        if (framing_field(q + at, name_end)) {
            if (nf == WJ_H1_SHAPE_FIELDS) return;
            sh->field[nf].at = (uint16_t)at;
            sh->field[nf].n = (uint16_t)n;
            sh->field[nf].name_end = (uint16_t)name_end;
            nf++;
        }
        last = at;
        at += n + 1;
    }
    memset(sh->must + len, 0, WJ_H1_SHAPE_MAX - len);
    memcpy(sh->bytes, q, len);
    sh->nfields = (uint8_t)nf;
    sh->last_at = (uint16_t)last;
    sh->len = (uint16_t)len;
}

// Whether the `len` bytes at q have the kept shape: a chunk at a time, the kept bytes where
// they must be equal, no LF where they may differ. Whole chunks first, then the last one
// ending at len (overlapping the one before: no byte past the block is read).
#if defined(__SSE2__)
static inline __m128i shape_diff16(const wj_h1_shape *sh, const uint8_t *q, size_t k, __m128i lf) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + k));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(sh->bytes + k));
    __m128i m = _mm_loadu_si128((const __m128i *)(const void *)(sh->must + k));
    return _mm_or_si128(_mm_and_si128(_mm_xor_si128(v, b), m), _mm_andnot_si128(m, _mm_cmpeq_epi8(v, lf)));
}
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
// 32 bytes at a time where the CPU has AVX2 (half the instructions of a header block's compare).
__attribute__((target("avx2"))) static int shape_matches_avx2(const wj_h1_shape *sh, const uint8_t *q, size_t len) {
    __m256i acc = _mm256_setzero_si256(), lf = _mm256_set1_epi8('\n');
    size_t k = 0;
    for (; k + 32 <= len; k += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(q + k));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(sh->bytes + k));
        __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(sh->must + k));
        acc = _mm256_or_si256(acc, _mm256_or_si256(_mm256_and_si256(_mm256_xor_si256(v, b), m),
                                                   _mm256_andnot_si256(m, _mm256_cmpeq_epi8(v, lf))));
    }
    if (k < len) {
        k = len - 32;
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(q + k));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(sh->bytes + k));
        __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(sh->must + k));
        acc = _mm256_or_si256(acc, _mm256_or_si256(_mm256_and_si256(_mm256_xor_si256(v, b), m),
                                                   _mm256_andnot_si256(m, _mm256_cmpeq_epi8(v, lf))));
    }
    return _mm256_testz_si256(acc, acc);
}
// Whether AVX2 can be used: the CPU has it and the kernel saves the YMM registers. Asked at
// the first shape compare, not at load (`__builtin_cpu_supports` links libgcc's detection,
// a constructor whose CPUIDs every process paid at start: +0.1 ms in this VM).
static int have_avx2(void) {
    static int known;   // 0 not asked yet, 1 no, 2 yes (a race asks twice, with the same answer)
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (__builtin_expect(!k, 0)) {
        unsigned a, b, c, d, yes = 0;
        if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            if ((lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) yes = (b & bit_AVX2) != 0;
        }
        k = yes ? 2 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 2;
}
#define WJ_SHAPE_AVX2 1
#endif

static int shape_matches(const wj_h1_shape *sh, const uint8_t *q, size_t len) {
#if defined(WJ_SHAPE_AVX2)
    if (len >= 32 && have_avx2()) return shape_matches_avx2(sh, q, len);
#endif
#if defined(__SSE2__)
    __m128i acc = _mm_setzero_si128(), lf = _mm_set1_epi8('\n');
    uint8_t tmp[16];
    if (len < 16) {   // one chunk, through a copy (the kept bytes past len are 0 in `must`)
        memset(tmp, 0, sizeof tmp);
        memcpy(tmp, q, len);
        return _mm_movemask_epi8(_mm_cmpeq_epi8(shape_diff16(sh, tmp, 0, lf), _mm_setzero_si128())) == 0xffff;
    }
    size_t k = 0;
    for (; k + 16 <= len; k += 16) acc = _mm_or_si128(acc, shape_diff16(sh, q, k, lf));
    if (k < len) acc = _mm_or_si128(acc, shape_diff16(sh, q, len - 16, lf));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) == 0xffff;
#else
    for (size_t k = 0; k < len; k++)
        if (sh->must[k] ? q[k] != sh->bytes[k] : q[k] == '\n') return 0;
    return 1;
#endif
}

// At the first field line of a block, all of it in this call: if its field lines have the
// kept shape, they are taken at once (the framing fields read as usual). 1 taken (*ip moved
// past them), 0 not (read line by line), -1 a framing field stopped the stream.
static int shape_take(const ctx *c, wj_h1_side *s, const uint8_t *p, size_t count, uint64_t offset, size_t *ip) {
    wj_h1_shape *sh = &s->shape;
    size_t i = *ip, len = sh->len;
    if (!len || count - i < len || (uint64_t)s->block_bytes + len > WJ_H1_MAX_HEADER) return 0;
    if (!shape_matches(sh, p + i, len)) {
        if (sh->misses < 255) sh->misses++;
        return 0;
    }
    sh->misses = 0;
    give_head(c, s, offset + i, p + i, len);   // a detailed message's block, all its field lines at once
    uint32_t base = s->block_bytes;
    for (unsigned k = 0; k < sh->nfields; k++) {
        size_t at = sh->field[k].at, n = sh->field[k].n;
        s->line_at = offset + i + at;
        s->block_bytes = base + (uint32_t)(at + n + 1);
        s->pos = offset + i + at + n + 1;
        line l;
        line_direct(&l, p + i + at, n, count - i - at);
        if (!field_line(c, s, &l, sh->field[k].name_end)) return -1;
    }
    s->line_at = offset + i + sh->last_at;
    s->block_bytes = base + (uint32_t)len;
    s->pos = offset + i + len;
    *ip = i + len;
    return 1;
}

// After a block framed line by line (ending with the empty line at `end`): its shape is kept
// when its field lines were all in this call; after misses, only now and then (a stream whose
// blocks never repeat a shape pays for keeping one rarely).
static void shape_after_block(wj_h1_side *s, const uint8_t *p, uint64_t offset, uint64_t end) {
    wj_h1_shape *sh = &s->shape;
    if (s->fields_at < offset || end <= s->fields_at) return;
    if (sh->len && sh->misses > 2 && (sh->misses & 15) != 0) return;
    shape_keep(sh, p + (s->fields_at - offset), (size_t)(end - s->fields_at));
}

// Line phases: consume lines from pos until a skip phase is entered (1, pos at its start) or
// the bytes end (1, the partial line kept) or parsing stops (0).
// The common case, quickly: whole field lines of a header block, none carried, whose name
// none of the framing rules looks at. They only need their end found and their name checked
// (16 bytes at a time). Anything else (an interesting name, the empty line, a line that
// continues in the next call, a malformed one, the block's size limit) is left, at its start,
// to the general loop.
static size_t skip_plain_fields(const ctx *c, wj_h1_side *s, const uint8_t *p, size_t count, uint64_t offset, size_t i) {
    while (i < count) {
        const uint8_t *q = p + i;
        size_t rest = count - i;
        if (q[0] == '\r' || q[0] == '\n') break;   // the empty line (or a malformed one): the general loop's
        line_scan ls = scan_field_line(q, rest);
        if (ls.lf == SIZE_MAX) break;
        size_t n = ls.lf, total = n + 1;
        size_t ln = n && q[n - 1] == '\r' ? n - 1 : n;
        if (ln == 0 || (uint64_t)s->block_bytes + total > WJ_H1_MAX_HEADER) break;
        size_t name_end = ls.colon;
        if (name_end == SIZE_MAX || name_end == 0 || name_end >= ln) break;
        if (ls.odd_name && tchar_span(q, ln, rest) != name_end) break;   // not a token: the general loop says so
        switch (name_end) {
        case 4: case 7: case 14: case 17: {   // host, upgrade, content-length, transfer-encoding
            // Handled here as the general loop would, without finding the line again.
            s->line_at = offset + i;
            s->block_bytes += (uint32_t)total;
            s->pos = offset + i + total;
            give_head(c, s, offset + i, q, total);
            line l;
            line_direct(&l, q, n, rest);
            if (!field_line(c, s, &l, name_end)) return SIZE_MAX;
            i += total;
            continue;
        }
        default: break;
        }
        s->block_bytes += (uint32_t)total;
        s->line_at = offset + i;
        s->pos = offset + i + total;
        give_head(c, s, offset + i, q, total);
        i += total;
    }
    return i;
}

static int consume_lines(const ctx *c, wj_h1_side *s, const uint8_t *p, size_t count, uint64_t offset, uint64_t mono) {
    size_t i = (size_t)(s->pos - offset);
    while (i < count) {
        if (s->phase == PH_HEADERS && s->line_len == 0) {
            if (s->pos == s->fields_at) {
                int took = shape_take(c, s, p, count, offset, &i);
                if (took < 0) return 0;
                if (took) {
                    s->fields_at = UINT64_MAX;   // not kept again: it is the kept one
                    // The usual next line, the block's empty one: ended here as the line loop
                    // below would.
                    if (count - i >= 2 && p[i] == '\r' && p[i + 1] == '\n' &&
                        (uint64_t)s->block_bytes + 2 <= WJ_H1_MAX_HEADER) {
                        s->line_at = offset + i;
                        s->block_bytes += 2;
                        s->pos = offset + i + 2;
                        give_head(c, s, offset + i, p + i, 2);
                        i += 2;
                        if (!headers_done(c, s, mono)) return 0;
                        if (s->phase > PH_TRAILERS) return 1;
                        continue;
                    }
                }
            }
            i = skip_plain_fields(c, s, p, count, offset, i);
            if (i == SIZE_MAX) return 0;   // a field line stopped the stream
            if (i >= count) break;
        }
        const uint8_t *q = p + i;
        size_t rest = count - i;
        if (!s->started && s->phase == PH_START) {
            s->started = 1;
            s->msg_start = s->pos;
            s->msg_start_mono = mono;
        }
        if (s->phase == PH_START && s->line_len == 0 && q[0] != '\r' && q[0] != '\n') {
            if (WJ_H1_UNLIKELY_DETECTING(c->h)) classify(c->h, q, rest);
            // Cheap early rejection (non-HTTP traffic) before looking for the line's end.
            size_t m = rest < 32 ? rest : 32;
            if (!prefix_ok(s->is_request, q, m)) {
                fail(c, s, WJ_H1_ERR_PARSE, s->is_request ? NO_EXCHANGE : atomic_load(&s->next));
                return 0;
            }
            begin_message(c, s, mono);
        }
        const uint8_t *nl = q[0] == '\r' && rest > 1 && q[1] == '\n' ? q + 1 : memchr(q, '\n', rest);
        if (!nl) {
            if ((uint64_t)s->block_bytes + s->line_len + rest > WJ_H1_MAX_HEADER) {
                too_large(c, s);
                return 0;
            }
            uint32_t before = s->line_len;
            give_head(c, s, offset + i, q, rest);
            carry_add(s, q, rest);
            s->pos = offset + count;
            if (s->phase == PH_START && before > 0 && before < 32 && !plausible_start(c, s)) return 0;
            return 1;
        }
        size_t n = (size_t)(nl - q);
        uint64_t total = (uint64_t)s->line_len + n + 1;
        s->line_at = s->line_len ? s->pos - s->line_len : offset + i;
        if ((uint64_t)s->block_bytes + total > WJ_H1_MAX_HEADER) {
            too_large(c, s);
            return 0;
        }
        s->block_bytes += (uint32_t)total;
        s->pos = offset + i + n + 1;
        give_head(c, s, offset + i, q, n + 1);
        i += n + 1;
        line l;
        uint8_t phase = s->phase, carried = s->line_len != 0;
        if (!carried) {
            line_direct(&l, q, n, rest);
            if (phase == PH_HEADERS && l.n == 0) shape_after_block(s, p, offset, offset + (size_t)(q - p));
        } else {
            carry_add(s, q, n);
            line_carried(&l, s);
        }
        int ok = handle_line(c, s, &l, mono);   // one call site: inlined
        if (carried) {
            carry_reset(s);
        } else if (phase == PH_START && s->phase == PH_HEADERS) {
            s->fields_at = s->pos;
        }
        if (!ok) return 0;
        if (s->phase > PH_TRAILERS) return 1;
    }
    return 1;
}

// HTTP1Dir.feed
static inline __attribute__((always_inline)) void side_feed(const ctx *c, wj_h1_side *s, uint64_t offset, const uint8_t *p, size_t count, uint64_t io_end_in,
                      uint64_t mono) {
    wj_h1 *h = c->h;
    uint64_t cap_end = offset + count;
    if (cap_end < offset) {
        fail(c, s, WJ_H1_ERR_DESYNC, s->seq);
        return;
    }
    uint64_t io_end = io_end_in > cap_end ? io_end_in : cap_end;
    s->seg_io_end = io_end;
    s->line_at = UINT64_MAX;
    while (live(h)) {
        switch (s->phase) {
        case PH_BODY:
        case PH_CHUNK_DATA:
            if (io_end < s->skip_end) return;
            s->pos = s->skip_end;
            if (s->phase == PH_BODY) {
                end_message(c, s, s->skip_end, mono);
            } else {
                s->phase = PH_CHUNK_CRLF;
                s->block_bytes = 0;
            }
            break;
        case PH_UNTIL_CLOSE:
            if (io_end > s->close_max_io_end) {
                s->close_max_io_end = io_end;
                s->close_last_mono = mono;
                s->close_seen = 1;
            }
            return;
        case PH_PAUSED:
            if (atomic_exchange_explicit(&h->resume, 0, memory_order_acq_rel)) {
                if (s->lost || offset > s->pos) {
                    stop(c, s, WJ_H1_DESYNCED, WJ_H1_ERR_DESYNC, NO_EXCHANGE, WJ_H1_M_PAUSE_LOST);
                    return;
                }
                s->phase = PH_START;
                s->started = 0;
                s->block_bytes = 0;
                break;
            }
            if (io_end > s->pos) s->lost = 1;  // the Swift parser would replay these
            return;
        default:
            if (s->pos >= cap_end) {
                // Nothing seen at or after pos; if the call moved bytes there, they are lost.
                if (io_end > s->pos) fail(c, s, WJ_H1_ERR_DESYNC, s->seq);
                return;
            }
            if (offset > s->pos) {
                fail(c, s, WJ_H1_ERR_DESYNC, s->seq);
                return;
            }
            if (!p) return;
            if (!consume_lines(c, s, p, count, offset, mono)) return;
        }
    }
}

static inline int is_request_side(const wj_h1 *h, int out) { return (out != 0) == (h->client != 0); }

void wj_h1_feed(wj_h1 *h, const wj_h1_sink *sink, int out, uint64_t offset, const uint8_t *p, size_t n,
                uint64_t io_end, uint64_t mono) {
    ctx c = {h, sink};
    wj_h1_side *s = is_request_side(h, out) ? &h->req : &h->resp;
    // busy, then the state (both sequentially consistent): a stop on the other side either
    // sees this side busy, or this side sees the stop.
    atomic_store(&s->busy, 1);
    if (atomic_load(&h->state) <= WJ_H1_HTTP) {
        if (!s->is_request && state_of(h) == WJ_H1_DETECTING) {
            // Bytes towards the client before any request: a server-speaks-first protocol.
            if (p && n) classify(h, p, n);
            if (n > 0 || io_end > 0) stop(&c, s, WJ_H1_NOT_HTTP, WJ_H1_ERR_NONE, NO_EXCHANGE, 0);
        } else {
            side_feed(&c, s, offset, p, n, io_end, mono);   // inlined: its only caller
        }
    }
    atomic_store(&s->busy, 0);
    if (!live(h) && atomic_load_explicit(&s->open, memory_order_relaxed)) hand_over_open(&c, s);
}

void wj_h1_announce(wj_h1 *h, const wj_h1_sink *sink, uint64_t offset, const uint8_t *p, size_t n, uint64_t mono) {
    wj_h1_side *s = &h->req;
    if (!live(h) || !h->client || offset != s->pos || !p || !n) return;
    // After CONNECT or Upgrade answered without a tunnel (Java's HttpClient asks for h2c on
    // every request): the request side resumes here, on its own thread, so that this request
    // is announced before its answer can come.
    if (s->phase == PH_PAUSED && !s->lost && atomic_exchange_explicit(&h->resume, 0, memory_order_acq_rel)) {
        s->phase = PH_START;
        s->started = 0;
        s->block_bytes = 0;
    }
    if (s->phase != PH_START) return;
    uint32_t seq = atomic_load_explicit(&s->next, memory_order_relaxed);
    if (atomic_load_explicit(&h->announced, memory_order_acquire) > seq || s->line_len > WJ_H1_CARRY) return;
    uint8_t buf[WJ_H1_CARRY + 512];
    const uint8_t *q = p;
    size_t k = n;
    if (s->line_len) {
        // The line began in an earlier call: what it held, then these bytes.
        size_t more = n < sizeof buf - s->line_len ? n : sizeof buf - s->line_len;
        memcpy(buf, s->line_head, s->line_len);
        memcpy(buf + s->line_len, p, more);
        q = buf;
        k = s->line_len + more;
    } else if (state_of(h) != WJ_H1_DETECTING) {
        while (k && (q[0] == '\r' || q[0] == '\n')) {  // empty lines between messages
            q++;
            k--;
        }
    }
    const uint8_t *nl = k ? memchr(q, '\n', k) : 0;
    if (!nl) return;
    line l;
    line_direct(&l, q, (size_t)(nl - q), k);
    request_line rl;
    if (!parse_request_line(&l, &rl)) return;
    int detailed;
    if (s->started && s->line_len) detailed = s->detailed;
    else detailed = sink->want_detail ? sink->want_detail(sink->ctx, mono) != 0 : 1;
    set_facts(h, seq, request_facts(&rl, detailed));
    h->announce_seq = seq;
    h->announce_mono = mono;
    atomic_store_explicit(&h->announced, seq + 1, memory_order_release);
    if (state_of(h) == WJ_H1_DETECTING) atomic_store_explicit(&h->state, WJ_H1_HTTP, memory_order_release);
}

void wj_h1_finish(wj_h1 *h, const wj_h1_sink *sink, uint64_t mono, int error) {
    ctx c = {h, sink};
    if (!live(h)) {
        hand_over_stashed(&c);
        hand_over_open(&c, &h->req);
        hand_over_open(&c, &h->resp);
        return;
    }
    wj_h1_side *r = &h->resp;
    if (r->phase == PH_UNTIL_CLOSE) end_message(&c, r, r->close_max_io_end, r->close_seen ? r->close_last_mono : mono);
    if (state_of(h) == WJ_H1_DETECTING) stop(&c, &h->req, WJ_H1_NOT_HTTP, WJ_H1_ERR_NONE, NO_EXCHANGE, WJ_H1_M_FINISH);
    else stop(&c, &h->req, WJ_H1_CLOSED, (uint8_t)error, NO_EXCHANGE, WJ_H1_M_FINISH);
}

// ---------------------------------------------------------------- the record budget

int wj_budget_take(wj_budget *b, int64_t per_second, uint64_t mono) {
    if (per_second <= 0) return 0;
    int64_t burst = per_second * 10 * 1000;
    uint64_t now_ms = mono / 1000000 + 1;   // never 0: 0 is "not started"
    uint64_t last = atomic_load_explicit(&b->last_ms, memory_order_relaxed);
    if (now_ms > last && atomic_compare_exchange_strong(&b->last_ms, &last, now_ms)) {
        // The first take fills the bucket; later ones add what the elapsed milliseconds earned.
        int64_t add = last ? (int64_t)(now_ms - last) * per_second : burst;
        int64_t after = atomic_fetch_add(&b->milli, add) + add;
        if (after > burst) atomic_fetch_sub(&b->milli, after - burst);
    }
    if (atomic_fetch_sub(&b->milli, 1000) >= 1000) return 1;
    atomic_fetch_add(&b->milli, 1000);
    return 0;
}
