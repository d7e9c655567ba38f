// The image's identity and configuration (process.h).
#include "process.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

// In .bss (log.fd is set to -1 when the image is configured): its pages cost a short process
// nothing until they are written, and only the first ones are (wedjat_agent_api.h).
WJ_HOT_TAIL wj_process wj_proc;

const char *wj_errno_name(int err) {
    const char *n = strerrorname_np(err);
    return n ? n : "EUNKNOWN";
}

int64_t wj_epoch_us(uint64_t mono_ns) {
    int64_t delta = (int64_t)(mono_ns - wj_proc.init_mono_ns);
    return ((int64_t)wj_proc.init_real_ns + delta) / 1000;
}

// The WEDJAT_* entries of the environment, found in one pass (the configuration looks up
// about twenty names: twenty scans of the whole environment with getenv). NULL-terminated.
#define WJ_ENV_MAX 32
static char *wedjat_env[WJ_ENV_MAX + 1];
static int wedjat_env_overflow;

static void collect_env(void) {
    extern char **environ;
    int n = 0;
    wedjat_env_overflow = 0;
    for (char **e = environ; e && *e; e++) {
        if ((*e)[0] != 'W' || !wj_starts_with(*e, "WEDJAT_", 7)) continue;
        if (n == WJ_ENV_MAX) { wedjat_env_overflow = 1; break; }
        wedjat_env[n++] = *e;
    }
    wedjat_env[n] = 0;
}

// getenv(name), for WEDJAT_* names: the first entry, as getenv finds it.
static const char *env_lookup(const char *name, void *ctx) {
    (void)ctx;
    if (wedjat_env_overflow) return getenv(name);
    size_t len = wj_strnlen(name, 64);
    for (char **e = wedjat_env; *e; e++)
        if (wj_starts_with(*e, name, len) && (*e)[len] == '=') return *e + len + 1;
    return 0;
}

static void sanitize_prog(char *out, size_t cap, const char *exe) {
    const char *base = wj_strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t n = 0;
    for (; *base && n + 1 < cap && n < 32; base++)
        out[n++] = ((*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
                    (*base >= '0' && *base <= '9') || *base == '.' || *base == '-' || *base == '_') ? *base : '_';
    if (n == 0) out[n++] = '_';
    out[n] = 0;
}

void wj_process_new_identity_path(void) {
    const char *header = wj_proc.log.header;
    size_t header_len = wj_proc.log.header_len;
    // DIR/PROG.PID.START_US.ndjson (config.dir is at most WJ_PATH_MAX - 100 long, prog 32)
    char *out = wj_proc.log_path;
    size_t n = wj_copy_str(out, sizeof wj_proc.log_path - 96, wj_proc.config.dir);
    out[n++] = '/';
    n += wj_copy_str(out + n, 64, wj_proc.prog);
    out[n++] = '.';
    n += wj_fmt_i64(out + n, wj_proc.pid);
    out[n++] = '.';
    n += wj_fmt_u64(out + n, wj_proc.init_real_ns / 1000);
    memcpy(out + n, ".ndjson", 8);
    wj_logfile_init(&wj_proc.log, wj_proc.log_path, (uint64_t)wj_proc.config.log_max_mb << 20);
    const wj_config *c = &wj_proc.config;
    wj_logfile_set_segments(&wj_proc.log, (uint64_t)c->segment_mb << 20, (uint64_t)c->segment_s * 1000000000ull,
                            (uint64_t)c->retain_mb << 20, (uint64_t)c->dir_retain_mb << 20, wj_proc.init_mono_ns,
                            wj_proc.init_real_ns, wj_proc.pid);
    if (header) wj_logfile_set_header(&wj_proc.log, header, header_len);
}

void wj_process_new_identity(void) {
    wj_proc.pid = (int)syscall(SYS_getpid);
    wj_proc.ppid = (int)syscall(SYS_getppid);
    wj_proc.init_mono_ns = wj_now_ns();
    wj_proc.init_real_ns = wj_realtime_ns();
    wj_proc.log.header = 0;
    wj_process_new_identity_path();
}

// WEDJAT_DISABLE=1 (or true, yes, on): nothing else is read (an invalid value is left to the
// full parse, which warns about it).
static int disabled_by_env(void) {
    const char *v = env_lookup("WEDJAT_DISABLE", 0);
    if (!v) return 0;
    static const char *const yes[] = {"1", "true", "yes", "on"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        const char *a = v, *b = yes[i];
        while (*b && (*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a) == *b) a++, b++;
        if (!*a && !*b) return 1;
    }
    return 0;
}

int wj_process_configure(void) {
    if (getauxval(AT_SECURE)) return 0;  // setuid/setgid/capabilities: stay completely out of the way
    collect_env();
    if (disabled_by_env()) return 0;
    wj_config_parse(&wj_proc.config, env_lookup, 0, (unsigned)syscall(SYS_geteuid));
    wj_config_warn_unknown(&wj_proc.config, wedjat_env_overflow ? environ : wedjat_env);
    if (wj_proc.config.disabled) return 0;
    char *exe = wj_proc.exe;
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof wj_proc.exe - 1);
    exe[n > 0 ? n : 0] = 0;
    sanitize_prog(wj_proc.prog, sizeof wj_proc.prog, n > 0 ? exe : "unknown");
    wj_process_new_identity();
    return 1;
}
