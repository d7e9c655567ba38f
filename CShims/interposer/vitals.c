// Process vitals: the `sample` record (CPU, threads, memory, fds, faults, context switches,
// frequency, energy) every WEDJAT_SAMPLE_MS and once more at the end of the image, and the
// `startup` record (exec -> constructor -> main -> ready).
//
// Samples are taken on the agent thread, or in the final flush; the app's threads only ever
// run wj_note_ready (one relaxed load once the process is ready). Files are read with raw
// syscalls into static buffers, where wedjat's fds live (the agent thread's own fd table, or
// the final flush of a process without that thread: lifecycle.c). The state below is guarded
// by sample_lock: the periodic sample runs without the agent lock (a slow sysfs file must not
// hold up the app's fork() or a flush); the final flush takes it under the agent lock.
#include "vitals.h"
#include "context.h"
#include "process.h"
#include "records.h"
#include "stalls.h"
#include "wedjat_json.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sys_raw.h"

#define MAX_THREADS 1024   // threads read per sample to find the busiest (their count is exact)
#define TOP_THREADS 3
#define MAX_CORES 256      // cores whose frequency is reported
#define MAX_RAPL 8         // RAPL package zones intel-rapl:0..7
#define MAX_BATTERIES 4
#define REASON_LEN 160

static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;

// ---------------------------------------------------------------- ready

// (CLOCK_MONOTONIC ns << 4) | WJ_READY_* of the first network or wait call after main.
_Atomic uint64_t wj_ready_word;

static const char *const ready_names[] = {
    [WJ_READY_CONNECT] = "connect", [WJ_READY_ACCEPT] = "accept", [WJ_READY_ACCEPT4] = "accept4",
    [WJ_READY_LISTEN] = "listen", [WJ_READY_POLL] = "poll", [WJ_READY_PPOLL] = "ppoll",
    [WJ_READY_SELECT] = "select", [WJ_READY_PSELECT] = "pselect", [WJ_READY_EPOLL_WAIT] = "epoll_wait",
    [WJ_READY_EPOLL_PWAIT] = "epoll_pwait", [WJ_READY_EPOLL_PWAIT2] = "epoll_pwait2",
};

void wj_note_ready_slow(int call) {
    // Before main it is the loader's and constructors' business, not the program being ready.
    // (Called after the hook's gate: never from wedjat's own thread or a vfork child.)
    if (!wj_proc.main_mono_ns) return;
    uint64_t expected = 0;
    atomic_compare_exchange_strong(&wj_ready_word, &expected, (wj_now_ns() << 4) | (uint64_t)call);
}

// ---------------------------------------------------------------- file helpers

// Reads a small file into buf (NUL-terminated). Returns its length, or -errno. errno is kept.
static long read_small(const char *path, char *buf, size_t cap) {
    int saved = errno;
    long r;
    int fd = wj_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        r = -errno;
    } else {
        size_t used = 0;
        r = 0;
        while (used + 1 < cap) {
            size_t want = cap - 1 - used;
            long n = wj_sys_read(fd, buf + used, want);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) { if (!used) r = -errno; break; }
            if (n == 0) break;
            used += (size_t)n;
            if ((size_t)n < want) break;   // short: the end (/proc and sysfs give all at once)
        }
        if (r == 0) r = (long)used;
        wj_sys_close(fd);
    }
    buf[r > 0 ? r : 0] = 0;
    errno = saved;
    return r;
}

static int read_u64(const char *path, uint64_t *out) {
    char b[64];
    if (read_small(path, b, sizeof b) <= 0 || b[0] < '0' || b[0] > '9') return 0;
    *out = strtoull(b, 0, 10);
    return 1;
}

static int sys_stat(const char *path, struct stat *st) {
    int saved = errno;
    int r = (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0) == 0 ? 0 : -errno;
    errno = saved;
    return r;
}

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

// Calls fn(name, ctx) for each entry of dir but . and .. (at most `max`); returns how many,
// or -errno.
static int list_dir(const char *dir, int max, void (*fn)(const char *name, void *ctx), void *ctx) {
    WJ_BIG static char dents[32768];
    int saved = errno;
    int fd = wj_sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int count = 0;
    if (fd < 0) {
        count = -errno;
    } else {
        for (;;) {
            long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
            if (n <= 0) break;
            for (long off = 0; off < n;) {
                struct linux_dirent64 *d = (struct linux_dirent64 *)(dents + off);
                off += d->d_reclen;
                if (d->d_name[0] == '.' && (!d->d_name[1] || (d->d_name[1] == '.' && !d->d_name[2]))) continue;
                if (count < max && fn) fn(d->d_name, ctx);
                count++;
            }
        }
        wj_sys_close(fd);
    }
    errno = saved;
    return count;
}

static void reason_of(char *out, int err, const char *path) {
    if (err == -EACCES || err == -EPERM) snprintf(out, REASON_LEN, "permission denied: %s", path);
    else if (err == -ENOENT) snprintf(out, REASON_LEN, "no %s", path);
    else snprintf(out, REASON_LEN, "cannot read %s: %s", path, wj_errno_name(-err));
}

// "12.3": num/den as a percentage with one decimal.
static void json_pct(wj_json *j, const char *key, uint64_t num, uint64_t den) {
    if (!den) { wj_json_null(j, key); return; }
    uint64_t tenths = (uint64_t)(((unsigned __int128)num * 1000u + den / 2) / den);
    char s[32];
    size_t n = wj_fmt_u64(s, tenths / 10);
    s[n++] = '.';
    s[n++] = (char)('0' + tenths % 10);
    s[n] = 0;
    wj_json_key(j, key);
    wj_json_raw(j, s);
}

// value / 10^decimals, printed with that many decimals.
static void json_fixed(wj_json *j, const char *key, uint64_t value, int decimals) {
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++) scale *= 10;
    char s[48];
    snprintf(s, sizeof s, "%llu.%0*llu", (unsigned long long)(value / scale), decimals,
             (unsigned long long)(value % scale));
    wj_json_key(j, key);
    wj_json_raw(j, s);
}

static void json_unavailable(wj_json *j, const char *key, const char *reason) {
    wj_json_begin_object(j, key);
    wj_json_str(j, "unavailable", reason);
    wj_json_end(j);
}

// Value of "Key:   123 kB" in a /proc status-like text, 0 if absent.
static uint64_t field_kb(const char *text, const char *key) {
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = wj_strchr(p, '\n'), p = p ? p + 1 : 0)
        if (wj_starts_with(p, key, n) && p[n] == ':') return wj_parse_u64(p + n + 1, 0);
    return 0;
}

// ---------------------------------------------------------------- state

static uint64_t next_due;            // CLOCK_MONOTONIC ns of the next periodic sample; 0 = none
static uint64_t seq;                 // samples written by this image

// Process CPU and counters at the start of the interval (getrusage(RUSAGE_SELF): the same
// utime/stime as /proc/self/stat fields 14/15, at microsecond resolution).
typedef struct { int valid; uint64_t mono, user_us, sys_us; } proc_mark;
static proc_mark proc_prev;

// /proc/stat "cpu" line, in clock ticks.
typedef struct { int valid; uint64_t mono, user, system, idle, iowait, steal, total; } sys_mark;
static sys_mark sys_prev;

// Per-thread CPU time (ns), sorted by tid.
typedef struct { int tid; uint64_t run_ns; } thread_cpu;
// The previous sample's, in a few entries of the small state while the process has few
// threads (a short process never touches the big array's pages).
#define FEW_THREADS 4
static thread_cpu threads_few[FEW_THREADS];
WJ_BIG static thread_cpu threads_many[MAX_THREADS];
static thread_cpu *threads_prev = threads_few;
WJ_BIG static thread_cpu threads_cur[MAX_THREADS];
static int n_threads_prev, threads_prev_valid;
static int thread_cpu_source;        // 0 unknown, 1 schedstat (ns), 2 stat (clock ticks)

// cpufreq: probed once.
static int freq_state;               // 0 not probed, 1 available, -1 unavailable
WJ_COLD static char freq_reason[REASON_LEN];
static int freq_cores;
WJ_COLD static uint32_t freq_min[MAX_CORES], freq_max[MAX_CORES];  // kHz, 0 = not exposed
WJ_COLD static uint8_t freq_limits_read[MAX_CORES];

// RAPL package zones: probed once.
static int rapl_state;
WJ_COLD static char rapl_reason[REASON_LEN];
static int rapl_zones;
WJ_COLD static uint64_t rapl_range[MAX_RAPL];
static int rapl_prev_valid;
static uint64_t rapl_prev_uj[MAX_RAPL], rapl_prev_mono;

// Batteries: probed once.
static int battery_state;
WJ_COLD static char battery_reason[REASON_LEN];
static int batteries;
WJ_COLD static char battery_name[MAX_BATTERIES][64];

// exec: when the previous image of this process (watched) called execve, else 0.
static uint64_t exec_call_mono;
static int startup_written;

void wj_vitals_exec_called(uint64_t mono_ns) { exec_call_mono = mono_ns; }

// The agent thread's own CPU time, published by it each round (no file to read for it).
static _Atomic uint64_t agent_cpu_ns;

static void publish_agent_cpu(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        atomic_store_explicit(&agent_cpu_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, memory_order_relaxed);
}

static uint64_t vitals_next_due(void) { return wj_proc.config.sample_ms > 0 ? next_due : 0; }

static struct rusage self_usage(void) {
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int saved = errno;
    syscall(SYS_getrusage, RUSAGE_SELF, &ru);
    errno = saved;
    return ru;
}

static uint64_t tv_us(struct timeval tv) { return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec; }

// main() is about to run: the first interval begins here (two syscalls, no file). The main
// thread's CPU so far (the loader, constructors, earlier images) is not the first interval's.
static void vitals_main_entered(void) {
    if (wj_proc.config.sample_ms <= 0) return;
    struct rusage ru = self_usage();
    struct timespec tcpu = {0, 0};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &tcpu);  // the same ns as the thread's schedstat
    uint64_t now = wj_now_ns();
    pthread_mutex_lock(&sample_lock);  // an agent thread may exist already (a connect before main)
    proc_prev = (proc_mark){1, now, tv_us(ru.ru_utime), tv_us(ru.ru_stime)};
    threads_prev = threads_few;
    threads_prev[0] = (thread_cpu){wj_proc.pid, (uint64_t)tcpu.tv_sec * 1000000000u + (uint64_t)tcpu.tv_nsec};
    n_threads_prev = 1;
    threads_prev_valid = 1;
    next_due = now + (uint64_t)wj_proc.config.sample_ms * 1000000u;
    pthread_mutex_unlock(&sample_lock);
}

// In a forked child: its counters start at zero at the fork; it is not a new image, so it
// writes no startup record. What was read about the parent (and a lock a parent thread held
// at the fork) is dropped.
static void vitals_forked_child(void) {
    pthread_mutex_init(&sample_lock, 0);
    atomic_store(&agent_cpu_ns, 0);
    proc_prev = (proc_mark){1, wj_proc.init_mono_ns, 0, 0};
    sys_prev.valid = 0;
    rapl_prev_valid = 0;
    threads_prev_valid = 1;  // every thread of the child started at the fork, from zero
    n_threads_prev = 0;
    seq = 0;
    startup_written = 1;
    next_due = wj_proc.config.sample_ms > 0 ? wj_proc.init_mono_ns + (uint64_t)wj_proc.config.sample_ms * 1000000u : 0;
}

// When the process started, as CLOCK_MONOTONIC ns: /proc/self/stat field 22, in clock ticks
// since boot (rounded down: up to one tick early).
static uint64_t process_start_mono(void) {
    uint64_t ticks = wj_proc_start_ticks();
    if (!ticks) return 0;
    struct timespec bt, mt;
    clock_gettime(CLOCK_BOOTTIME, &bt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    int64_t offset = ((int64_t)bt.tv_sec - mt.tv_sec) * 1000000000 + ((int64_t)bt.tv_nsec - mt.tv_nsec);
    uint64_t hz = wj_clock_ticks_per_second();
    int64_t start_boot = (int64_t)(ticks / hz * 1000000000u + ticks % hz * (1000000000u / hz));
    int64_t start = start_boot - offset;
    return start > 0 ? (uint64_t)start : 0;
}

// ---------------------------------------------------------------- readers

static int read_sys_cpu(sys_mark *m) {
    WJ_COLD static char b[4096];  // the "cpu" line is first; the rest of the file is not needed
    if (read_small("/proc/stat", b, sizeof b) <= 0 || strncmp(b, "cpu ", 4) != 0) return 0;
    unsigned long long v[10] = {0};
    const char *p = b + 4;
    for (int i = 0; i < 10; i++) {
        char *end;
        v[i] = strtoull(p, &end, 10);
        if (end == p) break;
        p = end;
    }
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is in user)
    m->user = v[0] + v[1];
    m->system = v[2] + v[5] + v[6];
    m->idle = v[3];
    m->iowait = v[4];
    m->steal = v[7];
    m->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    m->mono = wj_now_ns();
    m->valid = 1;
    return 1;
}

static void probe_rapl(void) {
    if (rapl_state) return;
    struct stat st;
    int err = sys_stat("/sys/class/powercap", &st);
    if (err) { rapl_state = -1; reason_of(rapl_reason, err, "/sys/class/powercap"); return; }
    char path[96];
    for (int z = 0; z < MAX_RAPL; z++) {
        uint64_t uj;
        snprintf(path, sizeof path, "/sys/class/powercap/intel-rapl:%d/energy_uj", z);
        char b[64];
        long r = read_small(path, b, sizeof b);
        if (r <= 0) {
            if (z == 0) {
                rapl_state = -1;
                if (r == -ENOENT) snprintf(rapl_reason, REASON_LEN, "no RAPL package zone in /sys/class/powercap (intel-rapl:0)");
                else reason_of(rapl_reason, r ? (int)r : -EIO, path);
                return;
            }
            break;
        }
        snprintf(path, sizeof path, "/sys/class/powercap/intel-rapl:%d/max_energy_range_uj", z);
        rapl_range[z] = read_u64(path, &uj) ? uj : 0;
        rapl_zones = z + 1;
    }
    rapl_state = 1;
}

static int read_rapl(uint64_t *uj) {
    char path[96];
    for (int z = 0; z < rapl_zones; z++) {
        snprintf(path, sizeof path, "/sys/class/powercap/intel-rapl:%d/energy_uj", z);
        if (!read_u64(path, &uj[z])) return 0;
    }
    return 1;
}

// Names under /sys/class/power_supply.
WJ_COLD static char supply_names[16][64];
static int n_supplies;

static void supply_entry(const char *name, void *ctx) {
    (void)ctx;
    if (n_supplies < 16 && strlen(name) < sizeof supply_names[0]) snprintf(supply_names[n_supplies++], 64, "%s", name);
}

static void probe_batteries(void) {
    if (battery_state) return;
    n_supplies = 0;
    int n = list_dir("/sys/class/power_supply", 16, supply_entry, 0);
    if (n < 0) { battery_state = -1; reason_of(battery_reason, n, "/sys/class/power_supply"); return; }
    batteries = 0;
    for (int i = 0; i < n_supplies && batteries < MAX_BATTERIES; i++) {
        char path[160], type[32];
        snprintf(path, sizeof path, "/sys/class/power_supply/%s/type", supply_names[i]);
        if (read_small(path, type, sizeof type) > 0 && strncmp(type, "Battery", 7) == 0)
            snprintf(battery_name[batteries++], sizeof battery_name[0], "%s", supply_names[i]);
    }
    if (!batteries) {
        battery_state = -1;
        snprintf(battery_reason, REASON_LEN, "no battery in /sys/class/power_supply");
        return;
    }
    battery_state = 1;
}

static void probe_freq(void) {
    if (freq_state) return;
    struct stat st;
    int err = sys_stat("/sys/devices/system/cpu/cpu0/cpufreq", &st);
    if (err) {
        freq_state = -1;
        if (err == -ENOENT) snprintf(freq_reason, REASON_LEN, "no cpufreq in sysfs (/sys/devices/system/cpu/cpu0/cpufreq)");
        else reason_of(freq_reason, err, "/sys/devices/system/cpu/cpu0/cpufreq");
        return;
    }
    long n = sysconf(_SC_NPROCESSORS_CONF);
    freq_cores = n < 1 ? 1 : n > MAX_CORES ? MAX_CORES : (int)n;
    freq_state = 1;
}

// Thread ids of this process, from /proc/self/task.
WJ_BIG static int task_tids[MAX_THREADS];
static int n_task_tids;

static void task_entry(const char *name, void *ctx) {
    (void)ctx;
    if (n_task_tids < MAX_THREADS && name[0] >= '0' && name[0] <= '9') task_tids[n_task_tids++] = atoi(name);
}

// CPU time of one thread in ns: schedstat (ns) where the kernel has it, else stat's utime +
// stime (clock ticks). 0 when the thread is gone.
static int thread_cpu_ns(int tid, uint64_t *ns) {
    char path[64], b[512];
    if (thread_cpu_source != 2) {
        snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
        long r = read_small(path, b, sizeof b);
        if (r > 0) { thread_cpu_source = 1; *ns = strtoull(b, 0, 10); return 1; }
        if (thread_cpu_source == 1 || r != -ENOENT) return 0;
        // No schedstat in this kernel, or the thread just ended: stat tells.
    }
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (read_small(path, b, sizeof b) <= 0) return 0;
    const char *f = wj_stat_field(b, 14);
    if (!f) return 0;
    char *end;
    uint64_t ticks = strtoull(f, &end, 10);
    ticks += strtoull(end, 0, 10);
    uint64_t hz = wj_clock_ticks_per_second();
    *ns = ticks / hz * 1000000000u + ticks % hz * (1000000000u / hz);
    if (!thread_cpu_source) thread_cpu_source = 2;
    return 1;
}

static const thread_cpu *find_prev(int tid) {
    int lo = 0, hi = n_threads_prev - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (threads_prev[mid].tid == tid) return &threads_prev[mid];
        if (threads_prev[mid].tid < tid) lo = mid + 1; else hi = mid - 1;
    }
    return 0;
}

// ---------------------------------------------------------------- the sample

// The system-wide counters need an earlier reading: the agent thread takes one on its first
// round, so a process that lives past it gets system CPU and power for its first sample.
static void vitals_baseline(void) {
    if (wj_proc.config.sample_ms <= 0) return;
    pthread_mutex_lock(&sample_lock);
    if (!sys_prev.valid) read_sys_cpu(&sys_prev);
    probe_rapl();
    if (rapl_state > 0 && !rapl_prev_valid && read_rapl(rapl_prev_uj)) {
        rapl_prev_mono = wj_now_ns();
        rapl_prev_valid = 1;
    }
    pthread_mutex_unlock(&sample_lock);
}

// Tiny intervals make /proc/stat's clock ticks meaningless.
#define MIN_SYS_TICKS 20

// The exit sample of a process that ended before its first periodic one (most processes: a
// shell's commands, build steps) reports the process; the machine's gauges (memory, frequency,
// energy: about 30 us of sysfs and /proc reads in a new process) come from processes that live.
static const char brief_reason[] = "not read at the exit of a process that ended before its first periodic sample";

static size_t take_sample(char *buf, size_t cap, int at_exit, const wj_round *r) {
    int agent_tid = r->agent_tid, agent_threads = r->agent_threads;
    pthread_mutex_lock(&sample_lock);
    WJ_BIG static char meminfo[4096];
    int brief = at_exit && seq == 0;
    uint64_t now = wj_now_ns();
    // /proc/self/status is read into the start of the record's own buffer (which is about to
    // be written over anyway: no page of its own) and reduced to the four numbers used.
    long rs = read_small("/proc/self/status", buf, cap < 4096 ? cap : 4096);
    uint64_t threads_total = rs > 0 ? field_kb(buf, "Threads") : 0;
    uint64_t vm_rss = rs > 0 ? field_kb(buf, "VmRSS") : 0, vm_hwm = rs > 0 ? field_kb(buf, "VmHWM") : 0;
    uint64_t vm_size = rs > 0 ? field_kb(buf, "VmSize") : 0;
    struct rusage ru = self_usage();
    struct timespec self_cpu = {0, 0};
    int self_cpu_ok = at_exit && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &self_cpu) == 0;
    uint64_t user_us = tv_us(ru.ru_utime), sys_us = tv_us(ru.ru_stime);

    wj_json j;
    wj_json_init(&j, buf, cap);
    wj_json_begin(&j);
    wj_json_str(&j, "type", "sample");
    wj_json_int(&j, "ts", wj_epoch_us(now));
    wj_json_int(&j, "pid", wj_proc.pid);
    wj_json_uint(&j, "seq", seq++);
    wj_json_bool(&j, "at_exit", at_exit);

    // Process CPU over the interval, in % of one core (two busy cores: 200).
    proc_mark start = proc_prev;
    if (!start.valid) start = (proc_mark){1, process_start_mono(), 0, 0};  // exited before main
    uint64_t interval_ns = now > start.mono ? now - start.mono : 0;
    uint64_t interval_us = interval_ns / 1000;
    wj_json_int(&j, "interval_start_ts", wj_epoch_us(start.mono));
    wj_json_uint(&j, "interval_us", interval_us);
    uint64_t du = user_us > start.user_us ? user_us - start.user_us : 0;
    uint64_t ds = sys_us > start.sys_us ? sys_us - start.sys_us : 0;
    wj_json_begin_object(&j, "cpu");
    json_pct(&j, "user_pct", du, interval_us);
    json_pct(&j, "system_pct", ds, interval_us);
    json_pct(&j, "total_pct", du + ds, interval_us);
    wj_json_uint(&j, "user_us", user_us);
    wj_json_uint(&j, "system_us", sys_us);
    wj_json_end(&j);
    proc_prev = (proc_mark){1, now, user_us, sys_us};

    long rm = brief ? 0 : read_small("/proc/meminfo", meminfo, sizeof meminfo);

    // The busiest threads over the interval (wedjat's own is reported apart). At the end of
    // a single-threaded program the one thread is the one running this: no files to read.
    int n = 0, n_tasks = 0, fast = 0;
    thread_cpu one, *cur = threads_cur;   // the one thread, or the list read from /proc/self/task
    char fast_name[17] = "";
    int self = wj_gettid();
    n_task_tids = 0;
    if (at_exit && self != agent_tid && threads_total && threads_total - (uint64_t)agent_threads == 1) {
        if (self_cpu_ok && syscall(SYS_prctl, PR_GET_NAME, fast_name, 0, 0, 0) == 0) {
            one = (thread_cpu){self, (uint64_t)self_cpu.tv_sec * 1000000000u + (uint64_t)self_cpu.tv_nsec};
            cur = &one;
            n = 1;
            fast = 1;
        }
    }
    if (!fast) n_tasks = list_dir("/proc/self/task", MAX_THREADS, task_entry, 0);
    int top[TOP_THREADS];
    uint64_t top_ns[TOP_THREADS];
    int n_top = 0;
    for (int i = 0; i < n_task_tids; i++) {
        uint64_t ns;
        if (task_tids[i] == agent_tid || !thread_cpu_ns(task_tids[i], &ns)) continue;
        // insertion by tid (the listing is nearly sorted already)
        int k = n++;
        while (k > 0 && cur[k - 1].tid > task_tids[i]) { cur[k] = cur[k - 1]; k--; }
        cur[k] = (thread_cpu){task_tids[i], ns};
    }
    for (int i = 0; i < n; i++) {
        const thread_cpu *p = threads_prev_valid ? find_prev(cur[i].tid) : 0;
        uint64_t d = p ? (cur[i].run_ns > p->run_ns ? cur[i].run_ns - p->run_ns : 0) : cur[i].run_ns;
        if (!d) continue;
        int k = n_top < TOP_THREADS ? n_top++ : TOP_THREADS;
        if (k == TOP_THREADS && d <= top_ns[TOP_THREADS - 1]) continue;
        if (k == TOP_THREADS) k--;
        while (k > 0 && top_ns[k - 1] < d) { top[k] = top[k - 1]; top_ns[k] = top_ns[k - 1]; k--; }
        top[k] = i;
        top_ns[k] = d;
    }
    wj_json_begin_array(&j, "top_threads");
    for (int t = 0; t < n_top; t++) {
        char path[64], comm[64];
        long r;
        if (fast) {
            r = (long)wj_copy_str(comm, sizeof comm, fast_name);
        } else {
            snprintf(path, sizeof path, "/proc/self/task/%d/comm", cur[top[t]].tid);
            r = read_small(path, comm, sizeof comm);
        }
        if (r > 0 && comm[r - 1] == '\n') comm[r - 1] = 0;
        wj_json_begin(&j);
        wj_json_int(&j, "tid", cur[top[t]].tid);
        wj_json_str(&j, "name", r > 0 ? comm : 0);
        json_pct(&j, "cpu_pct", top_ns[t] / 1000, interval_us);
        wj_json_end(&j);
    }
    wj_json_end_array(&j);
    if (n_tasks > MAX_THREADS) wj_json_int(&j, "threads_scanned", n_task_tids);
    thread_cpu *keep = n <= FEW_THREADS ? threads_few : threads_many;
    memmove(keep, cur, (size_t)n * sizeof cur[0]);
    threads_prev = keep;
    n_threads_prev = n;
    threads_prev_valid = 1;

    // System CPU over all cores.
    sys_mark sys_now = {0};
    if (!sys_prev.valid) {
        if (!at_exit) read_sys_cpu(&sys_prev);  // for the next one
        json_unavailable(&j, "system_cpu", "no earlier reading of /proc/stat in this process");
    } else if (!read_sys_cpu(&sys_now)) {
        json_unavailable(&j, "system_cpu", "cannot read /proc/stat");
    } else if (sys_now.total < sys_prev.total + MIN_SYS_TICKS) {
        json_unavailable(&j, "system_cpu", "interval too short for /proc/stat's clock ticks");
    } else {
        uint64_t dt = sys_now.total - sys_prev.total;
#define D(f) (sys_now.f > sys_prev.f ? sys_now.f - sys_prev.f : 0)
        wj_json_begin_object(&j, "system_cpu");
        json_pct(&j, "busy_pct", dt - D(idle) - D(iowait) > dt ? 0 : dt - D(idle) - D(iowait), dt);
        json_pct(&j, "user_pct", D(user), dt);
        json_pct(&j, "system_pct", D(system), dt);
        json_pct(&j, "iowait_pct", D(iowait), dt);
        json_pct(&j, "steal_pct", D(steal), dt);
        wj_json_uint(&j, "interval_us", (sys_now.mono - sys_prev.mono) / 1000);
        wj_json_end(&j);
#undef D
    }
    if (sys_now.valid) sys_prev = sys_now;

    // Frequency per core.
    if (!brief) probe_freq();
    if (brief) {
        json_unavailable(&j, "cpu_freq", brief_reason);
    } else if (freq_state < 0) {
        json_unavailable(&j, "cpu_freq", freq_reason);
    } else {
        wj_json_begin_object(&j, "cpu_freq");
        wj_json_begin_array(&j, "cores");
        for (int c = 0; c < freq_cores; c++) {
            char path[96];
            uint64_t cur = 0, v;
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c);
            if (!read_u64(path, &cur)) continue;  // offline core, or not exposed
            if (!freq_limits_read[c]) {
                freq_limits_read[c] = 1;
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_min_freq", c);
                freq_min[c] = read_u64(path, &v) ? (uint32_t)v : 0;
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", c);
                freq_max[c] = read_u64(path, &v) ? (uint32_t)v : 0;
            }
            wj_json_begin(&j);
            wj_json_int(&j, "cpu", c);
            wj_json_uint(&j, "cur_khz", cur);
            if (freq_min[c]) wj_json_uint(&j, "min_khz", freq_min[c]); else wj_json_null(&j, "min_khz");
            if (freq_max[c]) wj_json_uint(&j, "max_khz", freq_max[c]); else wj_json_null(&j, "max_khz");
            wj_json_end(&j);
        }
        wj_json_end_array(&j);
        wj_json_end(&j);
    }

    // Memory: the process's, then the system's (read above).
    if (rs > 0) {
        wj_json_begin_object(&j, "memory");
        wj_json_uint(&j, "rss_bytes", vm_rss * 1024);
        wj_json_uint(&j, "peak_rss_bytes", vm_hwm * 1024);
        wj_json_uint(&j, "virtual_bytes", vm_size * 1024);
        wj_json_end(&j);
        wj_json_uint(&j, "threads", threads_total);
    } else {
        json_unavailable(&j, "memory", "cannot read /proc/self/status");
        wj_json_null(&j, "threads");
    }
    if (rm > 0) {
        uint64_t total = field_kb(meminfo, "MemTotal") * 1024, avail = field_kb(meminfo, "MemAvailable") * 1024;
        wj_json_begin_object(&j, "system_memory");
        wj_json_uint(&j, "total_bytes", total);
        wj_json_uint(&j, "available_bytes", avail);
        wj_json_uint(&j, "used_bytes", total > avail ? total - avail : 0);
        wj_json_end(&j);
    } else {
        json_unavailable(&j, "system_memory", brief ? brief_reason : "cannot read /proc/meminfo");
    }

    // Open fds, the app's. /proc/self/fd is the app's table (wedjat's thread has a table of
    // its own); in the final flush of a process without that thread, wedjat's fds open in the
    // app's table for that moment are not counted. Linux >= 6.2 gives the count as the size of
    // /proc/self/fd; older kernels get a listing (whose own fd is not counted).
    {
        int app_table_fds = r->log_in_app_table && wj_logfile_fd(&wj_proc.log) >= 0;
        struct stat st;
        int err = sys_stat("/proc/self/fd", &st);
        long fds = -1;
        if (!err && st.st_size > 0) {
            fds = (long)st.st_size - app_table_fds;
        } else {
            int listed = list_dir("/proc/self/fd", 1 << 30, 0, 0);
            // The listing's own fd is in the app's table unless this is wedjat's thread.
            if (listed > 0) fds = listed - (agent_tid == wj_gettid() ? 0 : 1) - app_table_fds;
        }
        if (fds >= 0) wj_json_int(&j, "fds", fds); else wj_json_null(&j, "fds");
    }
    wj_stalls_loops_json(&j, wj_now_ns());

    wj_json_begin_object(&j, "ctx_switches");
    wj_json_uint(&j, "voluntary", (uint64_t)ru.ru_nvcsw);
    wj_json_uint(&j, "involuntary", (uint64_t)ru.ru_nivcsw);
    wj_json_end(&j);
    wj_json_begin_object(&j, "page_faults");
    wj_json_uint(&j, "minor", (uint64_t)ru.ru_minflt);
    wj_json_uint(&j, "major", (uint64_t)ru.ru_majflt);
    wj_json_end(&j);

    // Energy: RAPL package counters, batteries.
    wj_json_begin_object(&j, "energy");
    if (!brief) probe_rapl();
    uint64_t uj[MAX_RAPL];
    int rapl_read = !brief && rapl_state > 0 && read_rapl(uj);
    if (brief) {
        json_unavailable(&j, "rapl", brief_reason);
    } else if (rapl_state < 0) {
        json_unavailable(&j, "rapl", rapl_reason);
    } else if (!rapl_read) {
        json_unavailable(&j, "rapl", "cannot read /sys/class/powercap/intel-rapl:*/energy_uj");
    } else if (!rapl_prev_valid) {
        json_unavailable(&j, "rapl", "no earlier reading of the RAPL counters in this process");
    } else {
        uint64_t total = 0;
        for (int z = 0; z < rapl_zones; z++) {
            uint64_t d = uj[z] >= rapl_prev_uj[z] ? uj[z] - rapl_prev_uj[z]
                                                  : uj[z] + rapl_range[z] - rapl_prev_uj[z];  // wrapped
            total += d;
        }
        uint64_t us = (now - rapl_prev_mono) / 1000;
        wj_json_begin_object(&j, "rapl");
        wj_json_int(&j, "packages", rapl_zones);
        json_fixed(&j, "energy_j", total / 1000, 3);           // mJ
        if (us) json_fixed(&j, "watts", total * 100 / us, 2);   // uJ/us = W
        else wj_json_null(&j, "watts");
        wj_json_uint(&j, "interval_us", us);
        wj_json_end(&j);
    }
    if (rapl_read) {
        // the counters just read start the next interval
        memcpy(rapl_prev_uj, uj, sizeof rapl_prev_uj);
        rapl_prev_mono = now;
        rapl_prev_valid = 1;
    }
    if (!brief) probe_batteries();
    if (brief) {
        json_unavailable(&j, "battery", brief_reason);
    } else if (battery_state < 0) {
        json_unavailable(&j, "battery", battery_reason);
    } else {
        wj_json_begin_array(&j, "battery");
        for (int b = 0; b < batteries; b++) {
            char path[160], st[32];
            uint64_t pct;
            wj_json_begin(&j);
            wj_json_str(&j, "name", battery_name[b]);
            snprintf(path, sizeof path, "/sys/class/power_supply/%s/capacity", battery_name[b]);
            if (read_u64(path, &pct)) wj_json_uint(&j, "capacity_pct", pct); else wj_json_null(&j, "capacity_pct");
            snprintf(path, sizeof path, "/sys/class/power_supply/%s/status", battery_name[b]);
            long r = read_small(path, st, sizeof st);
            if (r > 0 && st[r - 1] == '\n') st[r - 1] = 0;
            wj_json_str(&j, "status", r > 0 ? st : 0);
            wj_json_end(&j);
        }
        wj_json_end_array(&j);
    }
    wj_json_end(&j);

    wj_json_begin_object(&j, "wedjat");
    wj_json_uint(&j, "thread_cpu_us", atomic_load_explicit(&agent_cpu_ns, memory_order_relaxed) / 1000);
    wj_json_uint(&j, "sample_us", (wj_now_ns() - now) / 1000);  // what taking this sample took
    wj_json_end(&j);

    if (!at_exit) {
        uint64_t step = (uint64_t)wj_proc.config.sample_ms * 1000000u;
        next_due = next_due + step > now ? next_due + step : now + step;
    }
    pthread_mutex_unlock(&sample_lock);
    wj_json_end(&j);
    wj_json_newline(&j);
    return j.overflow ? 0 : j.len;
}

// ---------------------------------------------------------------- startup

// Written once per image: when the program is ready, or at its end.
static int startup_due(int final) {
    if (startup_written) return 0;
    return final || atomic_load_explicit(&wj_ready_word, memory_order_relaxed) != 0;
}

static size_t format_startup(char *buf, size_t cap) {
    startup_written = 1;
    uint64_t ready = atomic_load(&wj_ready_word);
    uint64_t ready_ns = ready >> 4;
    unsigned call = (unsigned)(ready & 15);
    uint64_t exec = exec_call_mono;
    int precise = exec != 0 && exec <= wj_proc.init_mono_ns;
    if (!precise) exec = process_start_mono();
    if (exec > wj_proc.init_mono_ns) exec = wj_proc.init_mono_ns;

    wj_json j;
    wj_json_init(&j, buf, cap);
    wj_json_begin(&j);
    wj_json_str(&j, "type", "startup");
    wj_json_int(&j, "ts", wj_epoch_us(ready ? ready_ns : wj_now_ns()));
    wj_json_int(&j, "pid", wj_proc.pid);
    wj_json_int(&j, "tid", wj_proc.pid);
    if (exec) {
        wj_json_int(&j, "exec_ts", wj_epoch_us(exec));
        wj_json_str(&j, "exec_source", precise ? "exec" : "process_start");
        wj_json_uint(&j, "exec_resolution_us", precise ? 1 : 1000000u / wj_clock_ticks_per_second());
        wj_json_uint(&j, "constructor_us", (wj_proc.init_mono_ns - exec) / 1000);
    } else {
        wj_json_null(&j, "exec_ts");
        wj_json_null(&j, "exec_source");
        wj_json_null(&j, "exec_resolution_us");
        wj_json_null(&j, "constructor_us");
    }
    uint64_t base = exec ? exec : wj_proc.init_mono_ns;
    if (wj_proc.main_mono_ns && wj_proc.main_mono_ns >= base) wj_json_uint(&j, "main_us", (wj_proc.main_mono_ns - base) / 1000);
    else wj_json_null(&j, "main_us");
    if (ready && ready_ns >= base) wj_json_uint(&j, "ready_us", (ready_ns - base) / 1000);
    else wj_json_null(&j, "ready_us");
    const char *name = ready && call < sizeof ready_names / sizeof ready_names[0] ? ready_names[call] : 0;
    wj_json_str(&j, "ready_call", name);
    wj_json_end(&j);
    wj_json_newline(&j);
    return j.overflow ? 0 : j.len;
}

// ---------------------------------------------------------------- the component

WJ_BIG static char periodic_line[64 * 1024];   // taken in a round, written at the next collect
static size_t periodic_len;
static int periodic_ready, baseline_taken;

static void vitals_round(const wj_round *r) {
    publish_agent_cpu();
    uint64_t due = vitals_next_due();
    if (!due) return;
    // The system-wide counters get their first reading on the first round, so the first
    // sample has an interval for them too.
    if (!baseline_taken) {
        vitals_baseline();
        baseline_taken = 1;
    }
    if (r->now < due || periodic_ready) return;
    periodic_len = take_sample(periodic_line, sizeof periodic_line, 0, r);
    periodic_ready = 1;
}

static void vitals_collect(const wj_round *r, const wj_out *out) {
    size_t cap;
    char *buf;
    if (startup_due(r->final)) {
        buf = out->room(out->ctx, &cap);
        out->line(out->ctx, WJ_REC_STARTUP, buf, format_startup(buf, cap));
    }
    if (periodic_ready) {
        out->line(out->ctx, WJ_REC_SAMPLE, periodic_line, periodic_len);
        periodic_ready = 0;
    }
    // The last sample of the image: what it used since the previous one.
    if (r->final && wj_proc.config.sample_ms > 0) {
        buf = out->room(out->ctx, &cap);
        out->line(out->ctx, WJ_REC_SAMPLE, buf, take_sample(buf, cap, 1, r));
    }
}

static void vitals_forked(void) {
    vitals_forked_child();
    periodic_ready = 0;
    baseline_taken = 0;
}

const wj_component wj_vitals_component = {
    .name = "vitals",
    .main_entered = vitals_main_entered,
    .forked_child = vitals_forked,
    .next_due = vitals_next_due,
    .round = vitals_round,
    .collect = vitals_collect,
};
