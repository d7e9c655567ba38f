// Process-wide interposer state: initialisation, the reentrancy guard, the rings, and what
// happens at fork, exec and exit. The connection tables are in conns.c.
#include "internal.h"
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <unistd.h>

#define WJ_RING_CAPACITY 16384u

wj_real_table wj_real;
wj_process wj_proc = {.log = {.fd = -1}};  // fd -1: no log fd for hooks to protect yet
wj_ring wj_event_ring;
int wj_disabled;

#define WJ_DNS_RING_CAPACITY 256u
#define WJ_PAYLOAD_RING_CAPACITY 16384u  // 8 MiB: a busy server's requests between two drains
// .bss: pages appear only when used.
static unsigned char wj_ring_slots[WJ_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_event))] WJ_BIG;
static unsigned char wj_dns_slots[WJ_DNS_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_dns_event))] WJ_BIG;
static unsigned char wj_payload_slots[WJ_PAYLOAD_RING_CAPACITY * WJ_RING_STRIDE(sizeof(wj_payload))] WJ_BIG;
wj_ring wj_dns_ring;
wj_ring wj_payload_ring;
static _Atomic int wj_init_state;                // 0 not yet, 1 running, 2 done

// One flag word per thread: inside wedjat / wedjat's own thread / after vfork.
enum { WJ_T_INSIDE = 1, WJ_T_INTERNAL = 2, WJ_T_VFORK = 4 };
static __thread int wj_thread_flags __attribute__((tls_model("initial-exec")));

// Objects loaded RTLD_LOCAL (a TLS library that Python's _ssl module brought in) are not
// in RTLD_NEXT's reach, yet the app's calls into them land here: look through every
// loaded object for the definition.
typedef struct { const char *names[256]; int n; } loaded_objects;

static int collect_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    loaded_objects *lo = (loaded_objects *)data;
    if (info->dlpi_name && info->dlpi_name[0] && lo->n < 256) lo->names[lo->n++] = info->dlpi_name;
    return 0;
}

static void *find_in_loaded(const char *name) {
    loaded_objects lo;
    lo.n = 0;
    dl_iterate_phdr(collect_object, &lo);  // no dlopen inside the callback: it holds a lock
    Dl_info self;
    dladdr((void *)&find_in_loaded, &self);
    for (int i = 0; i < lo.n; i++) {
        if (self.dli_fname && strcmp(lo.names[i], self.dli_fname) == 0) continue;
        void *h = dlopen(lo.names[i], RTLD_NOLOAD | RTLD_LAZY);
        if (!h) continue;
        void *p = dlsym(h, name);
        dlclose(h);
        if (p && p != dlsym(RTLD_DEFAULT, name)) return p;  // not our own export
    }
    return 0;
}

void *wj_resolve(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) p = find_in_loaded(name);
    if (!p) {
        static const char msg[] = "wedjat: a function it needs is missing; aborting\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        syscall(SYS_exit_group, 127);
    }
    return p;
}

const char *wj_errno_name(int err) {
    const char *n = strerrorname_np(err);
    return n ? n : "EUNKNOWN";
}

static int vfork_child(void) {
    // After vfork the child shares our memory and this thread's TLS. The first hook that runs
    // tells parent from child by pid; the parent clears the mark.
    if (wj_sys_getpid() != wj_proc.pid) return 1;
    wj_thread_flags &= ~WJ_T_VFORK;
    return 0;
}

static void wj_init(void);

int wj_enter(void) {
    int f = wj_thread_flags;
    if (WJ_UNLIKELY(atomic_load_explicit(&wj_init_state, memory_order_acquire) != 2)) {
        if (f & (WJ_T_INSIDE | WJ_T_INTERNAL)) return 0;
        wj_init();
    }
    if (wj_disabled || (f & (WJ_T_INSIDE | WJ_T_INTERNAL))) return 0;
    if (WJ_UNLIKELY(f & WJ_T_VFORK) && vfork_child()) return 0;
    wj_thread_flags = f | WJ_T_INSIDE;
    return 1;
}

void wj_leave(void) { wj_thread_flags &= ~WJ_T_INSIDE; }

// Around the app's close_range, closefrom, dup2 and dup3: they name fd numbers, which must not
// be one wedjat holds for a moment (its /proc reads, the log's creation). Not in wedjat's own
// thread, a vfork child (it shares our memory: a lock it took would stay taken), or a hook
// interrupted by a signal handler (the thread may hold the lock itself).
int wj_lock_app_fds(void) {
    int f = wj_thread_flags;
    if (atomic_load_explicit(&wj_init_state, memory_order_acquire) != 2 || wj_disabled ||
        (f & (WJ_T_INSIDE | WJ_T_INTERNAL)))
        return 0;
    if (WJ_UNLIKELY(f & WJ_T_VFORK) && vfork_child()) return 0;
    pthread_mutex_lock(&wj_proc.log.fd_lock);
    return 1;
}

void wj_unlock_app_fds(int locked) {
    if (locked) pthread_mutex_unlock(&wj_proc.log.fd_lock);
}

// For the paths that end the process (_exit, abort, ...): they may run in a signal handler
// that interrupted a hook of ours on this thread, and the process still needs its end.
int wj_enter_ending(void) {
    int f = wj_thread_flags;
    if (atomic_load_explicit(&wj_init_state, memory_order_acquire) != 2 || wj_disabled || (f & WJ_T_INTERNAL)) return 0;
    if (WJ_UNLIKELY(f & WJ_T_VFORK) && vfork_child()) return 0;
    wj_thread_flags = f | WJ_T_INSIDE;
    return 1;
}

void *wj_vfork_prepare(void) {
    wj_thread_flags |= WJ_T_VFORK;
    return (void *)WJ_REAL(vfork);
}

void wj_push(wj_event *ev) {
    ev->tid = wj_tid();
    wj_ring_push(&wj_event_ring, ev);
    if (WJ_UNLIKELY(wj_ring_filling(&wj_event_ring))) wj_agent_nudge();
}

void wj_push_dns(wj_dns_event *ev) {
    ev->tid = wj_tid();
    wj_ring_push(&wj_dns_ring, ev);
}

// ---------------------------------------------------------------- init

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

static void set_image_identity(void) {
    wj_proc.pid = wj_sys_getpid();
    wj_proc.ppid = (int)syscall(SYS_getppid);
    wj_proc.init_mono_ns = wj_now_ns();
    wj_proc.init_real_ns = wj_realtime_ns();
    snprintf(wj_proc.log_path, sizeof wj_proc.log_path, "%s/%s.%d.%llu.ndjson", wj_proc.config.dir,
             wj_proc.prog, wj_proc.pid, (unsigned long long)(wj_proc.init_real_ns / 1000));
    snprintf(wj_proc.exec_hint_path, sizeof wj_proc.exec_hint_path, "%s/.exec.%d", wj_proc.config.dir, wj_proc.pid);
}

static void atfork_prepare(void) {
    if (wj_disabled) return;
    wj_agent_atfork_prepare();
    pthread_mutex_lock(&wj_proc.log.lock);
    pthread_mutex_lock(&wj_proc.log.fd_lock);
}

static void atfork_parent(void) {
    if (wj_disabled) return;
    pthread_mutex_unlock(&wj_proc.log.fd_lock);
    pthread_mutex_unlock(&wj_proc.log.lock);
    wj_agent_atfork_parent();
}

static void atfork_child(void) {
    wj_tid_forget();
    if (wj_disabled) return;
    char parent_log[WJ_PATH_MAX];
    memcpy(parent_log, wj_proc.log_path, sizeof parent_log);
    wj_proc.generation++;
    wj_fd_generation++;                           // inherited sockets are the parent's
    wj_ring_discard_pending(&wj_event_ring);      // and so are its pending events
    wj_ring_discard_pending(&wj_dns_ring);
    wj_ring_discard_pending(&wj_payload_ring);
    atomic_store(&wj_connecting_count, 0);
    set_image_identity();
    memcpy(wj_proc.parent_log, parent_log, sizeof parent_log);
    wj_proc.end_reason = WJ_END_NONE;
    wj_proc.has_exit_status = 0;
    wj_proc.main_mono_ns = 0;
    wj_logfile_reset_for_child(&wj_proc.log, wj_proc.log_path);
    wj_stalls_atfork_child();
    wj_agent_atfork_child();
    wj_thread_flags &= ~WJ_T_INSIDE;
}

// Invalid WEDJAT_* values: say so once on a terminal (never into output that may be captured),
// once per log directory and set of warnings, however many processes start. The warnings are
// also in every process_start.
static void warn_config_once(void) {
    if (wj_proc.config.warning_count == 0 || !isatty(2)) return;
    uint64_t hash = 1469598103934665603ull;
    for (int i = 0; i < wj_proc.config.warning_count; i++)
        for (const char *p = wj_proc.config.warnings[i]; *p; p++) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
    char why[WJ_WARNING_LEN], marker[WJ_PATH_MAX];
    if (!wj_ensure_dir(wj_proc.config.dir, why, sizeof why)) return;
    snprintf(marker, sizeof marker, "%s/.warned-%016llx", wj_proc.config.dir, (unsigned long long)hash);
    int fd = wj_sys_open(marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    wj_sys_close(fd);
    for (int i = 0; i < wj_proc.config.warning_count; i++) {
        char line[WJ_WARNING_LEN + 16];
        int n = snprintf(line, sizeof line, "wedjat: %s\n", wj_proc.config.warnings[i]);
        if (n > 0) wj_sys_write(2, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
    }
}

static void wj_init(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&wj_init_state, &expected, 1)) {
        // Another thread is initialising: wait for it (only possible before main).
        while (atomic_load(&wj_init_state) != 2) {}
        return;
    }
    int saved_errno = errno;
    wj_ring_init(&wj_event_ring, wj_ring_slots, WJ_RING_CAPACITY, sizeof(wj_event));
    wj_ring_init(&wj_dns_ring, wj_dns_slots, WJ_DNS_RING_CAPACITY, sizeof(wj_dns_event));
    wj_ring_init(&wj_payload_ring, wj_payload_slots, WJ_PAYLOAD_RING_CAPACITY, sizeof(wj_payload));
    wj_proc.ring = &wj_event_ring;
    if (getauxval(AT_SECURE)) {
        // setuid/setgid/capabilities: stay completely out of the way.
        wj_disabled = 1;
    } else {
        wj_config_parse(&wj_proc.config, env_lookup, 0, (unsigned)geteuid());
        extern char **environ;
        wj_config_warn_unknown(&wj_proc.config, environ);
        wj_disabled = wj_proc.config.disabled;
    }
    if (!wj_disabled) {
        char *exe = wj_proc.exe;
        long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof wj_proc.exe - 1);
        exe[n > 0 ? n : 0] = 0;
        sanitize_prog(wj_proc.prog, sizeof wj_proc.prog, n > 0 ? exe : "unknown");
        set_image_identity();
        wj_logfile_init(&wj_proc.log, wj_proc.log_path, (uint64_t)wj_proc.config.log_max_mb << 20);
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        wj_stalls_init();
        warn_config_once();
    }
    atomic_store(&wj_init_state, 2);
    errno = saved_errno;
}

__attribute__((constructor(101))) static void wj_constructor(void) {
    if (atomic_load(&wj_init_state) == 0) wj_init();
}

__attribute__((destructor)) static void wj_destructor(void) {
    if (wj_disabled || atomic_load(&wj_init_state) != 2) return;
    if ((wj_thread_flags & WJ_T_VFORK) && vfork_child()) return;
    if (wj_thread_flags & WJ_T_INTERNAL) return;
    wj_finish(WJ_END_EXIT, 0, 0);
}

void wj_mark_agent_thread(void) { wj_thread_flags |= WJ_T_INTERNAL; }
