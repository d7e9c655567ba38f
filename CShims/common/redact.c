// argv redaction (WEDJAT_ARGV=redact). Generic, not a list of known tools: a value is hidden
// when the name it is given under looks secret, in any of the forms command lines use:
//   --db-password VALUE     --client-secret=VALUE    -Djavax.net.ssl.keyStorePassword=VALUE
//   MYSQL_PWD=VALUE         auth.token=VALUE         user=a&password=VALUE     {"api_key":"VALUE"}
//   -p VALUE, -pVALUE, -u user:pw (the short options of curl, mysql, sshpass...)
//   scheme://user:pw@host/path?query#fragment     Authorization: Bearer VALUE
// A name looks secret when one of its words (split at - _ . and camelCase) is or contains a
// secret word. Over-redaction (a --password-file path) is preferred to a leak.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_json.h"
#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char mask[] = "***";

// Options whose value is a secret in common tools though their name does not say so: curl's
// -u/--user/-U/--proxy-user (user:password) and -b (cookies), mysql's and sshpass's -p.
static const char *const secret_short[] = {"-u", "-U", "-p", "-b", "--user", "--proxy-user", 0};
static const char *const header_options[] = {"-H", "--header", "--proxy-header", 0};
static const char *const safe_headers[] = {"host", "user-agent", "content-type", "content-length", "accept", 0};
// Words that make a name secret when a word of it contains them...
static const char *const secret_parts[] = {"pass", "secret", "token", "credential", "cookie", "session", "signature",
                                           "bearer", "apikey", "privatekey", "authorization", "jwt", 0};
// ...or is exactly one of them (short words that other words contain: author, keyboard, pin).
static const char *const secret_words[] = {"pw", "pwd", "key", "auth", "sig", "otp", "pin", "salt", "dsn", "cred",
                                           "creds", "private", "sas", "psk", 0};

static int in_list(const char *s, size_t n, const char *const *list, int nocase) {
    for (; *list; list++)
        if (strlen(*list) == n && (nocase ? strncasecmp(*list, s, n) : strncmp(*list, s, n)) == 0) return 1;
    return 0;
}

static int contains_nocase(const char *s, size_t n, const char *part) {
    size_t pl = strlen(part);
    for (size_t i = 0; i + pl <= n; i++)
        if (strncasecmp(s + i, part, pl) == 0) return 1;
    return 0;
}

static int word_is_secret(const char *w, size_t n) {
    if (!n) return 0;
    if (in_list(w, n, secret_words, 1)) return 1;
    for (const char *const *p = secret_parts; *p; p++)
        if (contains_nocase(w, n, *p)) return 1;
    return 0;
}

// The name's words: split at anything but letters and digits, and at a lower-to-upper case
// change (keyStorePassword: key, Store, Password).
static int name_is_secret(const char *s, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        int end = i == n || !isalnum((unsigned char)s[i]);
        int camel = !end && i > start && islower((unsigned char)s[i - 1]) && isupper((unsigned char)s[i]);
        if (end || camel) {
            if (word_is_secret(s + start, i - start)) return 1;
            start = end ? i + 1 : i;
        }
    }
    return 0;
}

typedef struct { char *out; size_t cap; size_t len; } wj_sb;
static void sb_put(wj_sb *b, const char *s, size_t n) {
    for (size_t i = 0; i < n && b->len + 1 < b->cap; i++) b->out[b->len++] = s[i];
    if (b->cap) b->out[b->len] = 0;
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

static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.'; }

// "X-Api-Key: x" given as a plain argument (a script's own -H).
static int secret_header_arg(const char *arg) {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || colon[1] != ' ') return 0;
    for (const char *p = arg; p < colon; p++)
        if (!is_name_char(*p)) return 0;
    return name_is_secret(arg, (size_t)(colon - arg));
}

// name=value pairs anywhere in the argument (a=1&password=x, a=1;token=x, k=v,k2=v2, and a
// whole NAME=value): each secret name's value is hidden up to the next separator.
static int redact_pairs(wj_sb *b, const char *arg) {
    int hid = 0;
    const char *p = arg;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq) break;
        // the name: the name characters just before '='
        const char *name = eq;
        while (name > p && is_name_char(name[-1])) name--;
        const char *value_end = eq + 1 + strcspn(eq + 1, "&;, ");
        if (name < eq && name_is_secret(name, (size_t)(eq - name))) {
            sb_put(b, p, (size_t)(eq + 1 - p));
            sb_str(b, mask);
            hid = 1;
        } else {
            sb_put(b, p, (size_t)(value_end - p));
        }
        p = value_end;
        if (*p) { sb_put(b, p, 1); p++; }
    }
    sb_str(b, p);
    return hid;
}

// "key": "value" in a JSON-looking argument (-d '{"password":"x"}').
static int redact_json_values(wj_sb *b, const char *arg) {
    int hid = 0;
    const char *p = arg;
    for (;;) {
        const char *q = strchr(p, '"');
        if (!q) break;
        const char *qe = strchr(q + 1, '"');
        if (!qe) break;
        const char *colon = qe + 1;
        while (*colon == ' ') colon++;
        if (*colon == ':' && name_is_secret(q + 1, (size_t)(qe - q - 1))) {
            const char *v = colon + 1;
            while (*v == ' ') v++;
            const char *ve = *v == '"' ? strchr(v + 1, '"') : v + strcspn(v, ",}] ");
            if (*v == '"' && ve) ve++;
            if (!ve) ve = v + strlen(v);
            sb_put(b, p, (size_t)(v - p));
            sb_put(b, *v == '"' ? "\"***\"" : mask, *v == '"' ? 5 : 3);
            p = ve;
            hid = 1;
        } else {
            sb_put(b, p, (size_t)(qe + 1 - p));
            p = qe + 1;
        }
    }
    sb_str(b, p);
    return hid;
}

// Does the argument before this one take a secret value? A long option (or an env-style name
// ending in '=' is handled as a pair) whose name looks secret, or a known short option.
static int secret_option(const char *previous) {
    if (!previous || previous[0] != '-' || strchr(previous, '=')) return 0;
    if (in_list(previous, strlen(previous), secret_short, 0)) return 1;
    const char *name = previous + (previous[1] == '-' ? 2 : 1);
    return name[0] && name_is_secret(name, strlen(name));
}

void wj_redact_arg(const char *previous, const char *arg, char *out, size_t cap) {
    wj_sb b = {out, cap, 0};
    if (cap) out[0] = 0;
    if (previous && in_list(previous, strlen(previous), header_options, 0)) { redact_header(&b, arg); return; }
    // The value of a secret option given as the next argument (an argument starting with '-'
    // is the next option: --password-stdin -u alice keeps -u).
    if (secret_option(previous) && arg[0] != '-') { sb_str(&b, mask); return; }
    if (arg[0] == '-' && arg[1] && arg[1] != '-' && arg[2] && arg[2] != '=' && !strchr(arg, '=')) {
        // Values glued to a short option: -uuser:pw, -psecret, -HAuthorization: ...
        if (in_list(arg, 2, secret_short, 0)) { sb_put(&b, arg, 2); sb_str(&b, mask); return; }
        if (in_list(arg, 2, header_options, 0)) { sb_put(&b, arg, 2); redact_header(&b, arg + 2); return; }
    }
    const char *scheme_end = strstr(arg, "://");
    const char *eq = strchr(arg, '=');
    // --header=Cookie: x
    if (eq && arg[0] == '-' && in_list(arg, (size_t)(eq - arg), header_options, 0)) {
        sb_put(&b, arg, (size_t)(eq - arg) + 1);
        redact_header(&b, eq + 1);
        return;
    }
    if (scheme_end && (!eq || scheme_end < eq)) { redact_url(&b, arg, scheme_end); return; }
    if (secret_header_arg(arg)) { redact_header(&b, arg); return; }
    // --user=alice:pw: a credential option's value, whole.
    if (eq && arg[0] == '-' && in_list(arg, (size_t)(eq - arg), secret_short, 0)) {
        sb_put(&b, arg, (size_t)(eq - arg) + 1);
        sb_str(&b, mask);
        return;
    }
    // --password=x, -Dkey.password=x, NAME=x, a=1&token=x: every secret name's value.
    if (eq) {
        wj_sb trial = b;
        if (redact_pairs(&trial, arg)) { b = trial; return; }
        b.len = 0;
        if (cap) out[0] = 0;
    }
    if (strchr(arg, '"')) {
        wj_sb trial = b;
        if (redact_json_values(&trial, arg)) return;
        b.len = 0;
        if (cap) out[0] = 0;
    }
    // A bearer or basic credential anywhere in the argument.
    const char *cred = strstr(arg, "Bearer ");
    if (!cred) cred = strstr(arg, "Basic ");
    if (cred) { sb_put(&b, arg, (size_t)(strchr(cred, ' ') - arg) + 1); sb_str(&b, mask); return; }
    sb_str(&b, arg);
}
