// The app's signal handlers run through a trampoline, so that wedjat's hooks know when they
// are called from inside one (context.h: forward and count only, defer the rest). The app
// keeps its own view of every disposition: what sigaction() and signal() return is what the
// kernel would hold without wedjat. wedjat's own signal (the stall sampler's) goes through
// the same trampoline.
#ifndef WEDJAT_SIGNALS_H
#define WEDJAT_SIGNALS_H
#include "base.h"
#include <signal.h>

// Claims a real-time signal for wedjat (the highest from SIGRTMAX-7 down to SIGRTMIN+4 that
// the app has left at its default) and sends the signals it queued with `magic` in si_value to
// `handler`; any other signal on that number goes to what the app installed there (or its
// default action). Returns the signal, or -1 when none is free. Not from a signal handler.
WJ_HIDDEN int wj_signal_claim_private(void (*handler)(int, siginfo_t *, void *), int magic);
WJ_HIDDEN int wj_signal_private(void);   // the claimed signal, 0 until claimed, -1 if none

// Is this signal wedjat's own (queued by this process with the magic)?
WJ_HIDDEN int wj_signal_is_ours(const siginfo_t *si);

// SIGTERM, SIGINT and SIGHUP while the app leaves them at their default action (to end the
// process): wedjat holds them, calls `on_fatal` (which writes the log's end) and then ends the
// process with the same signal, as the default action would have. The app sees SIG_DFL; its
// own handler or SIG_IGN replaces wedjat's, its SIG_DFL brings it back. Called once, when
// wedjat's thread starts (before, a signal finds nothing to finish). Not from a handler.
WJ_HIDDEN void wj_signal_watch_fatal(void (*on_fatal)(int sig));
#endif
