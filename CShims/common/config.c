// WEDJAT_* configuration. Runs in the library constructor: no allocation, no stdio.
// Every invalid value keeps its default and leaves one warning naming the variable,
// the value and why.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_common.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void warn(wj_config *cfg, const char *name, const char *value, const char *why) {
    if (cfg->warning_count >= WJ_MAX_WARNINGS) return;
    snprintf(cfg->warnings[cfg->warning_count++], WJ_WARNING_LEN, "%s=%.60s: %s", name, value, why);
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    if (!*s) return 0;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        v = v * 10 + (*p - '0');
        if (v > hi) return 0;
    }
    if (v < lo) return 0;
    *out = v;
    return 1;
}

static void int_setting(wj_config *cfg, wj_getenv_fn lookup, void *ctx, const char *name,
                        long lo, long hi, int *field) {
    const char *v = lookup(name, ctx);
    if (!v) return;
    long out;
    if (parse_int(v, lo, hi, &out)) { *field = (int)out; return; }
    char why[96];
    snprintf(why, sizeof why, "not an integer in %ld..%ld; using %d", lo, hi, *field);
    warn(cfg, name, v, why);
}

// ASCII case-insensitive equality (strcasecmp consults the locale: its tables are pages a
// short process would otherwise never touch).
static int ieq(const char *a, const char *b) {
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y - 'A' + 'a');
        if (x != y) return 0;
        if (!x) return 1;
    }
}

static int is_one_of(const char *v, const char *const *words) {
    for (; *words; words++) if (ieq(v, *words)) return 1;
    return 0;
}

// WEDJAT_REDACT: a comma-separated list of query, userinfo, fragment; or all; or none.
static void parse_redact(wj_config *cfg, const char *v) {
    // Empty is not "nothing to redact": turning redaction off takes the word none.
    if (!*v) { warn(cfg, "WEDJAT_REDACT", v, "empty; use none to turn redaction off; using all"); return; }
    if (ieq(v, "all")) { cfg->redact = WJ_REDACT_ALL; return; }
    if (ieq(v, "none")) { cfg->redact = 0; return; }
    int bits = 0;
    const char *p = v;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 5 && strncasecmp(p, "query", 5) == 0) bits |= WJ_REDACT_QUERY;
        else if (n == 8 && strncasecmp(p, "userinfo", 8) == 0) bits |= WJ_REDACT_USERINFO;
        else if (n == 8 && strncasecmp(p, "fragment", 8) == 0) bits |= WJ_REDACT_FRAGMENT;
        else {
            warn(cfg, "WEDJAT_REDACT", v, "expected all, none, or a list of query, userinfo, fragment; using all");
            cfg->redact = WJ_REDACT_ALL;
            return;
        }
        p += n;
        if (*p == ',') p++;
    }
    cfg->redact = bits;
}

void wj_config_parse(wj_config *cfg, wj_getenv_fn lookup, void *ctx, unsigned uid) {
    // Every field is set below; the arrays only as far as they are read (no memset: in a new
    // process this struct is untouched .bss, and each page written is a page fault).
    cfg->disabled = 0;
    cfg->warning_count = 0;
    cfg->dir_env[0] = 0;
    cfg->argv_mode = WJ_ARGV_REDACT;
    cfg->flush_ms = 200;
    cfg->max_connections = 65536;
    cfg->log_max_mb = 256;
    cfg->http = 1;
    cfg->capture_bytes = 8192;
    cfg->redact = WJ_REDACT_ALL;
    cfg->http_records = 200;
    cfg->sample_ms = 1000;
    cfg->stall_ms = 250;
    cfg->segment_mb = 64;
    cfg->segment_s = 0;
    cfg->retain_mb = 1024;
    cfg->dir_retain_mb = 0;
    memcpy(cfg->dir, "/tmp/wedjat-", 12);
    wj_fmt_u64(cfg->dir + 12, uid);

    static const char *const yes[] = {"1", "true", "yes", "on", 0};
    static const char *const no[] = {"0", "false", "no", "off", "", 0};
    const char *v = lookup("WEDJAT_DISABLE", ctx);
    if (v) {
        if (is_one_of(v, yes)) cfg->disabled = 1;
        else if (!is_one_of(v, no)) warn(cfg, "WEDJAT_DISABLE", v, "expected 0 or 1; using 0");
    }

    v = lookup("WEDJAT_DIR", ctx);
    if (v) {
        size_t len = strlen(v);
        if (len < sizeof cfg->dir_env) memcpy(cfg->dir_env, v, len + 1);
        if (len == 0) {
            warn(cfg, "WEDJAT_DIR", v, "empty; using the default");
        } else if (len > WJ_PATH_MAX - 100) {
            warn(cfg, "WEDJAT_DIR", v, "path too long; using the default");
        } else if (v[0] == '/') {
            memcpy(cfg->dir, v, len + 1);
        } else {
            // Relative: resolve once against this process's working directory.
            char cwd[WJ_PATH_MAX];
            if (getcwd(cwd, sizeof cwd - 1) && strlen(cwd) + len + 2 < WJ_PATH_MAX - 100)
                snprintf(cfg->dir, sizeof cfg->dir, "%s/%s", cwd, v);
            else
                warn(cfg, "WEDJAT_DIR", v, "cannot resolve relative path; using the default");
        }
    }

    v = lookup("WEDJAT_ARGV", ctx);
    if (v) {
        if (ieq(v, "full")) cfg->argv_mode = WJ_ARGV_FULL;
        else if (ieq(v, "redact")) cfg->argv_mode = WJ_ARGV_REDACT;
        else if (ieq(v, "none")) cfg->argv_mode = WJ_ARGV_NONE;
        else warn(cfg, "WEDJAT_ARGV", v, "expected full, redact or none; using redact");
    }

    v = lookup("WEDJAT_HTTP", ctx);
    if (v) {
        if (is_one_of(v, yes)) cfg->http = 1;
        else if (is_one_of(v, no)) cfg->http = 0;
        else warn(cfg, "WEDJAT_HTTP", v, "expected 0 or 1; using 1");
    }

    v = lookup("WEDJAT_REDACT", ctx);
    if (v) parse_redact(cfg, v);

    int_setting(cfg, lookup, ctx, "WEDJAT_CAPTURE_BYTES", 0, 65536, &cfg->capture_bytes);
    int_setting(cfg, lookup, ctx, "WEDJAT_HTTP_RECORDS", 0, 1000000, &cfg->http_records);
    int_setting(cfg, lookup, ctx, "WEDJAT_FLUSH_MS", 10, 60000, &cfg->flush_ms);
    int_setting(cfg, lookup, ctx, "WEDJAT_MAX_CONNECTIONS", 16, 1048576, &cfg->max_connections);
    int_setting(cfg, lookup, ctx, "WEDJAT_LOG_MAX_MB", 1, 1048576, &cfg->log_max_mb);
    int_setting(cfg, lookup, ctx, "WEDJAT_STALL_MS", 0, 3600000, &cfg->stall_ms);
    int_setting(cfg, lookup, ctx, "WEDJAT_SEGMENT_MB", 0, 1048576, &cfg->segment_mb);
    int_setting(cfg, lookup, ctx, "WEDJAT_SEGMENT_S", 0, 31536000, &cfg->segment_s);
    int_setting(cfg, lookup, ctx, "WEDJAT_RETAIN_MB", 0, 1048576, &cfg->retain_mb);
    int_setting(cfg, lookup, ctx, "WEDJAT_DIR_RETAIN_MB", 0, 1048576, &cfg->dir_retain_mb);

    // 0 turns sampling off; below 100 ms the kernel's 10 ms CPU ticks make the numbers noise.
    v = lookup("WEDJAT_SAMPLE_MS", ctx);
    if (v) {
        long ms;
        if (parse_int(v, 0, 3600000, &ms) && (ms == 0 || ms >= 100)) cfg->sample_ms = (int)ms;
        else warn(cfg, "WEDJAT_SAMPLE_MS", v, "expected 0 (off) or an integer in 100..3600000; using 1000");
    }
}

// A typo in a variable name silently does nothing; say so instead.
void wj_config_warn_unknown(wj_config *cfg, char *const *envp) {
    static const char *const known[] = {
        "WEDJAT_DIR", "WEDJAT_DISABLE", "WEDJAT_ARGV", "WEDJAT_FLUSH_MS",
        "WEDJAT_MAX_CONNECTIONS", "WEDJAT_LOG_MAX_MB", "WEDJAT_LIB", "WEDJAT_HTTP",
        "WEDJAT_CAPTURE_BYTES", "WEDJAT_REDACT", "WEDJAT_HTTP_RECORDS", "WEDJAT_SAMPLE_MS", "WEDJAT_STALL_MS",
        "WEDJAT_SEGMENT_MB", "WEDJAT_SEGMENT_S", "WEDJAT_RETAIN_MB", "WEDJAT_DIR_RETAIN_MB", 0};
    if (!envp) return;
    for (; *envp; envp++) {
        const char *e = *envp;
        if (!wj_starts_with(e, "WEDJAT_", 7)) continue;
        const char *eq = wj_strchr(e, '=');
        size_t n = eq ? (size_t)(eq - e) : strlen(e);
        int found = 0;
        for (const char *const *k = known; *k; k++)
            if (wj_strnlen(*k, n + 1) == n && wj_starts_with(*k, e, n)) { found = 1; break; }
        if (!found && cfg->warning_count < WJ_MAX_WARNINGS)
            snprintf(cfg->warnings[cfg->warning_count++], WJ_WARNING_LEN,
                     "%.*s: unknown wedjat variable; ignored", (int)(n > 60 ? 60 : n), e);
    }
}
