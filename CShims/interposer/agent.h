// wedjat's agent thread: it drains the rings, hands network events to the Swift aggregator
// (libwedjat-agent.so, loaded by this thread only), runs the components' rounds (vitals
// samples, the stall watchdog) and writes the log. It has an fd table of its own: its log,
// its /proc reads and the libraries it loads are never in the app's table.
//
// lifecycle.c decides when the thread starts, stops and ends the image; this file does it.
#ifndef WEDJAT_AGENT_H
#define WEDJAT_AGENT_H
#include "base.h"

enum { WJ_ROLE_NONE = 0, WJ_ROLE_SAMPLER = 1, WJ_ROLE_FULL = 2 };

// Starts the thread in a role. Not from a signal handler (pthread_create). 0 when it failed.
WJ_HIDDEN int wj_agent_start(int role);
WJ_HIDDEN void wj_agent_promote(void);   // sampler -> full agent (loads Swift at its next round)
WJ_HIDDEN int wj_agent_role(void);
// Stops the thread (it writes nothing more) and waits, at most 2 s, for it to be gone from
// the process (an unshare or setns that needs a single-threaded process). 1 if it was running.
WJ_HIDDEN int wj_agent_stop(void);

// How the image ends, for the final flush.
typedef struct wj_final {
    int tid;                    // the thread ending the image
    const char *exec_target;    // exec: the new image
    char *const *exec_envp;     //       and its environment
} wj_final;
// The final flush on wedjat's thread; the caller waits at most timeout_ms. 1 done, 0 the
// thread did not answer in time, -1 there is no thread to do it.
WJ_HIDDEN int wj_agent_final_on_thread(const wj_final *f, long timeout_ms);
// The final flush on the calling thread, when wedjat has no thread: only the C side's
// records (and a warning for network events that needed the aggregator). The caller made
// sure no other code of the app can run meanwhile (lifecycle.c).
WJ_HIDDEN void wj_agent_final_here(const wj_final *f);
// Have wedjat's thread create (or reopen) the log now and wait, at most timeout_ms: before the
// process gives up the rights to create it. 1 when the log is open.
WJ_HIDDEN int wj_agent_open_log(long timeout_ms);
// A flush now, on wedjat's thread (wedjat_flush()). 1 when done.
WJ_HIDDEN int wj_agent_flush_now(long timeout_ms);
// exec failed: the image goes on (an exec_failed record).
WJ_HIDDEN void wj_agent_exec_failed(int tid);
// Network events were pushed while no full agent could start (inside a signal handler).
WJ_HIDDEN int wj_agent_has_pending_network(void);

// main() called pthread_exit: a thread of wedjat's that shares the app's fd table (the agent's
// is its own) waits to end the process as glibc would once the app's last thread is gone.
WJ_HIDDEN void wj_agent_keep_app_table(void);

// fork(): the child must not inherit a half-done flush (or half-updated Swift state).
WJ_HIDDEN void wj_agent_fork_prepare(void);
WJ_HIDDEN void wj_agent_fork_parent(void);
WJ_HIDDEN void wj_agent_fork_child(void);

// The components (component.h), for lifecycle.c.
WJ_HIDDEN void wj_components_init(void);
WJ_HIDDEN void wj_components_main_entered(void);
WJ_HIDDEN void wj_components_forked_child(void);
#endif
