// Every transition of the lifecycle (CShims/interposer/lifecycle.h): each state x event, with
// the facts that change the outcome, against an expected table written out here.
#include "cunit.h"
#include "lifecycle.h"

enum { F_DEFAULT, F_HANDLER, F_FAILED, F_MULTI, F_PENDING, F_MULTI_HANDLER, F_MULTI_FAILED, F_DISABLED,
       F_HAD_SAMPLER, F_HAD_AGENT, F_HAD_AGENT_HANDLER, F_VARIANTS };

static wj_lc_facts facts(int v) {
    wj_lc_facts f = {0};
    f.single_threaded = 1;
    switch (v) {
    case F_HANDLER: f.in_handler = 1; break;
    case F_FAILED: f.thread_failed = 1; break;
    case F_MULTI: f.single_threaded = 0; break;
    case F_PENDING: f.network_pending = 1; break;
    case F_MULTI_HANDLER: f.single_threaded = 0; f.in_handler = 1; break;
    case F_MULTI_FAILED: f.single_threaded = 0; f.thread_failed = 1; break;
    case F_DISABLED: f.disabled = 1; break;
    case F_HAD_SAMPLER: f.had_thread = 1; break;
    case F_HAD_AGENT: f.had_thread = 2; break;
    case F_HAD_AGENT_HANDLER: f.had_thread = 2; f.in_handler = 1; break;
    }
    return f;
}

#define S(x) WJ_LC_##x
#define E(x) WJ_LC_##x
#define A(x) WJ_LC_DO_##x
typedef struct { wj_lc_state s; wj_lc_event e; int f; wj_lc_state next; unsigned actions; } row;

// Rows for events that change nothing in a state are generated below (every pair not listed).
static const row expected[] = {
    {S(LOADED), E(INIT), F_DEFAULT, S(QUIET), 0},
    {S(LOADED), E(INIT), F_DISABLED, S(OFF), 0},

    {S(QUIET), E(MAIN), F_DEFAULT, S(QUIET), A(MAIN)},
    {S(QUIET), E(WANT_THREAD), F_DEFAULT, S(SAMPLING), A(START_SAMPLER)},
    {S(QUIET), E(WANT_THREAD), F_HANDLER, S(QUIET), A(DEFER)},
    {S(QUIET), E(WANT_THREAD), F_FAILED, S(QUIET), A(GIVE_UP)},
    {S(QUIET), E(WANT_AGENT), F_DEFAULT, S(RUNNING), A(START_AGENT)},
    {S(QUIET), E(WANT_AGENT), F_HANDLER, S(QUIET), A(DEFER)},
    {S(QUIET), E(WANT_AGENT), F_FAILED, S(QUIET), A(GIVE_UP)},
    {S(QUIET), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
    {S(QUIET), E(IDENTITY), F_DEFAULT, S(SAMPLING), A(START_SAMPLER) | A(OPEN_LOG)},
    {S(QUIET), E(IDENTITY), F_HANDLER, S(QUIET), 0},
    {S(QUIET), E(IDENTITY), F_FAILED, S(QUIET), 0},
    {S(QUIET), E(END), F_DEFAULT, S(ENDING), A(FINAL_HERE)},
    {S(QUIET), E(END), F_HANDLER, S(ENDING), A(FINAL_HERE)},
    {S(QUIET), E(END), F_MULTI, S(ENDING), A(START_AGENT) | A(FINAL_THREAD)},
    {S(QUIET), E(END), F_PENDING, S(ENDING), A(START_AGENT) | A(FINAL_THREAD)},
    {S(QUIET), E(END), F_MULTI_HANDLER, S(ENDING), A(FINAL_HERE)},
    {S(QUIET), E(END), F_MULTI_FAILED, S(ENDING), A(FINAL_HERE)},

    {S(SAMPLING), E(MAIN), F_DEFAULT, S(SAMPLING), A(MAIN)},
    {S(SAMPLING), E(WANT_AGENT), F_DEFAULT, S(RUNNING), A(PROMOTE)},
    {S(SAMPLING), E(WANT_AGENT), F_HANDLER, S(RUNNING), A(PROMOTE)},
    {S(SAMPLING), E(THREAD_FAILED), F_DEFAULT, S(QUIET), 0},
    {S(SAMPLING), E(PAUSE), F_DEFAULT, S(PAUSED_S), A(STOP_THREAD)},
    {S(SAMPLING), E(PAUSE), F_HANDLER, S(SAMPLING), 0},
    {S(SAMPLING), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
    {S(SAMPLING), E(IDENTITY), F_DEFAULT, S(SAMPLING), A(OPEN_LOG)},
    {S(SAMPLING), E(IDENTITY), F_HANDLER, S(SAMPLING), 0},
    {S(SAMPLING), E(END), F_DEFAULT, S(ENDING), A(FINAL_THREAD)},
    {S(SAMPLING), E(END), F_HANDLER, S(ENDING), A(FINAL_THREAD)},

    {S(RUNNING), E(MAIN), F_DEFAULT, S(RUNNING), A(MAIN)},
    {S(RUNNING), E(THREAD_FAILED), F_DEFAULT, S(QUIET), 0},
    {S(RUNNING), E(PAUSE), F_DEFAULT, S(PAUSED_R), A(STOP_THREAD)},
    {S(RUNNING), E(PAUSE), F_HANDLER, S(RUNNING), 0},
    {S(RUNNING), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
    {S(RUNNING), E(IDENTITY), F_DEFAULT, S(RUNNING), A(OPEN_LOG)},
    {S(RUNNING), E(IDENTITY), F_HANDLER, S(RUNNING), 0},
    {S(RUNNING), E(END), F_DEFAULT, S(ENDING), A(FINAL_THREAD)},
    {S(RUNNING), E(END), F_HANDLER, S(ENDING), A(FINAL_THREAD)},

    {S(PAUSED_S), E(MAIN), F_DEFAULT, S(PAUSED_S), A(MAIN)},
    {S(PAUSED_S), E(WANT_AGENT), F_DEFAULT, S(PAUSED_R), 0},
    {S(PAUSED_S), E(RESUME), F_DEFAULT, S(SAMPLING), A(RESTART)},
    {S(PAUSED_S), E(RESUME), F_HANDLER, S(PAUSED_S), 0},
    {S(PAUSED_S), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
    {S(PAUSED_S), E(END), F_DEFAULT, S(ENDING), A(FINAL_HERE)},
    {S(PAUSED_R), E(MAIN), F_DEFAULT, S(PAUSED_R), A(MAIN)},
    {S(PAUSED_R), E(RESUME), F_DEFAULT, S(RUNNING), A(RESTART)},
    {S(PAUSED_R), E(RESUME), F_HANDLER, S(PAUSED_R), 0},
    {S(PAUSED_R), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
    {S(PAUSED_R), E(END), F_DEFAULT, S(ENDING), A(FINAL_HERE)},

    {S(ENDING), E(FLUSHED), F_DEFAULT, S(ENDED), 0},
    {S(ENDING), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},

    {S(ENDED), E(EXEC_FAILED), F_DEFAULT, S(QUIET), A(EXEC_FAILED)},
    {S(ENDED), E(EXEC_FAILED), F_HAD_SAMPLER, S(SAMPLING), A(EXEC_FAILED) | A(START_SAMPLER)},
    {S(ENDED), E(EXEC_FAILED), F_HAD_AGENT, S(RUNNING), A(EXEC_FAILED) | A(START_AGENT)},
    {S(ENDED), E(EXEC_FAILED), F_HAD_AGENT_HANDLER, S(QUIET), A(EXEC_FAILED)},
    {S(ENDED), E(FORK_CHILD), F_DEFAULT, S(QUIET), A(RESET_CHILD)},
};

// A variant not listed for a pair behaves as the listed variant its facts include (in a
// handler, a failed thread, several threads), else as the default row.
static const int fallbacks[F_VARIANTS][3] = {
    [F_MULTI_HANDLER] = {F_HANDLER, F_MULTI, F_DEFAULT},
    [F_MULTI_FAILED] = {F_FAILED, F_MULTI, F_DEFAULT},
    [F_HAD_AGENT_HANDLER] = {F_HANDLER, F_HAD_AGENT, F_DEFAULT},
};

static void check_step(wj_lc_state s, wj_lc_event e, int f, wj_lc_state next, unsigned actions) {
    wj_lc_facts fx = facts(f);
    wj_lc_step st = wj_lc_transition(s, e, &fx);
    CHECK(st.next == next && st.actions == actions, "%s + %s (facts %d): got %s/0x%x, want %s/0x%x", wj_lc_state_name(s),
          wj_lc_event_name(e), f, wj_lc_state_name(st.next), st.actions, wj_lc_state_name(next), actions);
}

void test_lifecycle(void) {
    // The listed rows, and every other (state, event, facts) stays where it is, doing nothing.
    for (int s = 0; s < WJ_LC_STATES; s++)
        for (int e = 0; e < WJ_LC_EVENTS; e++)
            for (int f = 0; f < F_VARIANTS; f++) {
                const row *by_variant[F_VARIANTS] = {0};
                for (size_t i = 0; i < sizeof expected / sizeof *expected; i++) {
                    const row *r = &expected[i];
                    if ((int)r->s == s && (int)r->e == e) by_variant[r->f] = r;
                }
                // Unlisted: the fallback variants, then the default row; with no row at all,
                // nothing happens.
                const row *r = by_variant[f];
                for (int k = 0; !r && k < 3 && fallbacks[f][k]; k++) r = by_variant[fallbacks[f][k]];
                if (!r) r = by_variant[F_DEFAULT];
                if (r) {
                    check_step((wj_lc_state)s, (wj_lc_event)e, f, r->next, r->actions);
                } else {
                    check_step((wj_lc_state)s, (wj_lc_event)e, f, (wj_lc_state)s, 0);
                }
            }
    // Names for the log of a failure.
    CHECK_STR(wj_lc_state_name(WJ_LC_PAUSED_R), "PAUSED_R");
    CHECK_STR(wj_lc_event_name(WJ_LC_EXEC_FAILED), "EXEC_FAILED");
}
