// The agent thread (agent.h). As a sampler it wakes for the components' rounds and writes
// their records; as the full agent it also drains the rings every 20 ms while events flow
// and hands network events to the Swift aggregator, which it loads 20 ms after it became the
// full agent (or at the end, if that comes first): loading it at once competed with the app
// for the CPU, and the memory map, just when it was connecting (curl's own connect time grew
// by up to 13 ms on 2 vCPUs).
//
// Its first act is to give itself an empty fd table of its own (close_range with
// CLOSE_RANGE_UNSHARE): every fd wedjat opens from then on (the log, /proc and sysfs reads,
// the libraries it loads) is in that table, never in the app's. The app's numbering, its
// RLIMIT_NOFILE and the size of its fd table are the app's alone, and nothing the app closes
// (close_range, a close loop, dup2) can touch wedjat's fds. When the thread ends, its table
// goes with it: the log is reopened by path by whoever writes next.
#include "agent.h"
#include "framing.h"
#include "wedjat_http_counts.h"
#include "component.h"
#include "conns.h"
#include "context.h"
#include "events.h"
#include "process.h"
#include "real.h"
#include "records.h"
#include "stalls.h"
#include "vitals.h"
#include "wake.h"
#include "wedjat_agent_api.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sys_raw.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

static const wj_component *const components[] = {&wj_vitals_component, &wj_stalls_component};
#define N_COMPONENTS (sizeof components / sizeof *components)

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int role;                  // WJ_ROLE_*: what the running thread is
static _Atomic uint32_t generation;       // a thread started under an older generation ends
static _Atomic uint32_t exited;           // futex: generation + 1 of the last thread that returned
static _Atomic int live_threads;          // started and not yet returned
static _Atomic int agent_tid;
static _Atomic int fork_waiters;          // fork() wants the agent lock: the drain yields it

// Requests from other threads, each with a futex that says it was done.
static _Atomic uint32_t final_requested, final_done;
static _Atomic uint32_t open_requested, open_done;
static _Atomic uint32_t flush_requested, flush_done;
static wj_final final_request;

// The Swift aggregator library.
static int agent_lib_state;               // 0 not tried, 1 loaded, -1 failed for good
static wj_agent_ops agent_ops;
static wj_agent_api agent_api;
static uint64_t events_without_agent;     // network events no aggregator could take
WJ_COLD static char agent_error[256];
static int agent_error_reported;

// Records written by C and the output buffer they go through (under agent_lock only).
static uint64_t c_written[WJ_REC_TYPES], c_pending[WJ_REC_TYPES];
static uint64_t c_dropped_records;
static uint64_t reported_drop_events, reported_drop_records;
static int start_written;
static int forked_image;                  // this image began with fork(), not exec: no exec hint
static int exec_failed_tid;               // an exec that failed, to record at the next flush
static uint64_t exec_failed_mono;
// The output buffer. Its start holds the image's header (process_start), kept there for the log
// writer, which writes it first into every file; then come the lines of the current flush,
// each formatted in place (out_room). A short process's whole log is then one page of it,
// written in one batch.
#define WJ_RECORD_MAX (64 * 1024)             // the longest line a record may have
// Aligned to a page by hand (an aligned(4096) variable would start all of .bss on a page of
// its own): a short process's whole output, header included, then stays in one page.
#define WJ_OUT_SIZE (3 * WJ_RECORD_MAX)
WJ_BIG_HOT static char out_raw[WJ_OUT_SIZE + 4096];
#define out_buf ((char *)(((uintptr_t)out_raw + 4095) & ~(uintptr_t)4095))
static size_t out_base;                       // the header's bytes at its start
static size_t out_len;                        // end of the pending lines (>= out_base)

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, 0, 0);
}

// Waits until *word is nonzero, at most timeout_ms. 1 when it is.
static int wait_set(_Atomic uint32_t *word, long timeout_ms) {
    struct timespec deadline, now;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    while (!atomic_load(word)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left_ns = (deadline.tv_sec - now.tv_sec) * 1000000000L + (deadline.tv_nsec - now.tv_nsec);
        if (left_ns <= 0) return 0;
        struct timespec ts = {left_ns / 1000000000L, left_ns % 1000000000L};
        futex(word, FUTEX_WAIT_PRIVATE, 0, &ts);
    }
    return 1;
}

static void set_and_wake(_Atomic uint32_t *word) {
    atomic_store(word, 1);
    futex(word, FUTEX_WAKE_PRIVATE, INT32_MAX, 0);
}

// ---------------------------------------------------------------- output

static void written(int ok) {
    for (int t = 0; t < WJ_REC_TYPES; t++) {
        if (ok) c_written[t] += c_pending[t]; else c_dropped_records += c_pending[t];
        c_pending[t] = 0;
    }
    out_len = out_base;
}

static void write_out(void) {
    if (out_len == out_base) return;
    written(wj_logfile_write(&wj_proc.log, out_buf + out_base, out_len - out_base));
}

// Room for one record at the end of the pending lines, WJ_RECORD_MAX bytes (the lines so far
// are written first when less is left). Format there and hand it to append_from: no copy.
static char *out_room(size_t *cap) {
    if (WJ_OUT_SIZE - out_len < WJ_RECORD_MAX) write_out();
    *cap = WJ_RECORD_MAX;
    return out_buf + out_len;
}

static void append_from(int type, const char *line, size_t len) {
    if (len == 0) { c_dropped_records++; return; }  // did not fit its buffer: counted, not cut
    if (line != out_buf + out_len) {  // formatted elsewhere: copied
        if (out_len + len > WJ_OUT_SIZE) write_out();
        if (out_len + len > WJ_OUT_SIZE) { c_dropped_records++; return; }
        memcpy(out_buf + out_len, line, len);
    }
    out_len += len;
    c_pending[type]++;
}

// The C side's own records, formatted in place: FORMAT is a call with `buf_, cap_` in it.
#define APPEND(type, FORMAT)                        \
    do {                                            \
        size_t cap_;                                \
        char *buf_ = out_room(&cap_);               \
        append_from((type), buf_, (FORMAT));        \
    } while (0)

static void out_line(void *ctx, int type, const char *line, size_t len) {
    (void)ctx;
    append_from(type, line, len);
}

static char *out_room_for(void *ctx, size_t *cap) {
    (void)ctx;
    return out_room(cap);
}

static const wj_out component_out = {out_line, out_room_for, 0};

// ---------------------------------------------------------------- the Swift aggregator

// The agent library sits next to libwedjat.so. Loaded by wedjat's thread only.
static int ensure_agent_library(void) {
    if (agent_lib_state) return agent_lib_state > 0;
    if (!wj_context_is_internal()) return 0;   // an ending thread never loads it
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
    // Lazy binding: of its ~150 imported functions a process's aggregator calls a third, each
    // bound at its first call, instead of all looked up through the host's every library at
    // load (about 0.1 ms). A missing symbol version still fails the dlopen itself.
    void *handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
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
    agent_api.http_record_take = wj_framing_record_take;
    agent_api.http_counts_take = wj_http_counts_take;
    if (!init || init(&agent_api, &agent_ops) != 0) {
        snprintf(agent_error, sizeof agent_error, "%.200s does not match this libwedjat.so", path);
        return 0;
    }
    agent_lib_state = 1;
    return 1;
}

// Captured bytes travel in variable-length slots: header, then `len` bytes. They are handed
// to the aggregator where they are, and the slot released after (a copy out was about 200
// instructions a request on a busy HTTP/2 server).
static const wj_payload *peek_payload(uint64_t *pos) { return (const wj_payload *)wj_ring_peek(&wj_payload_ring, pos); }

static uint64_t event_time(const wj_event *ev) {
    return ev->kind == WJ_EV_CONN_CLOSE ? ev->t_end : ev->t_start;
}

// A fork() is waiting for the agent lock: hand it over and take it back once the fork is done
// (the drain would otherwise hold it for a whole batch: milliseconds on a busy server).
static void yield_to_fork(void) {
    if (WJ_LIKELY(!atomic_load_explicit(&fork_waiters, memory_order_relaxed))) return;
    pthread_mutex_unlock(&agent_lock);
    for (int i = 0; i < 20000 && atomic_load(&fork_waiters); i++) sched_yield();
    pthread_mutex_lock(&agent_lock);
}

// ---------------------------------------------------------------- the flush

// The image's first record: process_start, the log writer's header (it lands before anything
// else in every file this image writes, a recreated one included). The exec chain's hint is
// taken first: it names the previous image and may say where the chain's logs go.
// Invalid WEDJAT_* values: said once on the app's terminal (never into output that may be
// captured), once per log directory and set of warnings however many processes start (a
// marker file in the log directory). The warnings are also in every process_start. The
// terminal is reached through /proc/self/fd/2: wedjat's thread does not share the app's fds.
static void warn_config_once(void) {
    if (wj_proc.config.warning_count == 0) return;
    int tty = wj_sys_open("/proc/self/fd/2", O_WRONLY | O_NOCTTY | O_CLOEXEC, 0);
    if (tty < 0) return;
    struct termios t;
    if (syscall(SYS_ioctl, tty, TCGETS, &t) != 0) {
        wj_sys_close(tty);
        return;
    }
    uint64_t hash = 1469598103934665603ull;
    for (int i = 0; i < wj_proc.config.warning_count; i++)
        for (const char *p = wj_proc.config.warnings[i]; *p; p++) hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
    char why[WJ_WARNING_LEN], marker[WJ_PATH_MAX + 32];
    int fresh = 0;
    if (wj_ensure_dir(wj_proc.config.dir, why, sizeof why)) {
        snprintf(marker, sizeof marker, "%s/.warned-%016llx", wj_proc.config.dir, (unsigned long long)hash);
        int fd = wj_sys_open(marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            wj_sys_close(fd);
            fresh = 1;
        }
    }
    for (int i = 0; fresh && i < wj_proc.config.warning_count; i++) {
        char text[WJ_WARNING_LEN + 16];
        int n = snprintf(text, sizeof text, "wedjat: %s\n", wj_proc.config.warnings[i]);
        if (n > 0) wj_sys_write(tty, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1));
    }
    wj_sys_close(tty);
}

static void ensure_header(void) {
    if (start_written) return;
    start_written = 1;
    warn_config_once();
    wj_exec_hint exec_hint;   // on the stack: only its strings' first bytes are touched
    exec_hint.from[0] = exec_hint.parent[0] = exec_hint.dir[0] = 0;
    exec_hint.exec_mono = 0;
    // A forked child is a new process: no earlier image of it could have left a hint.
    if (!forked_image && wj_exec_hint_take(&exec_hint)) {
        if (exec_hint.exec_mono) wj_vitals_exec_called(exec_hint.exec_mono);
        if (exec_hint.dir[0] && strcmp(exec_hint.dir, wj_proc.config.dir) != 0) {
            // A relative WEDJAT_DIR after a chdir: the chain's directory, resolved by its first image.
            wj_copy_str(wj_proc.config.dir, sizeof wj_proc.config.dir, exec_hint.dir);
            wj_process_new_identity_path();
        }
    }
    // At the start of the output buffer (nothing is pending yet: the header is the image's first
    // line, formatted before any other).
    write_out();
    out_base = out_len = 0;
    size_t len = wj_format_process_start(out_buf, WJ_RECORD_MAX, &exec_hint);
    if (len) {
        out_base = out_len = len;
        wj_logfile_set_header(&wj_proc.log, out_buf, len);
    } else {
        c_dropped_records++;
    }
}

// Drain the rings and write everything that is ready. Called with agent_lock held.
static void flush_locked(const wj_round *r) {
    ensure_header();
    // Connections still open: what their HTTP framers hold is handed over before the drain.
    if (r->final) wj_framing_end_all(r->now);
    // Connections closed during a call that has not returned for a second (left by longjmp,
    // or blocked on a socket another thread closed) end now; at exit, all of them.
    wj_conns_end_overdue(r->now, r->final ? 0 : 1000000000ull);
    if (exec_failed_tid) {
        APPEND(WJ_REC_EXEC_FAILED, wj_format_exec_failed(buf_, cap_, exec_failed_mono, exec_failed_tid));
        exec_failed_tid = 0;
    }
    // The rings, merged in time order: a connection names the host its address was resolved
    // from just before, so a lookup must be seen before the connect that followed it; and the
    // bytes of a connection come between its open and close events. A ring found empty is
    // polled again before each choice, events first, then captured bytes, then lookups: what
    // an event depends on (a close on its connection's bytes, an open on its lookup) was
    // pushed before it, so it is visible to the polls that follow. (Bytes that outrun their
    // open event are kept by the aggregator until it comes.)
    WJ_COLD static wj_event ev;
    WJ_COLD static wj_dns_event dns;
    const wj_payload *payload = 0;   // in its slot, held until handled
    uint64_t payload_pos = 0;
    int have_ev = 0, have_dns = 0;
    unsigned handled = 0;
    for (;;) {
        if ((++handled & 63) == 0) yield_to_fork();
        if (!have_ev) have_ev = wj_ring_pop(&wj_event_ring, &ev);
        if (!payload) payload = peek_payload(&payload_pos);
        if (!have_dns) have_dns = wj_ring_pop(&wj_dns_ring, &dns);
        if (!have_ev && !payload && !have_dns) break;
        uint64_t t_ev = have_ev ? event_time(&ev) : UINT64_MAX;
        uint64_t t_dns = have_dns ? dns.t_end : UINT64_MAX;
        uint64_t t_payload = payload ? payload->t : UINT64_MAX;
        if (have_dns && t_dns <= t_ev && t_dns <= t_payload) {
            if (!dns.kind) {
                // an abandoned slot (context.c): counted as dropped by the ring
            } else if (ensure_agent_library()) {
                write_out();
                agent_ops.handle_dns(&dns);
            } else {
                events_without_agent++;
            }
            have_dns = wj_ring_pop(&wj_dns_ring, &dns);
            continue;
        }
        // Ties go to the bytes: a connection's last messages carry its close's time.
        if (payload && t_payload <= t_ev) {
            if (payload->kind && ensure_agent_library()) {
                write_out();
                agent_ops.handle_payload(payload);
            }
            wj_ring_release_slot(&wj_payload_ring, payload_pos);
            payload = peek_payload(&payload_pos);
            continue;
        }
        if (!ev.kind) {
            // an abandoned slot
        } else if (ev.kind == WJ_EV_FORK) {
            APPEND(WJ_REC_FORK, wj_format_fork(buf_, cap_, &ev));
        } else if (ensure_agent_library()) {
            // The aggregator writes on its own when its buffer fills: our lines (process_start
            // first of all) must be in the file before.
            write_out();
            agent_ops.handle(&ev);
        } else {
            events_without_agent++;
        }
        have_ev = wj_ring_pop(&wj_event_ring, &ev);
    }
    if (events_without_agent && agent_lib_state <= 0 && !agent_error[0])
        snprintf(agent_error, sizeof agent_error,
                 "%llu network events were not aggregated: the process ended before wedjat's thread could start "
                 "(its network activity was inside a signal handler)",
                 (unsigned long long)events_without_agent);
    if ((agent_lib_state < 0 || events_without_agent) && agent_error[0] && !agent_error_reported) {
        agent_error_reported = 1;
        APPEND(WJ_REC_WARNING, wj_format_warning(buf_, cap_, wj_now_ns(), "aggregator", agent_error));
    }
    for (size_t i = 0; i < N_COMPONENTS; i++)
        if (components[i]->collect) components[i]->collect(r, &component_out);
    uint64_t now = wj_now_ns();
    // Open connections, counted before the final flush reports them (open_at_exit) and forgets them.
    uint64_t open = agent_lib_state > 0 ? agent_ops.open_connections() : 0;
    if (agent_lib_state > 0) {
        write_out();  // keep the file in order: our lines before the agent's
        agent_ops.flush(r->final, now, r->final ? final_request.tid : 0);
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
        APPEND(WJ_REC_DROPS, wj_format_drops(buf_, cap_, now, drop_events, drop_records));
        wj_proc.log.reserve_ok = 1;
        write_out();
        wj_proc.log.reserve_ok = 0;
    }
    if (r->final) {
        // process_end counts the lines before it; those still in out_buf count as written
        // here and are moved to dropped if the write below fails.
        char counts[1024];
        size_t n = 0;
        counts[0] = 0;
        if (agent_lib_state > 0) n = agent_ops.record_counts(counts, sizeof counts);
        c_written[WJ_REC_START] = wj_proc.log.header != 0;  // lands with the batch below at the latest
        // The writer's own records (segments).
        c_written[WJ_REC_SEGMENT_END] = wj_proc.log.seg.records_written[0];
        c_written[WJ_REC_SEGMENTS_REMOVED] = wj_proc.log.seg.records_written[1];
        c_written[WJ_REC_WARNING] += wj_proc.log.seg.records_written[2];
        for (int t = 0; t < WJ_REC_TYPES; t++) {
            if (!(c_written[t] + c_pending[t])) continue;
            size_t name_len = strlen(wj_record_type_names[t]);
            if (n + name_len + 28 >= sizeof counts) break;
            counts[n++] = '"';
            memcpy(counts + n, wj_record_type_names[t], name_len);
            n += name_len;
            counts[n++] = '"';
            counts[n++] = ':';
            n += wj_fmt_u64(counts + n, c_written[t] + c_pending[t]);
            counts[n++] = ',';
            counts[n] = 0;
        }
        if (n && n < sizeof counts && counts[n - 1] == ',') counts[--n] = 0;
        wj_end_counts ec = {
            .records = counts,
            .dropped_events = drop_events,
            .dropped_records = c_dropped_records + agent_dropped,
            .untracked = wj_untracked_fds + (agent_lib_state > 0 ? agent_ops.untracked_connections() : 0),
            .open_connections = open,
            .capture_dropped = wj_ring_dropped(&wj_payload_ring),
            .stalls_lost = wj_stalls_lost(),
            .bytes_after_end = atomic_load_explicit(&wj_bytes_after_end, memory_order_relaxed),
        };
        if (wj_proc.end_reason == WJ_END_EXEC)
            ec.exec_unwatched = wj_exec_unwatched_reason(final_request.exec_target, final_request.exec_envp);
        // process_end goes with the lines before it: one write (the writer splits the batch when
        // only process_end may use the room kept for it).
        size_t cap;
        char *buf = out_room(&cap);
        size_t len = wj_format_process_end(buf, cap, now, final_request.tid, &ec);
        if (len) {
            out_len += len;
            c_pending[WJ_REC_END]++;
            written(wj_logfile_write_final(&wj_proc.log, out_buf + out_base, out_len - out_base, len));
        } else {
            c_dropped_records++;
            write_out();
        }
        wj_proc.log.final_phase = 1;
        if (wj_proc.end_reason == WJ_END_EXEC && !ec.exec_unwatched) wj_exec_hint_leave(wj_proc.config.dir_env);
        return;
    }
    write_out();
}

// ---------------------------------------------------------------- the thread

// ---------------------------------------------------------------- the app's last thread

// When main() called pthread_exit and the app's last thread ends, glibc calls exit(0) once no
// thread is left, but wedjat's threads are still there: without this the process would never
// end. The keeper (started by main's pthread_exit, sharing the app's fd table, so the app's
// fds outlive its threads as they would) then calls exit(0) as glibc would have.
static _Atomic int keeper_alive;
static _Atomic uint32_t keeper_go;

static void *keeper_main(void *arg) {
    (void)arg;
    wj_context_mark_internal();
    prctl(PR_SET_NAME, "wedjat-keeper", 0, 0, 0);
    while (!atomic_load(&keeper_go)) futex(&keeper_go, FUTEX_WAIT_PRIVATE, 0, 0);
    WJ_REAL(exit)(0);
    return 0;
}

void wj_agent_keep_app_table(void) {
    if (atomic_exchange(&keeper_alive, 1)) return;
    sigset_t all;
    sigfillset(&all);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_attr_setsigmask_np(&attr, &all);
    pthread_t t;
    if (WJ_REAL(pthread_create)(&t, &attr, keeper_main, 0) != 0) atomic_store(&keeper_alive, 0);
    pthread_attr_destroy(&attr);
}

// True when every thread but wedjat's is gone (the leader stays a zombie until then).
static int last_thread_standing(void) {
    char stat[1024];
    if (wj_read_file("/proc/self/stat", stat, sizeof stat) <= 0) return 0;
    const char *f = wj_stat_field(stat, 20);  // num_threads
    long threads = f ? strtol(f, 0, 10) : 0;
    long ours = atomic_load(&live_threads) + atomic_load(&keeper_alive);
    if (threads == ours) return 1;
    if (threads != ours + 1) return 0;
    // One more: done only if that one is the exited (zombie) leader, whose state
    // /proc/self/stat shows (field 3).
    const char *state = wj_stat_field(stat, 3);
    return state && (*state == 'Z' || *state == 'X');
}

static wj_round round_now(int final) {
    wj_round r = {.now = wj_now_ns(), .agent_tid = atomic_load(&agent_tid), .agent_threads = atomic_load(&live_threads),
                  .final = final, .log_in_app_table = 0};
    return r;
}

static void thread_returns(uint32_t gen) {
    // The log fd is in this thread's table, which goes with it.
    wj_logfile_close(&wj_proc.log);
    atomic_store(&agent_tid, 0);
    atomic_fetch_sub(&live_threads, 1);
    atomic_store(&exited, gen + 1);
    futex(&exited, FUTEX_WAKE_PRIVATE, INT32_MAX, 0);
}

// The full agent: the aggregator loaded and the log open now, while the app works.
static void become_full(void) {
    pthread_mutex_lock(&agent_lock);
    ensure_agent_library();
    ensure_header();
    wj_logfile_open_now(&wj_proc.log);
    pthread_mutex_unlock(&agent_lock);
}

static void *agent_main(void *arg) {
    uint32_t gen = (uint32_t)(uintptr_t)arg;
    wj_context_mark_internal();
    syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE);   // an empty fd table of its own
    prctl(PR_SET_NAME, "wedjat", 0, 0, 0);
    atomic_store(&agent_tid, wj_gettid());
    int idle_rounds = 0, full = 0;
    uint64_t last_alone_check = 0, last_flush = wj_now_ns(), full_since = 0;
    for (;;) {
        if (!full && atomic_load(&role) == WJ_ROLE_FULL) {
            if (!full_since) full_since = wj_now_ns();
            if (wj_now_ns() - full_since >= 20000000ull) {
                become_full();
                full = 1;
                idle_rounds = 0;
            }
        }
        wj_wake_rearm();
        uint32_t seen = atomic_load(&wj_wake_word);
        int busy = (full || full_since) && idle_rounds <= 5;
        long ms = busy ? 20 : wj_proc.config.flush_ms;
        uint64_t now = wj_now_ns();
        uint64_t wait_ns = (uint64_t)ms * 1000000ull;
        uint64_t flush_due = last_flush + wait_ns;
        wait_ns = flush_due > now ? flush_due - now : 0;
        for (size_t i = 0; i < N_COMPONENTS; i++) {
            uint64_t due = components[i]->next_due ? components[i]->next_due() : 0;
            if (due) {
                uint64_t until = due > now ? due - now : 0;
                if (until < wait_ns) wait_ns = until;
            }
        }
        if (wait_ns > 0 && !atomic_load(&final_requested) && !atomic_load(&open_requested) &&
            !atomic_load(&flush_requested) && atomic_load(&generation) == gen) {
            struct timespec ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
            futex(&wj_wake_word, FUTEX_WAIT_PRIVATE, seen, &ts);
        }
        if (atomic_load(&generation) != gen) {
            // Stopped (a pause): nothing more.
            thread_returns(gen);
            return 0;
        }
        // Taken (cleared): after an exec that failed, the image goes on and a thread started
        // later must not find the exec's request and end the image again.
        if (atomic_exchange(&final_requested, 0)) {
            pthread_mutex_lock(&agent_lock);
            wj_round r = round_now(1);
            flush_locked(&r);
            atomic_store(&role, WJ_ROLE_NONE);
            pthread_mutex_unlock(&agent_lock);
            thread_returns(gen);
            set_and_wake(&final_done);
            return 0;
        }
        if (atomic_load(&open_requested)) {
            pthread_mutex_lock(&agent_lock);
            ensure_header();
            wj_logfile_open_now(&wj_proc.log);
            pthread_mutex_unlock(&agent_lock);
            atomic_store(&open_requested, 0);
            set_and_wake(&open_done);
        }
        // The components' rounds (samples, the watchdog), without the agent lock: a slow sysfs
        // file never holds up the app's fork() or a flush.
        wj_round r = round_now(0);
        for (size_t i = 0; i < N_COMPONENTS; i++)
            if (components[i]->round) components[i]->round(&r);
        uint32_t req = atomic_exchange(&wj_requests, 0) & (WJ_REQ_RECORDS);
        now = wj_now_ns();
        int flush_round = now >= flush_due || req || atomic_load(&flush_requested) || atomic_load(&wj_wake_word) != seen;
        if (!flush_round) continue;
        last_flush = now;
        pthread_mutex_lock(&agent_lock);
        uint64_t before = atomic_load(&wj_event_ring.deq) + atomic_load(&wj_payload_ring.deq);
        r = round_now(0);
        flush_locked(&r);
        idle_rounds = atomic_load(&wj_event_ring.deq) + atomic_load(&wj_payload_ring.deq) == before ? idle_rounds + 1 : 0;
        if (atomic_load(&flush_requested)) {
            atomic_store(&flush_requested, 0);
            set_and_wake(&flush_done);
        }
        // At most every 100 ms: on a busy server reading /proc/self/stat every drain was 2%
        // of the agent's time; an app whose last thread ended waits for it as long at most.
        if (wj_proc.main_mono_ns && now - last_alone_check >= 100000000ull) {
            last_alone_check = now;
            if (last_thread_standing()) {
                // Do what glibc would have done on the app's last thread: exit(0), after our end.
                wj_proc.end_reason = WJ_END_EXIT;
                if (!wj_proc.has_exit_status) {
                    wj_proc.exit_status = 0;
                    wj_proc.has_exit_status = 1;
                }
                final_request.tid = wj_gettid();
                r = round_now(1);
                flush_locked(&r);
                atomic_store(&wj_run_state, WJ_RUN_OFF);
                pthread_mutex_unlock(&agent_lock);
                if (atomic_load(&keeper_alive)) {
                    thread_returns(gen);
                    set_and_wake(&keeper_go);
                    return 0;
                }
                WJ_REAL(exit)(0);
            }
        }
        pthread_mutex_unlock(&agent_lock);
    }
}

int wj_agent_role(void) { return atomic_load(&role); }

int wj_agent_start(int want) {
    int err = errno;
    int expected = WJ_ROLE_NONE;
    if (!atomic_compare_exchange_strong(&role, &expected, want)) {
        if (want == WJ_ROLE_FULL) wj_agent_promote();
        errno = err;
        return 1;
    }
    // The thread blocks every signal: process-directed signals keep going to the app's
    // threads, exactly as without wedjat. The mask is set by pthread_create itself (no window,
    // no sigprocmask calls on the app's thread).
    sigset_t all;
    sigfillset(&all);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1024 * 1024);
    pthread_attr_setsigmask_np(&attr, &all);
    pthread_t t;
    uint32_t gen = atomic_load(&generation);
    atomic_fetch_add(&live_threads, 1);
    int ok = WJ_REAL(pthread_create)(&t, &attr, agent_main, (void *)(uintptr_t)gen) == 0;
    if (!ok) {
        atomic_fetch_sub(&live_threads, 1);
        atomic_store(&role, WJ_ROLE_NONE);
    }
    pthread_attr_destroy(&attr);
    errno = err;
    return ok;
}

void wj_agent_promote(void) {
    int s = WJ_ROLE_SAMPLER;
    if (atomic_compare_exchange_strong(&role, &s, WJ_ROLE_FULL)) wj_wake();
}

int wj_agent_stop(void) {
    int was = atomic_load(&role);
    if (was == WJ_ROLE_NONE || !atomic_compare_exchange_strong(&role, &was, WJ_ROLE_NONE)) return 0;
    uint32_t gen = atomic_fetch_add(&generation, 1);  // the running thread's
    wj_wake();
    // Until its function returned (bounded: a thread stuck in a flush does not hang the app).
    struct timespec ts = {0, 5 * 1000000L};
    for (int i = 0; i < 400; i++) {
        uint32_t v = atomic_load(&exited);
        if (v == gen + 1) break;
        futex(&exited, FUTEX_WAIT_PRIVATE, v, &ts);
    }
    return was;
}

int wj_agent_final_on_thread(const wj_final *f, long timeout_ms) {
    if (atomic_load(&role) == WJ_ROLE_NONE || !atomic_load(&live_threads)) return -1;
    final_request = *f;
    atomic_store(&final_done, 0);
    atomic_store(&final_requested, 1);
    wj_wake();
    return wait_set(&final_done, timeout_ms);
}

void wj_agent_final_here(const wj_final *f) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_mutex_timedlock(&agent_lock, &deadline) != 0) return;
    final_request = *f;
    wj_round r = round_now(1);
    r.agent_tid = 0;
    r.agent_threads = 0;
    // The log is created in the app's table for this moment (nothing else of the app runs), by
    // the flush's first write (a file opened just before would be checked again before it).
    r.log_in_app_table = 1;
    flush_locked(&r);
    wj_logfile_close(&wj_proc.log);
    pthread_mutex_unlock(&agent_lock);
}

int wj_agent_open_log(long timeout_ms) {
    if (atomic_load(&role) == WJ_ROLE_NONE) return 0;
    atomic_store(&open_done, 0);
    atomic_store(&open_requested, 1);
    wj_wake();
    return wait_set(&open_done, timeout_ms) && wj_logfile_fd(&wj_proc.log) >= 0;
}

int wj_agent_flush_now(long timeout_ms) {
    if (atomic_load(&role) == WJ_ROLE_NONE) return 0;
    atomic_store(&flush_done, 0);
    atomic_store(&flush_requested, 1);
    wj_wake();
    return wait_set(&flush_done, timeout_ms);
}

void wj_agent_exec_failed(int tid) {
    // The final flush ended the thread (if there was one) and closed the log. The image goes
    // on: its exec_failed record is written by the next flush, wherever wedjat's fds live then.
    pthread_mutex_lock(&agent_lock);
    exec_failed_tid = tid;
    exec_failed_mono = wj_now_ns();
    wj_proc.log.final_phase = 0;
    pthread_mutex_unlock(&agent_lock);
}

int wj_agent_has_pending_network(void) {
    return wj_event_ring.enq != wj_event_ring.deq || wj_dns_ring.enq != wj_dns_ring.deq ||
           wj_payload_ring.enq != wj_payload_ring.deq;
}

// ---------------------------------------------------------------- fork

// A fork child's final flush (wj_agent_final_here) makes the first calls of these two in most
// processes: bound lazily there, each is looked up by the loader in the child, whose pages of
// the loader's tables fault in again (9 us of a fork + exec child, measured). Called once
// here, in the parent, they are bound for every child.
static void bind_final_flush_calls(void) {
    static int bound;
    if (bound) return;
    bound = 1;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct timespec past = {0, 0};   // a free mutex is taken whatever the deadline
    if (pthread_mutex_timedlock(&m, &past) == 0) pthread_mutex_unlock(&m);
    static const char nl[] = "\n";
    static volatile size_t one = 1;
    static const void *volatile found;
    found = memchr(nl, '\n', one);   // a length the compiler cannot see: the library's call
}

void wj_agent_fork_prepare(void) {
    bind_final_flush_calls();
    atomic_fetch_add(&fork_waiters, 1);
    pthread_mutex_lock(&agent_lock);
}

void wj_agent_fork_parent(void) {
    pthread_mutex_unlock(&agent_lock);
    atomic_fetch_sub(&fork_waiters, 1);
}

void wj_agent_fork_child(void) {
    forked_image = 1;
    pthread_mutex_init(&agent_lock, 0);
    atomic_store(&fork_waiters, 0);
    atomic_store(&role, WJ_ROLE_NONE);   // threads do not survive fork
    atomic_store(&live_threads, 0);
    atomic_store(&keeper_alive, 0);
    atomic_store(&agent_tid, 0);
    atomic_store(&final_requested, 0);
    atomic_store(&open_requested, 0);
    atomic_store(&flush_requested, 0);
    memset(c_written, 0, sizeof c_written);
    memset(c_pending, 0, sizeof c_pending);
    c_dropped_records = 0;
    reported_drop_events = reported_drop_records = 0;
    events_without_agent = 0;
    agent_error_reported = 0;
    if (agent_lib_state < 0) agent_lib_state = 0;
    start_written = 0;
    out_base = out_len = 0;
    // The agent library stays mapped; it notices the new generation and starts afresh.
}

// ---------------------------------------------------------------- components

void wj_components_init(void) {
    for (size_t i = 0; i < N_COMPONENTS; i++)
        if (components[i]->init) components[i]->init();
}

void wj_components_main_entered(void) {
    for (size_t i = 0; i < N_COMPONENTS; i++)
        if (components[i]->main_entered) components[i]->main_entered();
}

void wj_components_forked_child(void) {
    for (size_t i = 0; i < N_COMPONENTS; i++)
        if (components[i]->forked_child) components[i]->forked_child();
}
