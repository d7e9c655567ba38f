#include "wedjat_json.h"
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

static void put(wj_json *j, const char *s, size_t n) {
    if (j->len + n + 1 > j->cap) { j->overflow = 1; return; }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}

static void putc_(wj_json *j, char c) { put(j, &c, 1); }

static void sep(wj_json *j) {
    if (j->comma) putc_(j, ',');
    j->comma = 0;
}

static void quoted(wj_json *j, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    putc_(j, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { putc_(j, '\\'); putc_(j, (char)c); }
        else if (c == '\n') put(j, "\\n", 2);
        else if (c == '\r') put(j, "\\r", 2);
        else if (c == '\t') put(j, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(j, u, 6);
        } else if (c >= 0x80) {
            // Keep valid UTF-8 sequences, replace invalid bytes so the line stays valid JSON.
            size_t len = (c >= 0xf0 && c <= 0xf4) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c <= 0xdf) ? 2 : 0;
            int ok = len && i + len <= n;
            for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
            if (ok) { put(j, s + i, len); i += len - 1; }
            else put(j, "\\ufffd", 6);
        } else putc_(j, (char)c);
    }
    putc_(j, '"');
}

void wj_json_key(wj_json *j, const char *key) {
    sep(j);
    if (key) {
        quoted(j, key, strlen(key));
        putc_(j, ':');
    }
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

void wj_json_int(wj_json *j, const char *key, int64_t value) {
    char num[24];
    int n = snprintf(num, sizeof num, "%lld", (long long)value);
    wj_json_key(j, key);
    put(j, num, (size_t)n);
    j->comma = 1;
}

void wj_json_uint(wj_json *j, const char *key, uint64_t value) {
    char num[24];
    int n = snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    wj_json_key(j, key);
    put(j, num, (size_t)n);
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

void wj_json_newline(wj_json *j) {
    putc_(j, '\n');
    j->comma = 0;
}

// ---------------------------------------------------------------- argv redaction

static const char *const secret_options[] = {
    "-u", "--user", "-U", "--proxy-user", "-p", "--password", "--pass", "--passwd", "--token",
    "--oauth2-bearer", "-b", "--cookie", "--api-key", "--apikey", "--secret", "--auth", 0};
static const char *const header_options[] = {"-H", "--header", "--proxy-header", 0};
static const char *const safe_headers[] = {"host", "user-agent", "content-type", "content-length", "accept", 0};
static const char *const secret_words[] = {"pass", "secret", "token", "auth", "cred", "cookie", "key", "session", "signature", 0};
static const char mask[] = "***";

static int in_list(const char *s, size_t n, const char *const *list, int nocase) {
    for (; *list; list++)
        if (strlen(*list) == n && (nocase ? strncasecmp(*list, s, n) : strncmp(*list, s, n)) == 0) return 1;
    return 0;
}

static int has_secret_word(const char *s, size_t n) {
    for (const char *const *w = secret_words; *w; w++) {
        size_t wl = strlen(*w);
        for (size_t i = 0; i + wl <= n; i++)
            if (strncasecmp(s + i, *w, wl) == 0) return 1;
    }
    return 0;
}

typedef struct { char *out; size_t cap; size_t len; } wj_sb;
static void sb_put(wj_sb *b, const char *s, size_t n) {
    for (size_t i = 0; i < n && b->len + 1 < b->cap; i++) b->out[b->len++] = s[i];
    b->out[b->len] = 0;
}
static void sb_str(wj_sb *b, const char *s) { sb_put(b, s, strlen(s)); }

// "Name: value" keeps its value only for allowlisted header names.
static void redact_header(wj_sb *b, const char *arg) {
    const char *colon = strchr(arg, ':');
    if (!colon) { sb_str(b, mask); return; }
    size_t n = (size_t)(colon - arg);
    if (in_list(arg, n, safe_headers, 1)) { sb_str(b, arg); return; }
    sb_put(b, arg, n);
    sb_str(b, ": ");
    sb_str(b, mask);
}

// scheme://user:pass@host/path?query#fragment -> scheme://***@host/path?***#***
static void redact_url(wj_sb *b, const char *arg, const char *scheme_end) {
    const char *auth = scheme_end + 3;
    sb_put(b, arg, (size_t)(auth - arg));
    const char *auth_end = auth + strcspn(auth, "/?#");
    const char *at = 0;
    for (const char *p = auth; p < auth_end; p++) if (*p == '@') at = p;
    if (at) { sb_str(b, mask); sb_put(b, at, (size_t)(auth_end - at)); }
    else sb_put(b, auth, (size_t)(auth_end - auth));
    const char *frag = strchr(auth_end, '#');
    const char *stop = frag ? frag : auth_end + strlen(auth_end);
    const char *q = memchr(auth_end, '?', (size_t)(stop - auth_end));
    if (q) { sb_put(b, auth_end, (size_t)(q - auth_end) + 1); sb_str(b, mask); }
    else sb_put(b, auth_end, (size_t)(stop - auth_end));
    if (frag) { sb_str(b, "#"); sb_str(b, mask); }
}

// "Authorization: Bearer x", "X-Api-Key: x" given as a plain argument (a script's own -H).
static int secret_header_arg(const char *arg) {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || colon[1] != ' ') return 0;
    for (const char *p = arg; p < colon; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return 0;
    return has_secret_word(arg, (size_t)(colon - arg));
}

void wj_redact_arg(const char *previous, const char *arg, char *out, size_t cap) {
    wj_sb b = {out, cap, 0};
    if (cap) out[0] = 0;
    if (previous && in_list(previous, strlen(previous), secret_options, 0)) { sb_str(&b, mask); return; }
    if (previous && in_list(previous, strlen(previous), header_options, 0)) { redact_header(&b, arg); return; }
    // Values glued to a short option: -uuser:pw, -HAuthorization: ..., -psecret.
    if (arg[0] == '-' && arg[1] && arg[1] != '-' && arg[2]) {
        if (in_list(arg, 2, secret_options, 0)) { sb_put(&b, arg, 2); sb_str(&b, mask); return; }
        if (in_list(arg, 2, header_options, 0)) { sb_put(&b, arg, 2); redact_header(&b, arg + 2); return; }
    }
    const char *scheme_end = strstr(arg, "://");
    if (scheme_end) { redact_url(&b, arg, scheme_end); return; }
    if (secret_header_arg(arg)) { redact_header(&b, arg); return; }
    const char *eq = strchr(arg, '=');
    if (eq) {
        size_t n = (size_t)(eq - arg);
        if (in_list(arg, n, header_options, 0)) { sb_put(&b, arg, n + 1); redact_header(&b, eq + 1); return; }
        if (in_list(arg, n, secret_options, 0) || has_secret_word(arg, n)) { sb_put(&b, arg, n + 1); sb_str(&b, mask); return; }
    }
    // A bearer or basic credential anywhere in the argument.
    const char *cred = strstr(arg, "Bearer ");
    if (!cred) cred = strstr(arg, "Basic ");
    if (cred) { sb_put(&b, arg, (size_t)(strchr(cred, ' ') - arg) + 1); sb_str(&b, mask); return; }
    sb_str(&b, arg);
}
