// The parts that produce records besides the network aggregator (vitals, stalls) register
// with the agent through this interface instead of calling into it: the agent asks each one
// when it wants its next round, runs the round on its own thread, and collects the records
// they have ready. Producers never include agent.h.
#ifndef WEDJAT_COMPONENT_H
#define WEDJAT_COMPONENT_H
#include "base.h"
#include <stddef.h>

// Where a producer's records go: the agent's output buffer, counted by record type
// (records.h WJ_REC_*). `len` 0 means the record did not fit its buffer: counted as dropped.
// A record may also be formatted in place: `room` gives the buffer where the next line will
// be (at most *cap bytes, 64 KiB), and `line` with that pointer takes it without a copy. Call
// `line` before asking for room again.
typedef struct wj_out {
    void (*line)(void *ctx, int type, const char *line, size_t len);
    char *(*room)(void *ctx, size_t *cap);
    void *ctx;
} wj_out;

// What the agent knows when it calls a producer.
typedef struct wj_round {
    uint64_t now;          // CLOCK_MONOTONIC ns
    int agent_tid;         // wedjat's thread (0: the final flush runs on an ending thread)
    int agent_threads;     // wedjat threads alive in the process
    int final;             // the image's last collection
    int log_in_app_table;  // the log's fd, when open, is in the app's fd table (the final
                           // flush of a process without wedjat's thread): not the app's to count
} wj_round;

typedef struct wj_component {
    const char *name;
    void (*init)(void);                       // library initialisation: no fd, no thread
    void (*main_entered)(void);               // main() is about to run
    void (*forked_child)(void);               // in a forked child, on its only thread
    uint64_t (*next_due)(void);               // its next round (CLOCK_MONOTONIC ns), 0 = none
    void (*round)(const wj_round *r);         // on the agent thread, without the agent lock
    void (*collect)(const wj_round *r, const wj_out *out);   // under the agent lock
} wj_component;
#endif
