#include "wedjat_json.h"
#include "wedjat_common.h"
#include <stdio.h>
#include <string.h>
#include <strings.h>

void wj_json_init(wj_json *j, char *buf, size_t cap) {
    j->buf = buf;
    j->cap = cap;
    j->len = 0;
    j->comma = 0;
    j->overflow = 0;
    if (cap) buf[0] = 0;
}

// Once a piece did not fit, nothing more is written: a line with a hole in it is never made
// (callers drop an overflowed line).
static void put(wj_json *j, const char *s, size_t n) {
    if (j->overflow || j->len + n + 1 > j->cap) { j->overflow = 1; return; }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}

static void putc_(wj_json *j, char c) { put(j, &c, 1); }

static void sep(wj_json *j) {
    if (j->comma) putc_(j, ',');
    j->comma = 0;
}

// Bytes that stand for themselves are copied a run at a time (byte by byte, a key cost about
// 300 instructions: a process's first records have a hundred of them).
static void quoted(wj_json *j, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    putc_(j, '"');
    size_t run = 0;   // the first byte not yet copied
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
        if (c >= 0x80) {
            // Valid UTF-8 sequences stay in the run; an invalid byte is replaced, so the line
            // stays valid JSON.
            size_t len = (c >= 0xf0 && c <= 0xf4) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c <= 0xdf) ? 2 : 0;
            int ok = len && i + len <= n;
            for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
            if (ok) { i += len - 1; continue; }
            put(j, s + run, i - run);
            put(j, "\\ufffd", 6);
        } else {
            put(j, s + run, i - run);
            if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; put(j, e, 2); }
            else if (c == '\n') put(j, "\\n", 2);
            else if (c == '\r') put(j, "\\r", 2);
            else if (c == '\t') put(j, "\\t", 2);
            else {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                put(j, u, 6);
            }
        }
        run = i + 1;
    }
    put(j, s + run, n - run);
    putc_(j, '"');
}

void wj_json_key(wj_json *j, const char *key) {
    sep(j);
    if (!key) return;
    // A field name of wedjat's (wedjat_json.h): nothing to escape, `"key":` in one piece.
    size_t n = strlen(key);
    if (j->overflow || j->len + n + 4 > j->cap) { j->overflow = 1; return; }
    char *o = j->buf + j->len;
    o[0] = '"';
    memcpy(o + 1, key, n);
    o[n + 1] = '"';
    o[n + 2] = ':';
    o[n + 3] = 0;
    j->len += n + 3;
}

void wj_json_begin(wj_json *j) { sep(j); putc_(j, '{'); }
void wj_json_end(wj_json *j) { putc_(j, '}'); j->comma = 1; }
void wj_json_begin_array(wj_json *j, const char *key) { wj_json_key(j, key); putc_(j, '['); }
void wj_json_end_array(wj_json *j) { putc_(j, ']'); j->comma = 1; }
void wj_json_begin_object(wj_json *j, const char *key) { wj_json_key(j, key); putc_(j, '{'); }

void wj_json_strn(wj_json *j, const char *key, const char *value, size_t n) {
    wj_json_key(j, key);
    if (value) quoted(j, value, n); else put(j, "null", 4);
    j->comma = 1;
}

void wj_json_str(wj_json *j, const char *key, const char *value) {
    wj_json_strn(j, key, value, value ? strlen(value) : 0);
}

size_t wj_fmt_u64(char *out, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
    return n;
}

size_t wj_fmt_i64(char *out, int64_t v) {
    if (v >= 0) return wj_fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + wj_fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
}

uint64_t wj_parse_u64(const char *s, const char **end) {
    while (*s == ' ' || *s == '\t') s++;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    if (end) *end = s;
    return v;
}

size_t wj_strnlen(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n]) n++;
    return n;
}

const char *wj_strrchr(const char *s, int c) {
    const char *last = 0;
    for (;; s++) {
        if (*s == (char)c) last = s;
        if (!*s) return last;
    }
}

const char *wj_strchr(const char *s, int c) {
    for (;; s++) {
        if (*s == (char)c) return s;
        if (!*s) return 0;
    }
}

int wj_starts_with(const char *s, const char *prefix, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != prefix[i]) return 0;
        if (!s[i]) return 1;
    }
    return 1;
}

size_t wj_copy_str(char *dst, size_t cap, const char *src) {
    if (!cap) return 0;
    size_t n = wj_strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
    return n;
}

void wj_json_int(wj_json *j, const char *key, int64_t value) {
    char num[24];
    size_t n = wj_fmt_i64(num, value);
    wj_json_key(j, key);
    put(j, num, n);
    j->comma = 1;
}

void wj_json_uint(wj_json *j, const char *key, uint64_t value) {
    char num[24];
    size_t n = wj_fmt_u64(num, value);
    wj_json_key(j, key);
    put(j, num, n);
    j->comma = 1;
}

void wj_json_bool(wj_json *j, const char *key, int value) {
    wj_json_key(j, key);
    if (value) put(j, "true", 4); else put(j, "false", 5);
    j->comma = 1;
}

void wj_json_null(wj_json *j, const char *key) {
    wj_json_key(j, key);
    put(j, "null", 4);
    j->comma = 1;
}

void wj_json_raw(wj_json *j, const char *raw) {
    put(j, raw, strlen(raw));
    j->comma = 1;
}

void wj_json_members(wj_json *j, const char *members, size_t n) {
    sep(j);
    put(j, members, n);
    j->comma = 1;
}

void wj_json_newline(wj_json *j) {
    putc_(j, '\n');
    j->comma = 0;
}

