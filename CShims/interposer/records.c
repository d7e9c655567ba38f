// The records the C side writes itself, and the exec chain (records.h).
#include "records.h"
#include "process.h"
#include "wedjat_json.h"
#include <elf.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sched.h>
#include "sys_raw.h"
#endif

#define WEDJAT_SCHEMA 1

const char *const wj_record_type_names[WJ_REC_TYPES] = {
    "process_start", "fork", "drops", "exec_failed", "warning", "startup", "sample", "stall", "modules",
    "segment_end", "segments_removed", "process_end"};

// argv as main() received it: copied before the program can rewrite its argv area
// (setproctitle), which would also defeat the redaction of what it held.
// A short argv stays in the small state (no page of its own).
WJ_BIG static char argv_big[32768];
static char argv_small[256];
static char *argv_copy = argv_small;
static size_t argv_len;
static int argv_truncated, argv_kept;
// process_start's argv members as formatted from the copy (redaction included), kept for the
// forked children, which would otherwise each redact the same argv again.
WJ_COLD static char argv_members[4096];
static size_t argv_members_len;
static int argv_members_state;   // 0 not formatted yet, 1 kept, -1 longer than the buffer

void wj_records_keep_argv(int argc, char **argv) {
    size_t total = 0;
    for (int i = 0; i < argc && argv && argv[i]; i++) total += strlen(argv[i]) + 1;
    argv_copy = total <= sizeof argv_small ? argv_small : argv_big;
    size_t cap = total <= sizeof argv_small ? sizeof argv_small : sizeof argv_big;
    size_t used = 0;
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (used + n > cap) { argv_truncated = 1; break; }
        memcpy(argv_copy + used, argv[i], n);
        used += n;
    }
    argv_len = used;
    argv_kept = 1;
    argv_members_state = 0;
}

static void header(wj_json *j, const char *type, uint64_t mono, int tid) {
    wj_json_begin(j);
    wj_json_str(j, "type", type);
    wj_json_int(j, "ts", wj_epoch_us(mono));
    wj_json_int(j, "pid", wj_proc.pid);
    if (tid) wj_json_int(j, "tid", tid);
}

static size_t done(wj_json *j) {
    wj_json_end(j);
    wj_json_newline(j);
    return j->overflow ? 0 : j->len;
}

// Logical CPUs the process may run on, as nproc(1) counts them: its affinity mask (one system
// call; the online count from sysfs costs a new process about 20 us). sysconf if that fails.
static long logical_cpus(void) {
    cpu_set_t set;
    long n = syscall(SYS_sched_getaffinity, 0, sizeof set, &set);   // bytes of mask written
    if (n > 0) {
        long count = 0;
        const unsigned long *w = (const unsigned long *)&set;
        for (long i = 0; i < n / (long)sizeof *w; i++) count += __builtin_popcountl(w[i]);
        if (count > 0) return count;
    }
    return sysconf(_SC_NPROCESSORS_ONLN);
}

// CPU brand string straight from the CPU: /proc/cpuinfo costs milliseconds on some VMs. Each
// CPUID traps to the hypervisor in a VM (about 5 us here): every x86-64 CPU has the brand
// leaves, so there the maximum leaf is not asked first.
static void cpu_model_uncached(char *out, size_t cap);

// Read once per process chain: forked children inherit it (the parent reads it before its
// first fork, wj_records_warm_for_children) and exec'd images get it from the exec hint.
// Other images read it from the per-user tmpfs directory of the hints (file "cpu", written
// by the first image that asked the CPU).
static char cpu_model_cached[128];
static int cpu_model_known;
static int cpu_model_asked;   // asked the CPU in this image: the cache is left with process_start
static int cpu_cache_take(void);
static void cpu_cache_leave(void);

// may_open: not on an app thread, where the cache's fd would take one of the app's numbers.
static void cpu_model(char *out, size_t cap, int may_open) {
    if (!cpu_model_known && !(may_open && cpu_cache_take())) {
        cpu_model_uncached(cpu_model_cached, sizeof cpu_model_cached);
        cpu_model_known = 1;
        cpu_model_asked = 1;
    }
    wj_copy_str(out, cap, cpu_model_cached);
}

static void cpu_model_uncached(char *out, size_t cap) {
    out[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned int regs[12];
#if defined(__x86_64__)
    int has_brand = 1;
#else
    int has_brand = __get_cpuid_max(0x80000000, 0) >= 0x80000004;
#endif
    if (has_brand) {
        for (unsigned i = 0; i < 3; i++)
            __cpuid(0x80000002 + i, regs[i * 4], regs[i * 4 + 1], regs[i * 4 + 2], regs[i * 4 + 3]);
        char brand[49];
        memcpy(brand, regs, 48);
        brand[48] = 0;
        const char *s = brand;
        while (*s == ' ') s++;
        size_t n = strlen(s);
        while (n && s[n - 1] == ' ') n--;
        if (n >= cap) n = cap - 1;
        memcpy(out, s, n);
        out[n] = 0;
        return;
    }
#endif
    WJ_BIG static char info[16384];
    if (wj_read_file("/proc/cpuinfo", info, sizeof info) <= 0) return;
    const char *keys[] = {"model name", "Model", "cpu model", 0};
    for (int k = 0; keys[k]; k++) {
        const char *p = strstr(info, keys[k]);
        if (!p) continue;
        p = strchr(p, ':');
        if (!p) continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, "\n");
        if (n >= cap) n = cap - 1;
        memcpy(out, p, n);
        out[n] = 0;
        return;
    }
}

// Field n (1-based, as in proc(5)) of a /proc/.../stat line; the command name (field 2) may
// hold spaces and parentheses, so counting starts after its last ')'.
const char *wj_stat_field(const char *stat, int n) {
    const char *p = wj_strrchr(stat, ')');
    if (!p || n < 3) return 0;
    p++;  // the space before field 3
    for (int field = 3; field < n && p; field++) p = wj_strchr(p + 1, ' ');
    return p ? p + 1 : 0;
}

// Field 22 of /proc/self/stat (start time in clock ticks since boot); shared by an exec chain.
static int read_start_ticks(unsigned long long *ticks) {
    char stat[1024];
    if (wj_read_file("/proc/self/stat", stat, sizeof stat) <= 0) return 0;
    const char *f = wj_stat_field(stat, 22);
    if (!f) return 0;
    *ticks = wj_parse_u64(f, 0);
    return 1;
}

static unsigned long long cached_ticks;
static pid_t cached_ticks_pid;

uint64_t wj_clock_ticks_per_second(void) {
    static uint64_t hz;
    if (!hz) {
        long v = (long)getauxval(AT_CLKTCK);   // what sysconf(_SC_CLK_TCK) answers
        hz = v > 0 ? (uint64_t)v : 100;
    }
    return hz;
}

// A forked child's start ticks without reading /proc/self/stat: the kernel takes them from
// CLOCK_BOOTTIME inside fork (start_boottime, in /proc as ns / (1e9 / hz), truncated), so a
// read before the fork and one in the child that fall in the same tick give them exactly.
// When they do not (a tick boundary in between, about one fork in a hundred), /proc is read.
static uint64_t boot_before_fork_ns;

static uint64_t boottime_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void wj_records_fork_prepare(void) {
    (void)wj_clock_ticks_per_second();
    boot_before_fork_ns = boottime_ns();
}

void wj_records_forked(void) {
    cpu_model_asked = 0;   // the parent leaves the cache (each child would write it again)
    uint64_t per_tick = 1000000000ull / wj_clock_ticks_per_second();
    uint64_t before = boot_before_fork_ns / per_tick, after = boottime_ns() / per_tick;
    if (boot_before_fork_ns && before == after) {
        cached_ticks = before;
        cached_ticks_pid = wj_proc.pid;
    }
}

uint64_t wj_proc_start_ticks(void) {
    if (cached_ticks_pid != wj_proc.pid) {
        unsigned long long t = 0;
        if (!read_start_ticks(&t)) return 0;
        cached_ticks = t;
        cached_ticks_pid = wj_proc.pid;
    }
    return cached_ticks;
}

// ---------------------------------------------------------------- the exec chain

// Hints live on tmpfs when there is one (a file created there costs microseconds, on a disk up
// to a third of a millisecond), in a directory of this user's that nobody else can write, and
// otherwise in the log directory. Both are independent of the working directory, so that an
// image exec'd after a chdir finds them even with a relative WEDJAT_DIR.
static void shm_dir(char *out, unsigned euid) {   // at least 32 bytes
    memcpy(out, "/dev/shm/wedjat-", 16);
    wj_fmt_u64(out + 16, euid);
}

// The tmpfs directory, when it is this user's and nobody else can write it (never created
// here: hint_dir does that). Its size in *size (tmpfs: 40 bytes and 20 per entry).
static int shm_dir_ours(char *out, long *size) {   // at least 32 bytes
    unsigned euid = (unsigned)syscall(SYS_geteuid);
    shm_dir(out, euid);
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, out, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != euid || (st.st_mode & 077))
        return 0;
    if (size) *size = (long)st.st_size;
    return 1;
}

static int hint_dir(char *out, size_t cap, int shm) {
    if (shm) {
        shm_dir(out, (unsigned)syscall(SYS_geteuid));
        char why[WJ_WARNING_LEN];
        return wj_ensure_dir(out, why, sizeof why);
    }
    wj_copy_str(out, cap, wj_proc.config.dir);
    return 1;
}

static void hint_path(char *out, size_t cap, const char *dir, int shm) {
    size_t n = wj_copy_str(out, cap - 32, dir);
    const char *name = shm ? "/exec." : "/.exec.";
    size_t name_len = strlen(name);
    memcpy(out + n, name, name_len);
    wj_fmt_i64(out + n + name_len, wj_proc.pid);
}

// The CPU model's cache in the tmpfs directory (cpu_model): one line of printable ASCII, in a
// directory of this user's that nobody else can write.
static int cpu_cache_take(void) {
    char path[64], buf[sizeof cpu_model_cached];
    if (!shm_dir_ours(path, 0)) return 0;
    memcpy(path + strlen(path), "/cpu", 5);
    long len = wj_read_file(path, buf, sizeof buf);
    if (len <= 0 || len >= (long)sizeof buf - 1) return 0;
    for (long i = 0; i < len; i++)
        if (buf[i] < 0x20 || buf[i] > 0x7e) return 0;
    memcpy(cpu_model_cached, buf, (size_t)len + 1);
    cpu_model_known = 1;
    return 1;
}

// Written under another name, then renamed: a reader never sees half of it.
static void cpu_cache_leave(void) {
    if (!cpu_model_cached[0]) return;
    char dir[WJ_PATH_MAX], tmp[WJ_PATH_MAX + 32], path[WJ_PATH_MAX + 32];
    if (!hint_dir(dir, sizeof dir, 1)) return;
    size_t n = wj_copy_str(tmp, sizeof tmp - 32, dir);
    memcpy(path, tmp, n);
    memcpy(path + n, "/cpu", 5);
    memcpy(tmp + n, "/.cpu.", 6);
    wj_fmt_i64(tmp + n + 6, wj_proc.pid);
    int fd = wj_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    size_t len = strlen(cpu_model_cached);
    int ok = wj_sys_write(fd, cpu_model_cached, len) == (long)len;
    wj_sys_close(fd);
    if (!ok || syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, path) != 0) syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
}

// The connections the next image goes on with (conns.c), gathered on the exec'ing thread.
WJ_COLD static char exec_carry[2048];
static size_t exec_carry_len;

void wj_exec_hint_set_carry(const char *lines, size_t n) {
    exec_carry_len = n < sizeof exec_carry ? n : 0;
    if (exec_carry_len) memcpy(exec_carry, lines, exec_carry_len);
}

void wj_exec_hint_leave(const char *raw_dir_env) {
    char dir[WJ_PATH_MAX], path[WJ_PATH_MAX + 32];
    int shm = hint_dir(dir, sizeof dir, 1);
    if (!shm) hint_dir(dir, sizeof dir, 0);
    hint_path(path, sizeof path, dir, shm);
    int fd = wj_sys_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    char buf[5 * WJ_PATH_MAX];
    // Line 1: pid, process start ticks (a stale hint of an earlier process with this pid has
    // other ones) and the moment of the exec (CLOCK_MONOTONIC, the same clock in every image).
    // "%d %llu %llu\n%s\n%s\n%s\t%s\n" (each string is shorter than WJ_PATH_MAX: it fits)
    size_t n = wj_fmt_i64(buf, wj_proc.pid);
    buf[n++] = ' ';
    n += wj_fmt_u64(buf + n, wj_proc_start_ticks());
    buf[n++] = ' ';
    n += wj_fmt_u64(buf + n, wj_now_ns());
    // The CPU model, known here, costs the next image three trapping CPUIDs (about 25 us).
    if (cpu_model_known && cpu_model_cached[0]) {
        buf[n++] = ' ';
        n += wj_copy_str(buf + n, sizeof cpu_model_cached, cpu_model_cached);
    }
    const char *strings[4] = {wj_proc.log_path, wj_proc.parent_log, wj_proc.config.dir, raw_dir_env ? raw_dir_env : ""};
    const char seps[4] = {'\n', '\n', '\n', '\t'};
    for (int i = 0; i < 4; i++) {
        buf[n++] = seps[i];
        n += wj_copy_str(buf + n, WJ_PATH_MAX, strings[i]);
    }
    buf[n++] = '\n';
    // Then a line per connection carried over ("c ..."): older images read four lines only.
    if (exec_carry_len && exec_carry_len <= sizeof buf - n) {
        memcpy(buf + n, exec_carry, exec_carry_len);
        n += exec_carry_len;
    }
    wj_sys_write(fd, buf, n);
    wj_sys_close(fd);
}

void wj_exec_hint_forget(void) {
    char dir[WJ_PATH_MAX], path[WJ_PATH_MAX + 32];
    for (int shm = 1; shm >= 0; shm--) {
        if (!hint_dir(dir, sizeof dir, shm)) continue;
        hint_path(path, sizeof path, dir, shm);
        syscall(SYS_unlinkat, AT_FDCWD, path, 0);
    }
}


static char *next_line(char *p) {
    char *nl = p ? (char *)wj_strchr(p, '\n') : 0;
    if (!nl) return 0;
    *nl = 0;
    return nl + 1;
}

// No hint for this image: the tmpfs hint directory was empty when it started (a hint for it
// is written before its exec, never after). Spares the take a second look.
static int hint_none;

// The hint as the constructor's look (wj_exec_hint_carried) found it, for the take at the
// image's end: the file is this process's alone (its name is the pid, written before the
// exec), so the look removes it at once and the take reads this copy (four system calls less
// for every image exec'd from a watched one). Removed at the look, not at the take: an image
// killed before its first flush (`ls | head`'s SIGPIPE) would leave it behind, and one file in
// the tmpfs directory costs every later process its lookup. Longer hints are read again.
WJ_COLD static char hint_seen[1024];
static long hint_seen_len;

// The hint file's text (NUL-terminated), removed when `take`; its length, <= 0 when none.
static long hint_read(char *buf, size_t cap, int take) {
    if (hint_none) return -1;
    if (hint_seen_len > 0 && take && (size_t)hint_seen_len < cap) {
        memcpy(buf, hint_seen, (size_t)hint_seen_len + 1);
        long len = hint_seen_len;
        hint_seen_len = 0;
        return len;
    }
    char dir[WJ_PATH_MAX], path[WJ_PATH_MAX + 32];
    long len = -1;
    for (int shm = 1; shm >= 0 && len <= 0; shm--) {
        if (shm) {
            // Only look into a directory that is ours (hint_dir would create it).
            long size;
            if (!shm_dir_ours(dir, &size)) continue;
            // An empty directory on tmpfs is 40 bytes (two entries of its nominal 20): no hint
            // in it, and none can appear for this image (its previous image wrote it before the
            // exec). An open that would fail less (once the CPU model's cache is there, 20 more
            // bytes: the open is made).
            if (size == 40) {
                hint_none = 1;
                break;
            }
        } else {
            hint_dir(dir, sizeof dir, 0);
        }
        hint_path(path, sizeof path, dir, shm);
        len = wj_read_file(path, buf, cap - 1);
        if (len > 0 && take) syscall(SYS_unlinkat, AT_FDCWD, path, 0);
        if (len > 0 && !take && (size_t)len < sizeof hint_seen) {
            memcpy(hint_seen, buf, (size_t)len);
            hint_seen[len] = 0;
            hint_seen_len = len;
            syscall(SYS_unlinkat, AT_FDCWD, path, 0);
        }
        // The directory on tmpfs is ours and usable: an image exec'ing from here left its hint
        // there (hint_dir), never in the log directory. One lookup less per process.
        if (shm) break;
    }
    if (len > 0) buf[len] = 0;
    else hint_none = 1;   // looked where the take would: nothing there now, nothing later
    return len;
}

// Same pid and same process start time: written by this very process's previous image.
static int hint_is_ours(const char *buf) {
    const char *space = wj_strchr(buf, ' ');
    return space && buf[0] >= '0' && buf[0] <= '9' && wj_parse_u64(buf, 0) == (uint64_t)wj_proc.pid &&
           wj_parse_u64(space + 1, 0) == wj_proc_start_ticks();
}

int wj_exec_hint_carried(char *lines, size_t cap, char *parent, size_t pcap) {
    char buf[5 * WJ_PATH_MAX];
    if (hint_read(buf, sizeof buf, 0) <= 0 || !hint_is_ours(buf)) return 0;
    char *line2 = next_line(buf), *line3 = next_line(line2), *line4 = next_line(line3);
    char *rest = next_line(line4);
    if (!rest || rest[0] != 'c') return 0;
    wj_copy_str(parent, pcap, line3);
    wj_copy_str(lines, cap, rest);
    return 1;
}

int wj_exec_hint_take(wj_exec_hint *out) {
    // Only the fields read later are cleared (the struct is 1.5 KiB of mostly untouched .bss).
    out->from[0] = out->parent[0] = out->dir[0] = 0;
    out->exec_mono = 0;
    char buf[5 * WJ_PATH_MAX];
    long len = hint_read(buf, sizeof buf, 1);
    if (len <= 0) return 0;
    char *line2 = next_line(buf), *line3 = next_line(line2), *line4 = next_line(line3);
    if (!line3) return 0;
    next_line(line4);
    char *space = (char *)wj_strchr(buf, ' ');
    if (!hint_is_ours(buf)) return 0;
    const char *end1;
    wj_parse_u64(space + 1, &end1);
    if (*end1 == ' ') {
        const char *end2;
        out->exec_mono = wj_parse_u64(end1 + 1, &end2);
        if (*end2 == ' ' && end2[1] && !cpu_model_known) {
            wj_copy_str(cpu_model_cached, sizeof cpu_model_cached, end2 + 1);
            cpu_model_known = 1;
        }
    }
    wj_copy_str(out->from, sizeof out->from, line2);
    wj_copy_str(out->parent, sizeof out->parent, line3);
    // The chain's log directory, for an image whose WEDJAT_DIR is the same relative path.
    char *tab = line4 ? (char *)wj_strchr(line4, '\t') : 0;
    if (tab) {
        *tab = 0;
        if (tab[1] && tab[1] != '/' && strcmp(tab + 1, wj_proc.config.dir_env) == 0)
            wj_copy_str(out->dir, sizeof out->dir, line4);
    }
    return 1;
}

// ASCII case-insensitive equality (the environment is not the locale's business).
static int ascii_ieq(const char *a, const char *b) {
    for (;; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
        if (x != y) return 0;
        if (!x) return 1;
    }
}

static int contains(const char *s, const char *word) {
    size_t n = wj_strnlen(word, 64);
    for (; *s; s++)
        if (wj_starts_with(s, word, n)) return 1;
    return 0;
}

// Will the new image load wedjat? Only then is a hint for it worth leaving (one nobody reads
// would stay behind), and otherwise process_end says why it will not be watched.
const char *wj_exec_unwatched_reason(const char *target, char *const envp[]) {
    const char *preload = 0;
    int disabled = 0;
    for (char *const *e = envp; e && *e; e++) {
        if (wj_starts_with(*e, "LD_PRELOAD=", 11)) preload = *e + 11;
        else if (wj_starts_with(*e, "WEDJAT_DISABLE=", 15))
            disabled = ascii_ieq(*e + 15, "1") || ascii_ieq(*e + 15, "true") || ascii_ieq(*e + 15, "yes") ||
                       ascii_ieq(*e + 15, "on");
    }
    if (!preload || !contains(preload, "libwedjat")) return "no_preload";
    if (disabled) return "disabled";
    if (!target || !wj_strchr(target, '/')) return 0;  // found on PATH by exec*p: assume dynamic
    // One lookup of the path: the checks go through the open file (by path only when it cannot
    // be read, as an execute-only binary).
    struct stat st;
    int fd = wj_sys_open(target, O_RDONLY | O_CLOEXEC, 0);
    int have = fd >= 0 ? syscall(SYS_fstat, fd, &st) == 0 : syscall(SYS_newfstatat, AT_FDCWD, target, &st, 0) == 0;
    if (have && S_ISREG(st.st_mode)) {
        // Secure execution: the loader ignores LD_PRELOAD (or wedjat disables itself).
        const char *why = 0;
        if ((st.st_mode & S_ISUID) && st.st_uid != (uid_t)syscall(SYS_geteuid)) why = "setuid";
        else if ((st.st_mode & S_ISGID) && st.st_gid != (gid_t)syscall(SYS_getegid)) why = "setgid";
        else if ((fd >= 0 ? syscall(SYS_fgetxattr, fd, "security.capability", 0, 0)
                          : syscall(SYS_getxattr, target, "security.capability", 0, 0)) > 0)
            why = "file_capabilities";
        if (why) {
            if (fd >= 0) wj_sys_close(fd);
            return why;
        }
    }
    if (fd < 0) return 0;
    unsigned char head[4096];
    long n = wj_sys_read(fd, head, sizeof head);
    wj_sys_close(fd);
    if (n >= 2 && head[0] == '#' && head[1] == '!') return 0;
    if (n < (long)sizeof(Elf64_Ehdr) || memcmp(head, ELFMAG, SELFMAG) != 0 || head[EI_CLASS] != ELFCLASS64) return 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)head;
    for (int i = 0; i < eh->e_phnum; i++) {
        uint64_t off = eh->e_phoff + (uint64_t)i * eh->e_phentsize;
        if (off + sizeof(Elf64_Phdr) > (uint64_t)n) return 0;  // headers beyond what we read
        if (((const Elf64_Phdr *)(head + off))->p_type == PT_INTERP) return 0;
    }
    return "static";  // LD_PRELOAD does not apply
}

static const char *argv_mode_name(int mode) {
    return mode == WJ_ARGV_FULL ? "full" : mode == WJ_ARGV_NONE ? "none" : "redact";
}

// argv, argv_truncated and argv_mode: a huge argv is cut past `limit` bytes of the record.
static void argv_members_to(wj_json *j, size_t limit) {
    // argv as main() got it; before main (or without it), what the kernel holds now. Each
    // argument redacted per WEDJAT_ARGV.
    WJ_BIG static char proc_cmdline[32768];
    WJ_BIG static char redacted[4096];
    const char *cmdline = argv_copy;
    long len = (long)argv_len;
    int truncated = argv_truncated;
    if (!argv_kept) {
        len = wj_read_file("/proc/self/cmdline", proc_cmdline, sizeof proc_cmdline);
        truncated = len >= (long)sizeof proc_cmdline - 1;
        cmdline = proc_cmdline;
    }
    wj_json_begin_array(j, "argv");
    const char *previous = 0;
    for (long off = 0, index = 0; len > 0 && off < len; index++) {
        const char *arg = cmdline + off;
        size_t arg_len = wj_strnlen(arg, (size_t)(len - off));
        if (wj_proc.config.argv_mode == WJ_ARGV_NONE && index > 0) break;
        if (j->len + arg_len + 64 > limit) { truncated = 1; break; }
        if (wj_proc.config.argv_mode == WJ_ARGV_REDACT && index > 0) {
            // A short argument is redacted on the stack (masks make it at most about 3 times
            // longer), a long one in the big buffer.
            char small[1024];
            int fits = arg_len * 4 + 64 < sizeof small;
            wj_redact_arg(previous, arg, fits ? small : redacted, fits ? sizeof small : sizeof redacted);
            wj_json_str(j, 0, fits ? small : redacted);
        } else {
            wj_json_strn(j, 0, arg, arg_len);
        }
        previous = arg;
        off += (long)arg_len + 1;
    }
    wj_json_end_array(j);
    if (truncated) wj_json_bool(j, "argv_truncated", 1);
    wj_json_str(j, "argv_mode", argv_mode_name(wj_proc.config.argv_mode));
}

// Kept only when short: no argument of it is then near the cut (half of process_start's room).
static void keep_argv_members(void) {
    wj_json j;
    wj_json_init(&j, argv_members, sizeof argv_members);
    argv_members_to(&j, (size_t)-1 / 2);
    argv_members_len = j.overflow ? 0 : j.len;
    argv_members_state = j.overflow ? -1 : 1;
}

void wj_records_warm_for_children(void) {
    char unused[8];
    cpu_model(unused, sizeof unused, 0);
    if (argv_kept && !argv_members_state) keep_argv_members();
}

size_t wj_format_process_start(char *buf, size_t cap, const wj_exec_hint *hint) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "process_start", wj_proc.init_mono_ns, wj_proc.pid);
    wj_json_int(&j, "schema", WEDJAT_SCHEMA);
    wj_json_str(&j, "wedjat_version", WEDJAT_VERSION);

    wj_json_str(&j, "exe", wj_proc.exe);

    if (argv_kept && !argv_members_state) keep_argv_members();
    if (argv_kept && argv_members_state > 0) wj_json_members(&j, argv_members, argv_members_len);
    else argv_members_to(&j, cap / 2);

    const char *parent = wj_proc.parent_log[0] ? wj_proc.parent_log : hint ? hint->parent : "";
    wj_json_int(&j, "ppid", wj_proc.ppid);
    wj_json_str(&j, "parent_log", parent[0] ? parent : 0);
    wj_json_str(&j, "exec_from", hint && hint->from[0] ? hint->from : 0);
    wj_json_str(&j, "log", wj_proc.log_path);   // segment 0's path, in every segment

    struct utsname u;
    if (syscall(SYS_uname, &u) == 0) {
        char kernel[sizeof u.sysname + sizeof u.release + sizeof u.version + 4];
        size_t k = wj_copy_str(kernel, sizeof u.sysname, u.sysname);
        kernel[k++] = ' ';
        k += wj_copy_str(kernel + k, sizeof u.release, u.release);
        kernel[k++] = ' ';
        wj_copy_str(kernel + k, sizeof u.version, u.version);
        wj_json_str(&j, "hostname", u.nodename);
        wj_json_str(&j, "kernel", kernel);
        wj_json_str(&j, "arch", u.machine);
    }
    char model[128];
    cpu_model(model, sizeof model, 1);
    // Here, not where the CPU was asked (a fork's prepare runs on an app thread): process_start
    // is formatted where wedjat's fds cannot take one of the app's numbers.
    if (cpu_model_asked) {
        cpu_model_asked = 0;
        cpu_cache_leave();
    }
    wj_json_str(&j, "cpu_model", model);
    wj_json_int(&j, "cpus", logical_cpus());
    struct sysinfo si;
    if (syscall(SYS_sysinfo, &si) == 0) wj_json_uint(&j, "mem_total_bytes", (uint64_t)si.totalram * si.mem_unit);

    unsigned long long ticks = wj_proc_start_ticks();
    if (ticks) {
        // Boot time in wall-clock terms = realtime - boottime, both read now.
        struct timespec rt, bt;
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_BOOTTIME, &bt);
        uint64_t hz = wj_clock_ticks_per_second();
        int64_t boot_us = ((int64_t)rt.tv_sec - bt.tv_sec) * 1000000 + ((int64_t)rt.tv_nsec - bt.tv_nsec) / 1000;
        wj_json_int(&j, "process_start_ts", boot_us + (int64_t)(ticks * 1000000ull / hz));
        wj_json_uint(&j, "proc_start_ticks", ticks);
    }
    if (wj_proc.main_mono_ns) wj_json_int(&j, "main_ts", wj_epoch_us(wj_proc.main_mono_ns));

    wj_json_begin_object(&j, "config");
    wj_json_str(&j, "dir", wj_proc.config.dir);
    wj_json_str(&j, "argv", argv_mode_name(wj_proc.config.argv_mode));
    wj_json_int(&j, "flush_ms", wj_proc.config.flush_ms);
    wj_json_int(&j, "max_connections", wj_proc.config.max_connections);
    wj_json_int(&j, "log_max_mb", wj_proc.config.log_max_mb);
    wj_json_bool(&j, "http", wj_proc.config.http);
    wj_json_int(&j, "capture_bytes", wj_proc.config.capture_bytes);
    wj_json_int(&j, "http_records", wj_proc.config.http_records);
    wj_json_int(&j, "sample_ms", wj_proc.config.sample_ms);
    wj_json_int(&j, "stall_ms", wj_proc.config.stall_ms);
    wj_json_int(&j, "segment_mb", wj_proc.config.segment_mb);
    wj_json_int(&j, "segment_s", wj_proc.config.segment_s);
    wj_json_int(&j, "retain_mb", wj_proc.config.retain_mb);
    wj_json_int(&j, "dir_retain_mb", wj_proc.config.dir_retain_mb);
    wj_json_begin_array(&j, "redact");
    if (wj_proc.config.redact & WJ_REDACT_QUERY) wj_json_str(&j, 0, "query");
    if (wj_proc.config.redact & WJ_REDACT_USERINFO) wj_json_str(&j, 0, "userinfo");
    if (wj_proc.config.redact & WJ_REDACT_FRAGMENT) wj_json_str(&j, 0, "fragment");
    wj_json_end_array(&j);
    wj_json_end(&j);
    wj_json_begin_array(&j, "config_warnings");
    for (int i = 0; i < wj_proc.config.warning_count; i++) wj_json_str(&j, 0, wj_proc.config.warnings[i]);
    wj_json_end_array(&j);
    return done(&j);
}

size_t wj_format_fork(char *buf, size_t cap, const wj_event *ev) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "fork", ev->t_start, ev->tid);
    wj_json_int(&j, "child_pid", (int64_t)ev->a);
    return done(&j);
}

size_t wj_format_drops(char *buf, size_t cap, uint64_t now, uint64_t events, uint64_t records) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "drops", now, 0);
    wj_json_uint(&j, "dropped_events", events);
    wj_json_uint(&j, "dropped_records", records);
    return done(&j);
}

size_t wj_format_exec_failed(char *buf, size_t cap, uint64_t now, int tid) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "exec_failed", now, tid);
    wj_json_str(&j, "exec", wj_proc.exec_target);
    return done(&j);
}

static int end_signal;
void wj_records_end_signal(int sig) { end_signal = sig; }

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return 0;
    }
}

static const char *end_reason_name(int reason) {
    switch (reason) {
    case WJ_END_SIGNAL: return "signal";
    case WJ_END__EXIT: return "_exit";
    case WJ_END_QUICK_EXIT: return "quick_exit";
    case WJ_END_ABORT: return "abort";
    case WJ_END_EXEC: return "exec";
    default: return "exit";
    }
}

size_t wj_format_warning(char *buf, size_t cap, uint64_t now, const char *kind, const char *message) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "warning", now, 0);
    if (kind) wj_json_str(&j, "kind", kind);
    wj_json_str(&j, "message", message);
    return done(&j);
}

size_t wj_format_process_end(char *buf, size_t cap, uint64_t now, int tid, const wj_end_counts *c) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    header(&j, "process_end", now, tid);
    int reason = wj_proc.end_reason;
    wj_json_str(&j, "reason", end_reason_name(reason));
    if (reason == WJ_END_SIGNAL && signal_name(end_signal)) wj_json_str(&j, "signal", signal_name(end_signal));
    if (reason != WJ_END_EXEC && reason != WJ_END_ABORT && reason != WJ_END_SIGNAL && wj_proc.has_exit_status)
        wj_json_int(&j, "exit_status", wj_proc.exit_status);
    else
        wj_json_null(&j, "exit_status");
    if (reason == WJ_END_EXEC) {
        wj_json_str(&j, "exec", wj_proc.exec_target);
        // The next image will not be watched, and why: no preload, disabled, setuid, static...
        if (c->exec_unwatched) wj_json_str(&j, "exec_unwatched", c->exec_unwatched);
    }
    int64_t dur = wj_epoch_us(now) - wj_epoch_us(wj_proc.init_mono_ns);
    wj_json_int(&j, "duration_us", dur > 0 ? dur : 0);
    wj_json_key(&j, "records");
    wj_json_raw(&j, "{");
    wj_json_raw(&j, c->records ? c->records : "");
    wj_json_raw(&j, "}");
    wj_json_uint(&j, "dropped_events", c->dropped_events);
    wj_json_uint(&j, "dropped_records", c->dropped_records);
    wj_json_uint(&j, "untracked_connections", c->untracked);
    wj_json_uint(&j, "open_connections", c->open_connections);
    // Captured bytes the HTTP parser never saw (its ring was full): exchanges they cut short
    // are http records with error "desync"; those within skipped bodies cost nothing.
    wj_json_uint(&j, "capture_dropped", c->capture_dropped);
    if (c->stalls_lost) wj_json_uint(&j, "stalls_lost", c->stalls_lost);
    if (c->bytes_after_end) wj_json_uint(&j, "bytes_after_end", c->bytes_after_end);
    return done(&j);
}
