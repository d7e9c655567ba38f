// The records the C side writes itself: the process life cycle (process_start, fork, drops,
// exec_failed, warning, process_end), formatted into caller buffers without allocation; and
// the exec chain: the hint an exec'ing image leaves for the next image of the same process.
// Runs where wedjat's fds live (the agent thread, or the ending thread with nothing else of
// the app able to run: lifecycle.c).
#ifndef WEDJAT_RECORDS_H
#define WEDJAT_RECORDS_H
#include "base.h"
#include "wedjat_common.h"
#include <stddef.h>

// Record types the C side counts for process_end.
enum { WJ_REC_START, WJ_REC_FORK, WJ_REC_DROPS, WJ_REC_EXEC_FAILED, WJ_REC_WARNING, WJ_REC_STARTUP,
       WJ_REC_SAMPLE, WJ_REC_STALL, WJ_REC_MODULES, WJ_REC_SEGMENT_END, WJ_REC_SEGMENTS_REMOVED,
       WJ_REC_END, WJ_REC_TYPES };
WJ_HIDDEN extern const char *const wj_record_type_names[WJ_REC_TYPES];

// argv as main() received it, NUL-separated (programs such as nginx rewrite it later).
WJ_HIDDEN void wj_records_keep_argv(int argc, char **argv);

// The exec chain, read once by the new image before its first record: the previous image's
// log (exec_from), its parent's, when it called exec, and the log directory the chain
// resolved a relative WEDJAT_DIR to. Returns 1 if this image continues a watched one.
typedef struct wj_exec_hint {
    char from[512];
    char parent[512];
    char dir[512];
    uint64_t exec_mono;
} wj_exec_hint;
WJ_HIDDEN int wj_exec_hint_take(wj_exec_hint *out);
WJ_HIDDEN void wj_exec_hint_leave(const char *raw_dir_env);
WJ_HIDDEN void wj_exec_hint_forget(void);   // the exec failed
// The connections the next image goes on with (conns.c's lines), set before the hint is left;
// in that image, at initialisation, the lines and its parent's log (1 when there are some).
WJ_HIDDEN void wj_exec_hint_set_carry(const char *lines, size_t n);
WJ_HIDDEN int wj_exec_hint_carried(char *lines, size_t cap, char *parent, size_t pcap);
// Before a fork, in the parent: what each child would otherwise find out again (the CPU
// model, argv as process_start shows it) and the boot-clock reading that, with the child's own
// (wj_records_forked, once its pid is known), gives it its start ticks without /proc.
WJ_HIDDEN void wj_records_warm_for_children(void);
WJ_HIDDEN void wj_records_fork_prepare(void);
WJ_HIDDEN void wj_records_forked(void);
// Would the image about to be exec'd load wedjat (and why not)? NULL when it would.
WJ_HIDDEN const char *wj_exec_unwatched_reason(const char *target, char *const envp[]);

// The signal that ends the image (process_end reason "signal").
WJ_HIDDEN void wj_records_end_signal(int sig);
WJ_HIDDEN size_t wj_format_process_start(char *buf, size_t cap, const wj_exec_hint *hint);
WJ_HIDDEN size_t wj_format_fork(char *buf, size_t cap, const wj_event *ev);
WJ_HIDDEN size_t wj_format_drops(char *buf, size_t cap, uint64_t now, uint64_t events, uint64_t records);
WJ_HIDDEN size_t wj_format_exec_failed(char *buf, size_t cap, uint64_t now, int tid);
WJ_HIDDEN size_t wj_format_warning(char *buf, size_t cap, uint64_t now, const char *kind, const char *message);
typedef struct wj_end_counts {
    const char *records;      // "\"type\":n,..." of every record type written before
    uint64_t dropped_events, dropped_records, untracked, open_connections, capture_dropped, stalls_lost;
    uint64_t bytes_after_end;
    const char *exec_unwatched;   // why the exec'd image will not be watched, if it will not
} wj_end_counts;
WJ_HIDDEN size_t wj_format_process_end(char *buf, size_t cap, uint64_t now, int tid, const wj_end_counts *c);

WJ_HIDDEN uint64_t wj_proc_start_ticks(void);  // /proc/self/stat field 22, read once
WJ_HIDDEN uint64_t wj_clock_ticks_per_second(void);   // the unit of /proc's times (AT_CLKTCK)
WJ_HIDDEN const char *wj_stat_field(const char *stat, int n);
#endif
