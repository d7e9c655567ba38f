// How wedjat lives inside a process image: one explicit state machine. Every transition goes
// through wj_lc_transition (pure, unit-tested for each state and event, Tests/CUnit); the
// driver (wj_lc_fire) moves the state word with compare-and-swap and then performs the step's
// actions. Nothing else starts or stops wedjat's thread or ends the image.
//
//   LOADED    the library is mapped; the first hook or the constructor initialises it
//   OFF       disabled (secure execution, WEDJAT_DISABLE): every hook forwards, forever
//   QUIET     recording, no thread of wedjat's: events wait in the rings
//   SAMPLING  wedjat's thread runs without the aggregator (samples, watchdog, C-side records)
//   RUNNING   wedjat's thread runs as the full agent (the Swift aggregator loaded)
//   PAUSED_S  the thread stepped aside (unshare/setns need a single-threaded process) and
//   PAUSED_R  comes back as a sampler or as the full agent
//   ENDING    the image's final flush is under way (exit, _exit, abort, exec)
//   ENDED     process_end is written; hooks forward (a failed exec goes back to QUIET)
//
// What may happen depends on the calling thread's context too (context.h): inside a signal
// handler no thread is started (pthread_create is not async-signal-safe): the wish is kept and
// granted at the next hook outside one.
#ifndef WEDJAT_LIFECYCLE_H
#define WEDJAT_LIFECYCLE_H
#include "base.h"
#include "wake.h"

typedef enum {
    WJ_LC_LOADED, WJ_LC_OFF, WJ_LC_QUIET, WJ_LC_SAMPLING, WJ_LC_RUNNING, WJ_LC_PAUSED_S, WJ_LC_PAUSED_R,
    WJ_LC_ENDING, WJ_LC_ENDED, WJ_LC_STATES
} wj_lc_state;

typedef enum {
    WJ_LC_INIT,          // initialisation (facts.disabled says how it went)
    WJ_LC_MAIN,          // main() is entered
    WJ_LC_WANT_THREAD,   // the process will live: samples, the watchdog, C-side records
    WJ_LC_WANT_AGENT,    // network events need the aggregator
    WJ_LC_THREAD_FAILED, // pthread_create failed
    WJ_LC_PAUSE,         // a call that needs a single-threaded process is about to run
    WJ_LC_RESUME,        // it returned
    WJ_LC_FORK_CHILD,    // in the child of a fork
    WJ_LC_IDENTITY,      // the process is about to change uid, gids or capabilities
    WJ_LC_END,           // exit, _exit, quick_exit, abort, exec
    WJ_LC_FLUSHED,       // the final flush is done
    WJ_LC_EXEC_FAILED,   // the exec returned: the image goes on
    WJ_LC_EVENTS
} wj_lc_event;

// What the driver knows besides the state and the event.
typedef struct wj_lc_facts {
    int disabled;         // INIT: wedjat must stay out of the way
    int in_handler;       // the calling thread runs one of the app's signal handlers
    int single_threaded;  // no thread but the caller (the app never created one)
    int network_pending;  // network events wait for an aggregator no thread loaded yet
    int thread_failed;    // pthread_create failed before: do not try again
    int had_thread;       // EXEC_FAILED: the role the image had before its end (0, 1, 2)
} wj_lc_facts;

enum {
    WJ_LC_DO_MAIN = 1 << 0,           // keep argv, components' main_entered, want the thread
    WJ_LC_DO_START_SAMPLER = 1 << 1,  // start wedjat's thread without the aggregator
    WJ_LC_DO_START_AGENT = 1 << 2,    // start it as the full agent
    WJ_LC_DO_PROMOTE = 1 << 3,        // the running thread becomes the full agent
    WJ_LC_DO_STOP_THREAD = 1 << 4,    // stop it and wait until it is gone
    WJ_LC_DO_RESTART = 1 << 5,        // start it again in the role it had (PAUSED_S/R)
    WJ_LC_DO_RESET_CHILD = 1 << 6,    // a new image identity, no thread, the parent's state dropped
    WJ_LC_DO_OPEN_LOG = 1 << 7,       // have wedjat's thread open the log now, and wait
    WJ_LC_DO_FINAL_THREAD = 1 << 8,   // the final flush on wedjat's thread (the caller waits)
    WJ_LC_DO_FINAL_HERE = 1 << 9,     // the final flush on the ending thread, signals blocked
    WJ_LC_DO_EXEC_FAILED = 1 << 10,   // an exec_failed record; the thread again if it had one
    WJ_LC_DO_DEFER = 1 << 11,         // not now (inside a signal handler): keep the wish
    WJ_LC_DO_GIVE_UP = 1 << 12,       // the wish cannot be granted (no thread can start)
};

typedef struct wj_lc_step {
    wj_lc_state next;
    unsigned actions;
} wj_lc_step;

// The transition function: no side effect.
wj_lc_step wj_lc_transition(wj_lc_state state, wj_lc_event event, const wj_lc_facts *facts);
const char *wj_lc_state_name(wj_lc_state s);
const char *wj_lc_event_name(wj_lc_event e);

// ---- the driver (lifecycle.c)
WJ_HIDDEN wj_lc_state wj_lc_state_now(void);
// Initialises the library (from the constructor, or the first hook before it). Returns the
// gate's answer for the calling hook (context.h WJ_GATE_*).
WJ_HIDDEN int wj_lc_init(void);
WJ_HIDDEN void wj_lc_main_entered(int argc, char **argv);
// Network events: the full agent is wanted (one relaxed load once it runs).
WJ_HIDDEN void wj_lc_want_agent_slow(void);
WJ_HIDDEN extern _Atomic int wj_lc_state_word;
static inline void wj_lc_want_agent(void) {
    if (WJ_UNLIKELY(atomic_load_explicit(&wj_lc_state_word, memory_order_relaxed) != WJ_LC_RUNNING))
        wj_lc_want_agent_slow();
}
// Any hook may grant a wish kept for later (a thread to start): one relaxed load until then.
// `gated`: an I/O call, which starts the sampler only once the process lived 20 ms.
#define WJ_REQ_START (WJ_REQ_AGENT | WJ_REQ_SAMPLER | WJ_REQ_THREAD | WJ_REQ_FORKS)
WJ_HIDDEN void wj_lc_poke_slow(int gated);
static inline void wj_lc_poke(int gated) {
    if (WJ_UNLIKELY(atomic_load_explicit(&wj_requests, memory_order_relaxed) & WJ_REQ_START)) wj_lc_poke_slow(gated);
}
WJ_HIDDEN void wj_lc_app_thread(void);   // the app starts a thread of its own
WJ_HIDDEN void wj_lc_main_thread_exits(void);   // main() calls pthread_exit
WJ_HIDDEN void wj_lc_pause(void);
WJ_HIDDEN void wj_lc_resume(void);
WJ_HIDDEN void wj_lc_identity_change(void);
// The image ends. reason: WJ_END_*; status when has_status. For exec: the target and envp.
WJ_HIDDEN void wj_lc_end(int reason, int status, int has_status, const char *exec_target, char *const *exec_envp);
WJ_HIDDEN void wj_lc_exec_failed(void);
WJ_HIDDEN void wj_lc_set_exit_status(int status);
WJ_HIDDEN int wj_lc_flush(void);   // wedjat_flush(): 0 done, -1 not possible
#endif
