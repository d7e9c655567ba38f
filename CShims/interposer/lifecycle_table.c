// The lifecycle's transition function (lifecycle.h): state x event x facts -> next state and
// actions. Pure: it is compiled into the library and into the C unit tests alike.
#include "lifecycle.h"

static wj_lc_step step(wj_lc_state next, unsigned actions) {
    wj_lc_step s = {next, actions};
    return s;
}

// The ending thread's final flush: on wedjat's thread when there is one; else here, unless
// the aggregator is needed (network events) or other threads of the app could see wedjat's
// fds in their table: then a thread is started for it, where that is possible.
static wj_lc_step end_without_thread(const wj_lc_facts *f) {
    if (!f->in_handler && !f->thread_failed && (f->network_pending || !f->single_threaded))
        return step(WJ_LC_ENDING, WJ_LC_DO_START_AGENT | WJ_LC_DO_FINAL_THREAD);
    return step(WJ_LC_ENDING, WJ_LC_DO_FINAL_HERE);
}

// A thread is wanted while none runs.
static wj_lc_step start(wj_lc_state s, wj_lc_state next, unsigned action, const wj_lc_facts *f) {
    if (f->thread_failed) return step(s, WJ_LC_DO_GIVE_UP);
    if (f->in_handler) return step(s, WJ_LC_DO_DEFER);
    return step(next, action);
}

wj_lc_step wj_lc_transition(wj_lc_state s, wj_lc_event e, const wj_lc_facts *f) {
    // A forked child starts over, whatever the parent was doing (an atexit handler may fork).
    if (e == WJ_LC_FORK_CHILD && s != WJ_LC_LOADED && s != WJ_LC_OFF) return step(WJ_LC_QUIET, WJ_LC_DO_RESET_CHILD);
    switch (s) {
    case WJ_LC_LOADED:
        if (e == WJ_LC_INIT) return step(f->disabled ? WJ_LC_OFF : WJ_LC_QUIET, 0);
        return step(s, 0);
    case WJ_LC_OFF:
        return step(s, 0);
    case WJ_LC_QUIET:
        switch (e) {
        case WJ_LC_MAIN: return step(s, WJ_LC_DO_MAIN);
        case WJ_LC_WANT_THREAD: return start(s, WJ_LC_SAMPLING, WJ_LC_DO_START_SAMPLER, f);
        case WJ_LC_WANT_AGENT: return start(s, WJ_LC_RUNNING, WJ_LC_DO_START_AGENT, f);
        case WJ_LC_IDENTITY:
            // The log must be open before the process may lose the right to create it, and
            // its fd must live in wedjat's own table: that takes the thread.
            if (f->thread_failed || f->in_handler) return step(s, 0);
            return step(WJ_LC_SAMPLING, WJ_LC_DO_START_SAMPLER | WJ_LC_DO_OPEN_LOG);
        case WJ_LC_END: return end_without_thread(f);
        default: return step(s, 0);
        }
    case WJ_LC_SAMPLING:
    case WJ_LC_RUNNING:
        switch (e) {
        case WJ_LC_MAIN: return step(s, WJ_LC_DO_MAIN);  // a thread started before main (a constructor's connect)
        case WJ_LC_WANT_AGENT: return s == WJ_LC_SAMPLING ? step(WJ_LC_RUNNING, WJ_LC_DO_PROMOTE) : step(s, 0);
        case WJ_LC_THREAD_FAILED: return step(WJ_LC_QUIET, 0);
        case WJ_LC_PAUSE:
            if (f->in_handler) return step(s, 0);
            return step(s == WJ_LC_SAMPLING ? WJ_LC_PAUSED_S : WJ_LC_PAUSED_R, WJ_LC_DO_STOP_THREAD);
        case WJ_LC_IDENTITY: return f->in_handler ? step(s, 0) : step(s, WJ_LC_DO_OPEN_LOG);
        case WJ_LC_END: return step(WJ_LC_ENDING, WJ_LC_DO_FINAL_THREAD);
        default: return step(s, 0);
        }
    case WJ_LC_PAUSED_S:
    case WJ_LC_PAUSED_R:
        switch (e) {
        case WJ_LC_RESUME:
            if (f->in_handler) return step(s, 0);  // cannot happen: the pause was not in one
            return step(s == WJ_LC_PAUSED_S ? WJ_LC_SAMPLING : WJ_LC_RUNNING, WJ_LC_DO_RESTART);
        case WJ_LC_WANT_AGENT: return step(WJ_LC_PAUSED_R, 0);
        case WJ_LC_MAIN: return step(s, WJ_LC_DO_MAIN);
        case WJ_LC_END: return step(WJ_LC_ENDING, WJ_LC_DO_FINAL_HERE);  // the thread is stopped
        default: return step(s, 0);
        }
    case WJ_LC_ENDING:
        // A second end (a handler's _exit during exit) waits for nothing: the first one writes.
        if (e == WJ_LC_FLUSHED) return step(WJ_LC_ENDED, 0);
        return step(s, 0);
    case WJ_LC_ENDED:
        if (e == WJ_LC_EXEC_FAILED) {
            unsigned again = f->had_thread == 2 ? WJ_LC_DO_START_AGENT : f->had_thread == 1 ? WJ_LC_DO_START_SAMPLER : 0;
            if (f->in_handler || f->thread_failed) again = 0;
            wj_lc_state next = again == WJ_LC_DO_START_AGENT ? WJ_LC_RUNNING : again ? WJ_LC_SAMPLING : WJ_LC_QUIET;
            return step(next, WJ_LC_DO_EXEC_FAILED | again);
        }
        return step(s, 0);
    default:
        return step(s, 0);
    }
}

const char *wj_lc_state_name(wj_lc_state s) {
    static const char *const names[WJ_LC_STATES] = {"LOADED",   "OFF",      "QUIET",  "SAMPLING", "RUNNING",
                                                    "PAUSED_S", "PAUSED_R", "ENDING", "ENDED"};
    return (unsigned)s < WJ_LC_STATES ? names[s] : "?";
}

const char *wj_lc_event_name(wj_lc_event e) {
    static const char *const names[WJ_LC_EVENTS] = {"INIT",     "MAIN",       "WANT_THREAD", "WANT_AGENT", "THREAD_FAILED",
                                                    "PAUSE",    "RESUME",     "FORK_CHILD",  "IDENTITY",   "END",
                                                    "FLUSHED",  "EXEC_FAILED"};
    return (unsigned)e < WJ_LC_EVENTS ? names[e] : "?";
}
