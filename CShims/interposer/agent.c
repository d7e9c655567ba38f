// The agent thread and the flush paths. With sampling on (WEDJAT_SAMPLE_MS, the default) the
// thread starts when main() is entered (and in a forked child) as a sampler: it wakes every
// WEDJAT_FLUSH_MS and for each due sample, and does nothing else. The first event that needs
// more (a connection, a lookup, a fork) turns it into the full agent: it drains the ring,
// writes the C-side records (process life cycle) and hands network events to the Swift
// aggregator, which it dlopen()s the first time one arrives. The final flush (exit, exec) runs
// on the agent thread once it is the full agent, so an exiting thread never runs
// allocator-heavy code itself (it may be a signal handler calling _exit); while it is only a
// sampler, the exiting thread does the final flush, as it does when there is no thread.
#include "internal.h"
#include <dlfcn.h>
#include <elf.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// SAMPLING: the thread runs but only samples; RUNNING: the full agent. PAUSED: the thread
// stepped aside for an unshare/setns that needs a single-threaded process.
enum { AGENT_NONE = 0, AGENT_RUNNING = 1, AGENT_FAILED = 2, AGENT_SAMPLING = 3, AGENT_PAUSED = 4 };

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int agent_state;
static _Atomic uint32_t agent_gen;       // a thread started under an older generation ends
static _Atomic uint32_t agent_exited;    // futex: generation + 1 of the last thread that returned
static _Atomic int wanted_running;       // the full agent was asked for while PAUSED
static _Atomic int live_threads;         // agent threads started and not yet returned
_Atomic int wj_agent_tid;
static _Atomic uint32_t wake_word;       // futex: bumped to wake the agent early
static _Atomic int nudged;               // a producer already woke the agent for this drain
static _Atomic uint32_t final_requested;
static _Atomic uint32_t final_done;      // futex: set when the agent finished the final flush
static _Atomic int finished;             // this image's final flush has happened or is under way
static int final_tid;
int wj_main_seen;

// The Swift aggregator library.
static int agent_lib_state;              // 0 not tried, 1 loaded, -1 failed for good
static wj_agent_ops agent_ops;
static wj_agent_api agent_api;
static uint64_t events_without_agent;    // network events lost because the library could not load
static char agent_error[256];
static int agent_error_reported;

// Records written by C, and the output buffer they go through (used under agent_lock only).
enum { C_START, C_FORK, C_DROPS, C_EXEC_FAILED, C_WARNING, C_STARTUP, C_SAMPLE, C_STALL, C_MODULES, C_END, C_TYPES };
static const char *const c_type_names[C_TYPES] = {"process_start", "fork", "drops", "exec_failed", "warning",
                                                  "startup", "sample", "stall", "modules", "process_end"};
static uint64_t c_written[C_TYPES], c_pending[C_TYPES];
static uint64_t c_dropped_records;
static uint64_t reported_drop_events, reported_drop_records;
static int start_written;
WJ_BIG static char out_buf[64 * 1024];
static size_t out_len;
WJ_BIG static char line_buf[64 * 1024];
WJ_BIG static char start_line[64 * 1024];
WJ_BIG static char sample_line[64 * 1024];      // the agent thread's periodic sample

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, 0, 0);
}

static void write_out(void) {
    if (!out_len) return;
    int ok = wj_logfile_write(&wj_proc.log, out_buf, out_len);
    for (int t = 0; t < C_TYPES; t++) {
        if (ok) c_written[t] += c_pending[t]; else c_dropped_records += c_pending[t];
        c_pending[t] = 0;
    }
    out_len = 0;
}

static void append_from(int type, const char *line, size_t len) {
    if (len == 0) { c_dropped_records++; return; }  // did not fit its buffer: counted, not cut
    if (out_len + len > sizeof out_buf) write_out();
    memcpy(out_buf + out_len, line, len);
    out_len += len;
    c_pending[type]++;
}

static void append(int type, size_t len) { append_from(type, line_buf, len); }

static size_t format_warning(const char *message) {
    wj_json j;
    wj_json_init(&j, line_buf, sizeof line_buf);
    wj_json_begin(&j);
    wj_json_str(&j, "type", "warning");
    wj_json_int(&j, "ts", wj_epoch_us(wj_now_ns()));
    wj_json_int(&j, "pid", wj_proc.pid);
    wj_json_str(&j, "message", message);
    wj_json_end(&j);
    wj_json_newline(&j);
    return j.overflow ? 0 : j.len;
}

// The agent library sits next to libwedjat.so.
static int ensure_agent_library(void) {
    if (agent_lib_state) return agent_lib_state > 0;
    agent_lib_state = -1;
    Dl_info info;
    if (!dladdr((void *)&ensure_agent_library, &info) || !info.dli_fname) {
        snprintf(agent_error, sizeof agent_error, "cannot locate libwedjat.so to find %s", WJ_AGENT_LIBRARY);
        return 0;
    }
    char path[WJ_PATH_MAX];
    const char *slash = strrchr(info.dli_fname, '/');
    int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/%s", dir_len, slash ? info.dli_fname : ".", WJ_AGENT_LIBRARY);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(agent_error, sizeof agent_error, "cannot load %.120s: %.110s", path, why ? why : "unknown error");
        return 0;
    }
    wj_agent_init_fn init = (wj_agent_init_fn)dlsym(handle, WJ_AGENT_INIT_SYMBOL);
    agent_api.version = WJ_AGENT_API_VERSION;
    agent_api.size = sizeof agent_api;
    agent_api.process_size = sizeof(wj_process);
    agent_api.config_size = sizeof(wj_config);
    agent_api.logfile_size = sizeof(wj_logfile);
    agent_api.event_size = sizeof(wj_event);
    agent_api.payload_size = sizeof(wj_payload);
    agent_api.dns_size = sizeof(wj_dns_event);
    agent_api.proc = &wj_proc;
    agent_api.errno_name = wj_errno_name;
    agent_api.conn_snapshot = wj_conn_snapshot;
    agent_api.conn_want = wj_conn_want;
    if (!init || init(&agent_api, &agent_ops) != 0) {
        snprintf(agent_error, sizeof agent_error, "%.200s does not match this libwedjat.so", path);
        return 0;
    }
    agent_lib_state = 1;
    return 1;
}

// dlopen opens (and closes) files: keep the app's close_range away meanwhile.
static int ensure_agent_library_locked(void) {
    if (agent_lib_state) return agent_lib_state > 0;
    wj_logfile_lock_fds(&wj_proc.log);
    int ok = ensure_agent_library();
    wj_logfile_unlock_fds(&wj_proc.log);
    return ok;
}

// Captured bytes travel in variable-length slots: header, then `len` bytes.
static int pop_payload(wj_payload *p) {
    return wj_ring_pop_var(&wj_payload_ring, p, offsetof(wj_payload, data), offsetof(wj_payload, len));
}

static uint64_t event_time(const wj_event *ev) {
    return ev->kind == WJ_EV_CONN_CLOSE ? ev->t_end : ev->t_start;
}

// Drain the rings and write everything that is ready. Called with agent_lock held.
static void flush_locked(int final, int tid) {
    if (!start_written) {
        // process_start is the log writer's header: it lands before anything else in every
        // file this image writes (including one recreated after a move or a full disk).
        start_written = 1;
        wj_logfile_lock_fds(&wj_proc.log);  // it reads /proc files
        size_t len = wj_format_process_start(start_line, sizeof start_line);
        wj_logfile_unlock_fds(&wj_proc.log);
        if (len) wj_logfile_set_header(&wj_proc.log, start_line, len);
        else c_dropped_records++;
    }
    // The rings, merged in time order: a connection names the host its address was resolved
    // from just before, so a lookup must be seen before the connect that followed it; and the
    // bytes of a connection come between its open and close events. A ring found empty is
    // polled again before each choice, events first, then captured bytes, then lookups: what
    // an event depends on (a close on its connection's bytes, an open on its lookup) was
    // pushed before it, so it is visible to the polls that follow. (Bytes that outrun their
    // open event are kept by the aggregator until it comes.)
    static wj_event ev;
    static wj_dns_event dns;
    static wj_payload payload;
    int have_ev = 0, have_payload = 0, have_dns = 0;
    for (;;) {
        if (!have_ev) have_ev = wj_ring_pop(&wj_event_ring, &ev);
        if (!have_payload) have_payload = pop_payload(&payload);
        if (!have_dns) have_dns = wj_ring_pop(&wj_dns_ring, &dns);
        if (!have_ev && !have_payload && !have_dns) break;
        uint64_t t_ev = have_ev ? event_time(&ev) : UINT64_MAX;
        uint64_t t_dns = have_dns ? dns.t_end : UINT64_MAX;
        uint64_t t_payload = have_payload ? payload.t : UINT64_MAX;
        if (have_dns && t_dns <= t_ev && t_dns <= t_payload) {
            if (ensure_agent_library_locked()) {
                write_out();
                agent_ops.handle_dns(&dns);
            } else {
                events_without_agent++;
            }
            have_dns = wj_ring_pop(&wj_dns_ring, &dns);
            continue;
        }
        if (have_payload && t_payload < t_ev) {
            if (ensure_agent_library_locked()) {
                write_out();
                agent_ops.handle_payload(&payload);
            }
            have_payload = pop_payload(&payload);
            continue;
        }
        if (ev.kind == WJ_EV_FORK) {
            append(C_FORK, wj_format_fork(line_buf, sizeof line_buf, &ev));
        } else if (ensure_agent_library_locked()) {
            // The aggregator writes on its own when its buffer fills: our lines (process_start
            // first of all) must be in the file before.
            write_out();
            agent_ops.handle(&ev);
        } else {
            events_without_agent++;
        }
        have_ev = wj_ring_pop(&wj_event_ring, &ev);
    }
    if (agent_lib_state < 0 && !agent_error_reported) {
        agent_error_reported = 1;
        append(C_WARNING, format_warning(agent_error));
    }
    if (wj_vitals_startup_due(final)) append(C_STARTUP, wj_vitals_format_startup(line_buf, sizeof line_buf));
    // Stalls that ended (with the module map they need first); at the end, those going on.
    if (final) wj_stalls_final();
    for (int is_modules;;) {
        size_t len = wj_stalls_next_record(line_buf, sizeof line_buf, &is_modules);
        if (!len) break;
        append(is_modules ? C_MODULES : C_STALL, len == (size_t)-1 ? 0 : len);
    }
    // The last sample of the image: what it used since the previous one.
    if (final && wj_proc.config.sample_ms > 0)
        append(C_SAMPLE, wj_vitals_sample(line_buf, sizeof line_buf, 1, atomic_load(&wj_agent_tid)));
    uint64_t now = wj_now_ns();
    if (agent_lib_state > 0) {
        write_out();  // keep the file in order: our lines before the agent's
        agent_ops.flush(final, now, tid);
    }

    uint64_t agent_dropped = agent_lib_state > 0 ? agent_ops.dropped_records() : 0;
    uint64_t drop_events = wj_ring_dropped(&wj_event_ring) + wj_ring_dropped(&wj_dns_ring) + events_without_agent;
    uint64_t drop_records = c_dropped_records + agent_dropped;
    if (drop_events > reported_drop_events || drop_records > reported_drop_records) {
        reported_drop_events = drop_events;
        reported_drop_records = drop_records;
        // What was lost is told even on a nearly full disk: the drops line may use the room
        // kept there for process_end (it is small, and written once per change).
        write_out();
        append(C_DROPS, wj_format_drops(line_buf, sizeof line_buf, now, drop_events, drop_records));
        wj_proc.log.reserve_ok = 1;
        write_out();
        wj_proc.log.reserve_ok = 0;
    }
    if (final) {
        // process_end counts the lines before it; those still in out_buf count as written
        // here and are moved to dropped if the write below fails.
        char counts[1024];
        size_t n = 0;
        counts[0] = 0;
        if (agent_lib_state > 0) n = agent_ops.record_counts(counts, sizeof counts);
        c_written[C_START] = wj_proc.log.header != 0;  // lands with the batch below at the latest
        for (int t = 0; t < C_TYPES; t++)
            if (c_written[t] + c_pending[t] && n < sizeof counts)
                n += (size_t)snprintf(counts + n, sizeof counts - n, "\"%s\":%llu,", c_type_names[t],
                                      (unsigned long long)(c_written[t] + c_pending[t]));
        if (n && n < sizeof counts && counts[n - 1] == ',') counts[--n] = 0;
        uint64_t untracked = wj_proc.untracked_fds + (agent_lib_state > 0 ? agent_ops.untracked_connections() : 0);
        uint64_t open = agent_lib_state > 0 ? agent_ops.open_connections() : 0;
        write_out();
        wj_proc.log.final_phase = 1;
        append(C_END, wj_format_process_end(line_buf, sizeof line_buf, now, tid, counts, drop_events,
                                            c_dropped_records + agent_dropped, untracked, open));
    }
    write_out();
}

// When main() called pthread_exit and the app's last thread ends, glibc calls exit(0) once no
// thread is left, but the agent thread is still one: without this the process would never
// end. True when every thread but this one is gone (the leader stays a zombie until then).
static int last_thread_standing(void) {
    char stat[1024];
    if (wj_read_file("/proc/self/stat", stat, sizeof stat) <= 0) return 0;
    const char *f = wj_stat_field(stat, 20);  // num_threads
    long threads = f ? strtol(f, 0, 10) : 0;
    if (threads != 2) return threads == 1;
    // Two: this thread and one more. Done only if that one is the exited (zombie) leader,
    // whose state /proc/self/stat shows (field 3).
    const char *state = wj_stat_field(stat, 3);
    return state && (*state == 'Z' || *state == 'X');
}

int wj_agent_threads_alive(void) { return atomic_load(&live_threads); }

static void agent_returns(uint32_t gen) {
    atomic_fetch_sub(&live_threads, 1);
    atomic_store(&agent_exited, gen + 1);
    futex(&agent_exited, FUTEX_WAKE_PRIVATE, INT32_MAX, 0);
}

static void *agent_main(void *arg) {
    uint32_t gen = (uint32_t)(uintptr_t)arg;
    wj_mark_agent_thread();
    prctl(PR_SET_NAME, "wedjat", 0, 0, 0);
    atomic_store(&wj_agent_tid, wj_gettid());
    int idle_rounds = 0, first_round = 1;
    uint64_t last_alone_check = 0;
    for (;;) {
        atomic_store(&nudged, 0);
        uint32_t seen = atomic_load(&wake_word);
        if (!atomic_load(&final_requested) && atomic_load(&agent_gen) == gen) {
            // Drain often while events flow (the ring is bounded), at the flush interval when
            // idle or only sampling; never past the next sample.
            int sampling = atomic_load(&agent_state) == AGENT_SAMPLING;
            long ms = !sampling && idle_rounds <= 5 ? 20 : wj_proc.config.flush_ms;
            uint64_t due = wj_vitals_next_due();
            uint64_t now = wj_now_ns();
            if (due) {
                long until = due > now ? (long)((due - now + 999999) / 1000000) : 0;
                if (until < ms) ms = until;
            }
            // The stall watchdog's next round, to the microsecond: a threshold crossing is
            // sampled when it happens.
            uint64_t wait_ns = (uint64_t)ms * 1000000ull;
            uint64_t stall_due = wj_stalls_next_due();
            if (stall_due) {
                uint64_t until = stall_due > now ? stall_due - now : 0;
                if (until < wait_ns) wait_ns = until;
            }
            struct timespec ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
            if (wait_ns > 0) futex(&wake_word, FUTEX_WAIT_PRIVATE, seen, &ts);
            if (wj_stall_ns) {
                wj_stalls_watch();
                if (wj_stalls_ready() && atomic_load(&agent_gen) == gen) {
                    pthread_mutex_lock(&agent_lock);
                    if (atomic_load(&agent_gen) == gen && !atomic_load(&final_requested)) flush_locked(0, 0);
                    pthread_mutex_unlock(&agent_lock);
                }
                // Not a flush round yet: only the watchdog was due.
                if (wj_now_ns() < now + (uint64_t)ms * 1000000ull && !atomic_load(&final_requested) &&
                    atomic_load(&wake_word) == seen)
                    continue;
            }
            // The first event made the sampler the full agent: its first drain comes 20 ms
            // later, as from a thread that event would have started, so the agent does not
            // compete for the CPU with a program that is just starting its work.
            if (sampling && atomic_load(&agent_state) == AGENT_RUNNING && !atomic_load(&final_requested)) {
                idle_rounds = 0;
                continue;
            }
        }
        pthread_mutex_lock(&agent_lock);
        if (atomic_load(&agent_gen) != gen) {
            // Stopped (the exiting thread took the final flush, or a pause): nothing more.
            pthread_mutex_unlock(&agent_lock);
            agent_returns(gen);
            return 0;
        }
        if (atomic_load(&final_requested)) {
            flush_locked(1, final_tid);
            atomic_store(&agent_state, AGENT_NONE);
            atomic_store(&final_done, 1);
            futex(&final_done, FUTEX_WAKE_PRIVATE, 1, 0);
            pthread_mutex_unlock(&agent_lock);
            agent_returns(gen);
            return 0;
        }
        uint64_t before = atomic_load(&wj_event_ring.deq);
        flush_locked(0, 0);
        idle_rounds = atomic_load(&wj_event_ring.deq) == before ? idle_rounds + 1 : 0;
        // At most every 100 ms: on a busy server reading /proc/self/stat every drain was 2%
        // of the agent's time; an app whose last thread ended waits for it as long at most.
        int alone = 0;
        uint64_t now_alone = wj_now_ns();
        if (wj_main_seen && now_alone - last_alone_check >= 100000000ull) {
            last_alone_check = now_alone;
            wj_logfile_lock_fds(&wj_proc.log);  // it reads /proc files
            alone = last_thread_standing();
            wj_logfile_unlock_fds(&wj_proc.log);
        }
        if (alone) {
            // Do what glibc would have done on the app's last thread: exit(0), after our end.
            atomic_store(&finished, 1);
            wj_proc.end_reason = WJ_END_EXIT;
            wj_set_exit_status(0);
            flush_locked(1, wj_gettid());
            pthread_mutex_unlock(&agent_lock);
            WJ_REAL(exit)(0);
        }
        pthread_mutex_unlock(&agent_lock);
        wj_vitals_agent_cpu();

        // Vitals, read without the agent lock: a slow sysfs file never holds up the app's
        // fork() or a flush. The system-wide counters get their first reading on the first
        // round, so the first sample has an interval for them too.
        uint64_t due = wj_vitals_next_due();
        if (!due) continue;
        if (first_round) { wj_vitals_baseline(); first_round = 0; }
        if (wj_now_ns() < due) continue;
        size_t len = wj_vitals_sample(sample_line, sizeof sample_line, 0, wj_gettid());
        pthread_mutex_lock(&agent_lock);
        if (atomic_load(&agent_gen) == gen) {
            append_from(C_SAMPLE, sample_line, len);
            write_out();
        }
        pthread_mutex_unlock(&agent_lock);
    }
}

void wj_flush_now(void) {
    if (atomic_load(&finished)) return;
    pthread_mutex_lock(&agent_lock);
    flush_locked(0, 0);
    pthread_mutex_unlock(&agent_lock);
}

static void wake_agent(void) {
    atomic_fetch_add(&wake_word, 1);
    futex(&wake_word, FUTEX_WAKE_PRIVATE, 1, 0);
}

// The caller moved agent_state from NONE to RUNNING or SAMPLING.
static void start_thread(void) {
    int err = errno;
    // The agent thread blocks every signal: process-directed signals must keep going to the
    // app's threads, exactly as without wedjat. The mask is set by pthread_create itself (no
    // window, no sigprocmask calls on the app's thread); the thread names itself.
    sigset_t all;
    sigfillset(&all);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1024 * 1024);
    pthread_attr_setsigmask_np(&attr, &all);
    pthread_t t;
    atomic_store(&wj_sampler_wanted, 0);
    atomic_store(&wj_agent_tid, 0);
    uint32_t gen = atomic_load(&agent_gen);
    atomic_fetch_add(&live_threads, 1);
    if (WJ_REAL(pthread_create)(&t, &attr, agent_main, (void *)(uintptr_t)gen) != 0) {
        atomic_fetch_sub(&live_threads, 1);
        atomic_store(&agent_state, AGENT_FAILED);
    }
    pthread_attr_destroy(&attr);
    errno = err;
}

void wj_agent_ensure_started(void) {
    int s = atomic_load_explicit(&agent_state, memory_order_relaxed);
    if (WJ_LIKELY(s == AGENT_RUNNING || s == AGENT_FAILED)) return;
    if (atomic_load(&finished)) return;
    if (s == AGENT_PAUSED) { atomic_store(&wanted_running, 1); return; }
    if (s == AGENT_SAMPLING) {
        // The sampler becomes the full agent: wake it so it takes the busy pace (its first
        // drain 20 ms from now).
        if (atomic_compare_exchange_strong(&agent_state, &s, AGENT_RUNNING)) wake_agent();
        return;
    }
    int expected = AGENT_NONE;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, AGENT_RUNNING)) return;
    start_thread();
}

// Once a process has a second thread, every growth of its fd table waits for an RCU grace
// period (the kernel's expand_fdtable: milliseconds). The log fd is put at the top of
// RLIMIT_NOFILE (logfile.c), which grows the table to that size once: grow it now, while the
// process is still single-threaded, so neither the log nor the app's own fds pay it later.
static void reserve_fd_table(void) {
    struct rlimit rl;
    long top = 1024;
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) top = (long)rl.rlim_cur;
    if (top > 65536) top = 65536;  // logfile.c's bound
    wj_logfile_lock_fds(&wj_proc.log);
    if (atomic_load(&wj_proc.log.fd) < 0) {
        int fd = wj_sys_open("/", O_PATH | O_CLOEXEC, 0);
        if (fd >= 0) {
            int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, top - 1);
            if (hi >= 0) wj_sys_close(hi);
            wj_sys_close(fd);
        }
    }
    wj_logfile_unlock_fds(&wj_proc.log);
}

// The thread, sampling (NONE -> SAMPLING).
static void start_sampling_thread(void) {
    int expected = AGENT_NONE;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, AGENT_SAMPLING)) return;
    int err = errno;
    reserve_fd_table();
    errno = err;
    start_thread();
}

static int watch_wanted;   // the stall watchdog asked for the thread: it runs even with sampling off
static void refuse_for_now(void);

// A loop thread or a blocked call needs the stall watchdog, which is the agent thread: start it
// even when sampling is off. Not from a signal handler (see wj_sampler_poke_slow): then the
// next interposed call outside one starts it.
void wj_agent_start_watch(void) {
    if (wj_disabled || atomic_load(&finished) || atomic_load_explicit(&agent_state, memory_order_relaxed) != AGENT_NONE)
        return;
    if (wj_maybe_in_signal_handler()) {
        watch_wanted = 1;
        refuse_for_now();
        atomic_store(&wj_sampler_wanted, 1);
        return;
    }
    start_sampling_thread();
}

void wj_agent_nudge_stall(void) {
    int err = errno;
    wake_agent();
    errno = err;
}

// A process that lives past one interval gets its samples from a thread that otherwise sleeps.
void wj_agent_start_sampler(void) {
    if (wj_disabled || (wj_proc.config.sample_ms <= 0 && !watch_wanted) || atomic_load(&finished)) return;
    start_sampling_thread();
}

// ---------------------------------------------------------------- lazy sampler start

// Creating the sampler thread (and tearing it down at exit) costs a process about 0.1 ms, and
// most processes (a shell's commands, a fork that execs) end long before their first sample.
// So from main() (or a fork) on the thread is only wanted, and starts when the process shows
// it will live: at its first wait (poll, select, epoll) or sleep, its first thread of its own,
// its first network event (wj_agent_ensure_started), or any I/O call once it has lived
// WJ_SAMPLER_GATE_MS. Its first sample still covers the interval from main().
_Atomic int wj_sampler_wanted;
static uint64_t sampler_gate_ns;   // CLOCK_MONOTONIC_COARSE
static int sampler_refused;        // a try was refused (handler possible): every try is gated now

static uint64_t coarse_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void refuse_for_now(void) {
    sampler_refused = 1;
    sampler_gate_ns = coarse_now_ns() + 100 * 1000000ull;
}

void wj_sampler_want(void) {
    if (wj_disabled || wj_proc.config.sample_ms <= 0 || atomic_load(&finished)) return;
    sampler_gate_ns = coarse_now_ns() + WJ_SAMPLER_GATE_MS * 1000000ull;
    sampler_refused = 0;
    atomic_store(&wj_sampler_wanted, 1);
}

// pthread_create is not async-signal-safe: never from a hook that may be running in a signal
// handler (one that interrupted malloc would deadlock). A thread is not in a handler when no
// handled signal is blocked in it (a handler runs with its own signal blocked, unless
// SA_NODEFER); when that cannot be ruled out, the next try is 100 ms later.
void wj_sampler_poke_slow(int gated) {
    // After a refusal even waits and sleeps try at most every 100 ms: a thread that keeps a
    // handled signal blocked must not pay the 64 sigaction queries on each of its waits.
    if ((gated || sampler_refused) && coarse_now_ns() < sampler_gate_ns) return;
    if (!wj_enter()) return;  // inside a hook, wedjat's own thread, a vfork child
    int err = errno;
    if (atomic_load(&agent_state) != AGENT_NONE || atomic_load(&finished)) {
        atomic_store(&wj_sampler_wanted, 0);
    } else if (wj_maybe_in_signal_handler()) {
        refuse_for_now();
    } else {
        wj_agent_start_sampler();
    }
    errno = err;
    wj_leave();
}

WJ_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    wj_sampler_poke(0);
    return WJ_REAL(pthread_create)(thread, attr, start, arg);
}

// ---------------------------------------------------------------- unshare, setns

// The kernel refuses unshare(CLONE_NEWUSER) and setns() into a user or mount namespace
// (EINVAL) when the process has more than one thread. wedjat's thread steps aside for those
// calls: it is stopped, the call made, and a new one started. Returns 1 if it was stopped.
static int pause_agent(void) {
    int s = atomic_load(&agent_state);
    if ((s != AGENT_RUNNING && s != AGENT_SAMPLING) || !atomic_compare_exchange_strong(&agent_state, &s, AGENT_PAUSED))
        return 0;
    atomic_store(&wanted_running, s == AGENT_RUNNING);
    uint32_t gen = atomic_fetch_add(&agent_gen, 1);  // the running thread's
    wake_agent();
    // Until its function returned (bounded: a thread stuck in a flush does not hang the app).
    struct timespec ts = {0, 5 * 1000000L};
    for (int i = 0; i < 400; i++) {
        uint32_t v = atomic_load(&agent_exited);
        if (v == gen + 1) break;
        futex(&agent_exited, FUTEX_WAIT_PRIVATE, v, &ts);
    }
    return 1;
}

static void resume_agent(void) {
    int expected = AGENT_PAUSED;
    int want = atomic_load(&wanted_running) ? AGENT_RUNNING : AGENT_SAMPLING;
    if (atomic_load(&finished) || !atomic_compare_exchange_strong(&agent_state, &expected, want)) return;
    start_thread();
}

// The thread's function has returned, but the kernel counts it until its exit completes (a
// few microseconds): EINVAL meanwhile is retried for at most 2 ms.
#define WJ_SINGLE_THREADED_CALL(call)                                                   \
    do {                                                                                \
        int paused = pause_agent();                                                     \
        int r = call;                                                                   \
        for (int i = 0; paused && r != 0 && errno == EINVAL && i < 40; i++) {           \
            struct timespec ts = {0, 50000};                                            \
            syscall(SYS_nanosleep, &ts, 0);                                             \
            r = call;                                                                   \
        }                                                                               \
        int err = errno;                                                                \
        if (paused) resume_agent();                                                     \
        wj_leave();                                                                     \
        errno = err;                                                                    \
        return r;                                                                       \
    } while (0)

WJ_EXPORT int unshare(int flags) {
    if (!(flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) || !wj_enter())
        return WJ_REAL(unshare)(flags);
    WJ_SINGLE_THREADED_CALL(WJ_REAL(unshare)(flags));
}

WJ_EXPORT int setns(int fd, int nstype) {
    // nstype 0: any namespace the fd names; a pidfd: a set of CLONE_NEW* flags.
    if ((nstype != 0 && !(nstype & (CLONE_NEWUSER | CLONE_NEWNS))) || !wj_enter()) return WJ_REAL(setns)(fd, nstype);
    WJ_SINGLE_THREADED_CALL(WJ_REAL(setns)(fd, nstype));
}

// ---------------------------------------------------------------- fork

void wj_agent_atfork_prepare(void) {
    // The child must not inherit a half-done flush (or half-updated Swift state).
    pthread_mutex_lock(&agent_lock);
}

void wj_agent_atfork_parent(void) { pthread_mutex_unlock(&agent_lock); }

void wj_agent_atfork_child(void) {
    pthread_mutex_init(&agent_lock, 0);
    atomic_store(&agent_state, AGENT_NONE);   // threads do not survive fork
    atomic_store(&finished, 0);
    atomic_store(&final_requested, 0);
    atomic_store(&final_done, 0);
    memset(c_written, 0, sizeof c_written);
    memset(c_pending, 0, sizeof c_pending);
    c_dropped_records = 0;
    reported_drop_events = reported_drop_records = 0;
    events_without_agent = 0;
    start_written = 0;
    out_len = 0;
    atomic_store(&wj_agent_tid, 0);
    atomic_store(&live_threads, 0);
    // The agent library stays mapped; it notices the new generation and starts afresh.
    wj_vitals_forked_child();
    // A child that lives on (a daemon, a worker) is sampled too, from its first wait, sleep or
    // I/O call past the gate; one that execs soon never starts the thread. Here rather than in
    // the fork() wrapper: glibc's own forks (daemon()) run the handlers but not the wrapper.
    wj_sampler_want();
}

// ---------------------------------------------------------------- main, exit, exec

WJ_BIG char wj_argv_copy[32768];
size_t wj_argv_len;
int wj_argv_truncated;

void wj_main_entered(int argc, char **argv) {
    wj_proc.main_mono_ns = wj_now_ns();
    // Copied before the program can rewrite its argv area (setproctitle), which would also
    // defeat the redaction of what it held.
    size_t used = 0;
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (used + n > sizeof wj_argv_copy) { wj_argv_truncated = 1; break; }
        memcpy(wj_argv_copy + used, argv[i], n);
        used += n;
    }
    wj_argv_len = used;
    wj_main_seen = 1;
    if (!wj_disabled) {
        wj_vitals_main_entered();
        wj_sampler_want();
    }
}

void wj_set_exit_status(int status) {
    if (wj_proc.has_exit_status) return;
    wj_proc.exit_status = status;
    wj_proc.has_exit_status = 1;
}

static int wait_final_done(long ms) {
    struct timespec deadline, now;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    while (!atomic_load(&final_done)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left_ns = (deadline.tv_sec - now.tv_sec) * 1000000000L + (deadline.tv_nsec - now.tv_nsec);
        if (left_ns <= 0) return 0;
        struct timespec ts = {left_ns / 1000000000L, left_ns % 1000000000L};
        futex(&final_done, FUTEX_WAIT_PRIVATE, 0, &ts);
    }
    return 1;
}

// A ring is filling faster than the agent's pace drains it: wake it now (one futex wake per
// drain at most; FUTEX_WAKE never blocks).
void wj_agent_nudge(void) {
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != AGENT_RUNNING ||
        atomic_exchange_explicit(&nudged, 1, memory_order_relaxed))
        return;
    atomic_fetch_add(&wake_word, 1);
    futex(&wake_word, FUTEX_WAKE_PRIVATE, 1, 0);
}

void wj_finish(int reason, int status, int has_status) {
    if (has_status) wj_set_exit_status(status);
    if (atomic_exchange(&finished, 1)) return;
    if (wj_proc.end_reason == WJ_END_NONE) wj_proc.end_reason = reason;
    int tid = wj_gettid();
    for (;;) {
        // Only a sampler (or a paused agent): it stops at its next round without writing
        // anything more, and this thread does the final flush.
        int s = atomic_load(&agent_state);
        if ((s != AGENT_SAMPLING && s != AGENT_PAUSED) || atomic_compare_exchange_strong(&agent_state, &s, AGENT_NONE)) {
            if (s == AGENT_SAMPLING || s == AGENT_PAUSED) atomic_fetch_add(&agent_gen, 1);
            break;
        }
    }
    if (atomic_load(&agent_state) == AGENT_RUNNING) {
        final_tid = tid;
        atomic_store(&final_done, 0);
        atomic_store(&final_requested, 1);
        atomic_fetch_add(&wake_word, 1);
        futex(&wake_word, FUTEX_WAKE_PRIVATE, 1, 0);
        if (wait_final_done(3000)) return;
        // The agent did not answer in time: give up rather than hang the exit.
        return;
    }
    // No agent thread (nothing but life-cycle records, or it could not start): do it here.
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_mutex_timedlock(&agent_lock, &deadline) != 0) return;
    flush_locked(1, tid);
    pthread_mutex_unlock(&agent_lock);
}

// Will the new image load wedjat? Only then is a hint for it worth leaving: a hint nobody
// reads would stay in the log directory.
static int next_image_watched(const char *target, char *const envp[]) {
    const char *preload = 0;
    int disabled = 0;
    for (char *const *e = envp; e && *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0) preload = *e + 11;
        else if (strncmp(*e, "WEDJAT_DISABLE=", 15) == 0)
            disabled = strcmp(*e + 15, "1") == 0 || strcasecmp(*e + 15, "true") == 0 ||
                       strcasecmp(*e + 15, "yes") == 0 || strcasecmp(*e + 15, "on") == 0;
    }
    if (!preload || !strstr(preload, "libwedjat") || disabled) return 0;
    if (!target || !strchr(target, '/')) return 1;  // found on PATH by exec*p: assume dynamic
    unsigned char head[4096];
    int fd = wj_sys_open(target, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return 1;
    long n = wj_sys_read(fd, head, sizeof head);
    wj_sys_close(fd);
    if (n >= 2 && head[0] == '#' && head[1] == '!') return 1;
    if (n < (long)sizeof(Elf64_Ehdr) || memcmp(head, ELFMAG, SELFMAG) != 0 || head[EI_CLASS] != ELFCLASS64) return 1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)head;
    for (int i = 0; i < eh->e_phnum; i++) {
        uint64_t off = eh->e_phoff + (uint64_t)i * eh->e_phentsize;
        if (off + sizeof(Elf64_Phdr) > (uint64_t)n) return 1;  // headers beyond what we read
        if (((const Elf64_Phdr *)(head + off))->p_type == PT_INTERP) return 1;
    }
    return 0;  // static: LD_PRELOAD does not apply
}

// Leaves this image's log path (and its parent's) for the next image of this process to
// pick up as exec_from; the process start time in it tells a stale hint from a live one.
static void write_exec_hint(void) {
    int fd = wj_sys_open(wj_proc.exec_hint_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    char buf[3 * WJ_PATH_MAX];
    // Line 1: pid, process start ticks, and the moment of the exec (CLOCK_MONOTONIC ns, the
    // same clock in every image) for the next image's startup record.
    int n = snprintf(buf, sizeof buf, "%d %llu %llu\n%s\n%s\n", wj_proc.pid,
                     (unsigned long long)wj_proc_start_ticks(), (unsigned long long)wj_now_ns(),
                     wj_proc.log.path, wj_proc.parent_log);
    if (n > 0) wj_sys_write(fd, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1));
    wj_sys_close(fd);
}

void wj_before_exec(const char *target, char *const envp[]) {
    snprintf(wj_proc.exec_target, sizeof wj_proc.exec_target, "%s", target ? target : "");
    wj_proc.end_reason = WJ_END_EXEC;
    wj_finish(WJ_END_EXEC, 0, 0);
    wj_logfile_lock_fds(&wj_proc.log);
    if (next_image_watched(target, envp)) write_exec_hint();
    wj_logfile_unlock_fds(&wj_proc.log);
}

void wj_after_failed_exec(void) {
    syscall(SYS_unlinkat, AT_FDCWD, wj_proc.exec_hint_path, 0);
    wj_proc.end_reason = WJ_END_NONE;
    pthread_mutex_lock(&agent_lock);
    atomic_store(&final_requested, 0);
    atomic_store(&finished, 0);
    append(C_EXEC_FAILED, wj_format_exec_failed(line_buf, sizeof line_buf, wj_now_ns(), wj_gettid()));
    write_out();
    pthread_mutex_unlock(&agent_lock);
    // The image goes on: so does its sampling (the full agent restarts at the next event).
    wj_sampler_want();
}
