// The contract between libwedjat.so (C, preloaded into every process) and
// libwedjat-agent.so (Swift aggregator, dlopen'ed by the agent thread the first time there
// are network events to aggregate). Keeping Swift out of processes that never need it is
// what keeps the start-up cost of a watched `/bin/true` near the C shim's.
#ifndef WEDJAT_AGENT_API_H
#define WEDJAT_AGENT_API_H

#include "wedjat_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WJ_AGENT_API_VERSION 8  // 5: the structure sizes below; 6: http_record_take; 7: wj_process, wj_config and wj_logfile reordered; 8: http_counts_take

enum {
    WJ_END_NONE = 0,
    WJ_END_EXIT = 1,        // return from main or exit()
    WJ_END__EXIT = 2,       // _exit / _Exit
    WJ_END_QUICK_EXIT = 3,
    WJ_END_ABORT = 4,
    WJ_END_EXEC = 5,
    WJ_END_SIGNAL = 6,      // SIGTERM, SIGINT or SIGHUP at their default action (signals.h)
};

// Ordered for a short process's page faults: what every image touches (the scalars, then the
// strings it writes or reads from their first bytes) comes first, in as few pages as possible;
// what only some images use (exec_target, the log's closed segments) comes last. It lives in
// .bss: pages nobody touches cost nothing.
typedef struct wj_process {
    int pid;
    int ppid;
    uint64_t generation;        // +1 in every forked child: the agent drops inherited state
    uint64_t init_mono_ns;      // library initialisation in this image
    uint64_t init_real_ns;
    uint64_t main_mono_ns;      // when main() was entered, 0 if not seen
    int end_reason;
    int exit_status;
    int has_exit_status;
    uint64_t untracked_fds;     // sockets whose fd was too large for the fd table
    char prog[64];
    char exe[WJ_PATH_MAX];          // /proc/self/exe at initialisation
    char log_path[WJ_PATH_MAX];
    char parent_log[WJ_PATH_MAX];     // set in fork children (and carried through exec)
    wj_config config;
    char exec_target[WJ_PATH_MAX];
    wj_logfile log;
} wj_process;

// HTTP/1 exchanges counted where they ended, in C (http_counts.c): what one summary key
// gathered since the agent last took it. The key is the http_summary's (role, scheme,
// method, host, version, status; error none: only whole exchanges are counted there).
// Histograms: the aggregator's log-linear DurationHistogram (WJ_COUNT_HIST buckets of
// microseconds) and its bounded buckets (WJ_COUNT_BOUNDS bounds, HTTPSummary.swift).
#define WJ_COUNT_HIST 1024
#define WJ_COUNT_BOUNDS 14
typedef struct wj_http_count {
    uint8_t server;         // the app's role: 1 server, 0 client
    uint8_t tls;            // parsed from TLS plaintext
    uint8_t minor;          // HTTP/1.<minor> of the request line
    uint8_t method_len, host_len;
    uint16_t status;
    char method[20];
    char host[96];
    uint64_t count, request_bytes, response_bytes;
    uint64_t first_mono, last_mono;           // responses' ends (CLOCK_MONOTONIC ns)
    uint64_t duration_sum, duration_min, duration_max, ttfb_max;   // microseconds
    uint64_t duration_bounded[WJ_COUNT_BOUNDS + 1];
} wj_http_count;

// What libwedjat.so gives the agent.
typedef struct wj_agent_api {
    uint32_t version;
    uint32_t size;
    // The sizes of what the two libraries share, as libwedjat.so was built: an agent built
    // from other headers (a stale build next to a new one) refuses them instead of reading
    // fields at the wrong offsets.
    uint32_t process_size, config_size, logfile_size, event_size, payload_size, dns_size;
    wj_process *proc;
    const char *(*errno_name)(int err);
    // Counters and phase times of a still-open connection, as a close event would carry
    // them; 0 if the slot no longer holds conn_id.
    int (*conn_snapshot)(uint32_t slot, uint64_t conn_id, wj_event *out);
    // Whether an exchange whose request starts at `mono` gets an `http` record (1) or only
    // counts in its summary (0): the one WEDJAT_HTTP_RECORDS budget the C framer draws on too.
    int (*http_record_take)(uint64_t mono);
    // Takes (and zeroes) what summary key `index` counted: 1 with data in *out and the two
    // histograms (WJ_COUNT_HIST counts each, of the exchanges whose value is defined: a
    // response that began before its request has no ttfb), 0 for a key with nothing new, -1
    // past the last key.
    int (*http_counts_take)(uint32_t index, wj_http_count *out, uint32_t *duration_hist, uint32_t *ttfb_hist);
} wj_agent_api;

// What the agent gives back. All are called with the agent lock held, on one thread at a time.
typedef struct wj_agent_ops {
    void (*handle)(const wj_event *ev);
    void (*handle_dns)(const wj_dns_event *ev);
    void (*handle_payload)(const wj_payload *p);
    // Writes pending records; with final != 0 also every connection still open.
    void (*flush)(int final, uint64_t end_mono_ns, int tid);
    // Appends "\"type\":count," for each record type the agent wrote; returns the length.
    size_t (*record_counts)(char *buf, size_t cap);
    uint64_t (*dropped_records)(void);
    uint64_t (*untracked_connections)(void);
    uint64_t (*open_connections)(void);
} wj_agent_ops;

typedef int (*wj_agent_init_fn)(const wj_agent_api *api, wj_agent_ops *ops);
#define WJ_AGENT_INIT_SYMBOL "wedjat_agent_init"
#define WJ_AGENT_LIBRARY "libwedjat-agent.so"

#ifdef __cplusplus
}
#endif
#endif
