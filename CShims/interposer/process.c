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

wj_process wj_proc = {.log = {.fd = -1}};

const char *wj_errno_name(int err) {
    const char *n = strerrorname_np(err);
    return n ? n : "EUNKNOWN";
}

int64_t wj_epoch_us(uint64_t mono_ns) {
    int64_t delta = (int64_t)(mono_ns - wj_proc.init_mono_ns);
    return ((int64_t)wj_proc.init_real_ns + delta) / 1000;
}

static const char *env_lookup(const char *name, void *ctx) {
    (void)ctx;
    return getenv(name);
}

static void sanitize_prog(char *out, size_t cap, const char *exe) {
    const char *base = strrchr(exe, '/');
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
    snprintf(wj_proc.log_path, sizeof wj_proc.log_path, "%s/%s.%d.%llu.ndjson", wj_proc.config.dir,
             wj_proc.prog, wj_proc.pid, (unsigned long long)(wj_proc.init_real_ns / 1000));
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

int wj_process_configure(void) {
    if (getauxval(AT_SECURE)) return 0;  // setuid/setgid/capabilities: stay completely out of the way
    wj_config_parse(&wj_proc.config, env_lookup, 0, (unsigned)geteuid());
    extern char **environ;
    wj_config_warn_unknown(&wj_proc.config, environ);
    if (wj_proc.config.disabled) return 0;
    char *exe = wj_proc.exe;
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof wj_proc.exe - 1);
    exe[n > 0 ? n : 0] = 0;
    sanitize_prog(wj_proc.prog, sizeof wj_proc.prog, n > 0 ? exe : "unknown");
    wj_process_new_identity();
    return 1;
}
