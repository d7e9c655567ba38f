// The lifecycle's driver (lifecycle.h): it reads the facts, asks the transition function,
// moves the state word, and performs the actions.
#include "lifecycle.h"
#include "agent.h"
#include "conns.h"
#include "context.h"
#include "events.h"
#include "framing.h"
#include "wedjat_http_counts.h"
#include "process.h"
#include "real.h"
#include "records.h"
#include "signals.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sys_raw.h"

_Atomic int wj_lc_state_word;             // wj_lc_state
static _Atomic int init_running;
static _Atomic int thread_failed;
static _Atomic int network_seen_without_agent;
static _Atomic int app_made_threads;      // the app started a thread of its own (a fork child: not yet)
static int role_before_end;               // the thread's role when the image began to end
static int ending_tid;

// The 20 ms gate: an ordinary I/O call starts the thread only once the process lived that long
// (most processes, a shell's commands, end before).
#define WJ_THREAD_GATE_MS 20
static uint64_t thread_gate_ns;           // CLOCK_MONOTONIC_COARSE

wj_lc_state wj_lc_state_now(void) { return (wj_lc_state)atomic_load(&wj_lc_state_word); }

static uint64_t coarse_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void facts_now(wj_lc_facts *f) {
    memset(f, 0, sizeof *f);
    f->in_handler = wj_in_handler();
    f->single_threaded = !atomic_load(&app_made_threads);
    f->network_pending = atomic_load(&network_seen_without_agent) && wj_agent_has_pending_network();
    f->thread_failed = atomic_load(&thread_failed);
}

static void run_state_for(wj_lc_state s) {
    int run = s == WJ_LC_LOADED ? WJ_RUN_LOADED : (s == WJ_LC_OFF || s == WJ_LC_ENDED) ? WJ_RUN_OFF : WJ_RUN_RECORDING;
    atomic_store(&wj_run_state, run);
}

static void killed_by(int sig);

static void perform(unsigned a, wj_lc_state next, const wj_final *final);

// One event: the transition, then its actions. Returns the actions performed.
static unsigned fire(wj_lc_event e, wj_lc_facts *f, const wj_final *final) {
    for (;;) {
        int s = atomic_load(&wj_lc_state_word);
        wj_lc_step st = wj_lc_transition((wj_lc_state)s, e, f);
        if (st.next == (wj_lc_state)s && !st.actions) return 0;
        if (!atomic_compare_exchange_strong(&wj_lc_state_word, &s, (int)st.next)) continue;
        if (st.next != (wj_lc_state)s) run_state_for(st.next);
        perform(st.actions, st.next, final);
        return st.actions;
    }
}

static void fire_simple(wj_lc_event e) {
    wj_lc_facts f;
    facts_now(&f);
    fire(e, &f, 0);
}

static void thread_did_not_start(void) {
    atomic_store(&thread_failed, 1);
    fire_simple(WJ_LC_THREAD_FAILED);
}

// ---------------------------------------------------------------- fork

static void atfork_prepare(void) {
    if (wj_run_state != WJ_RUN_RECORDING) return;
    // Only while no other thread exists: dlsym takes the loader's lock.
    if (__libc_single_threaded) wj_real_warm_for_children();
    wj_agent_fork_prepare();
    wj_records_warm_for_children();   // under the agent lock: wedjat's thread formats them too
    wj_records_fork_prepare();   // last: the closer to the fork, the likelier the same tick
}

static void atfork_parent(void) {
    wj_direct_new_epoch();  // the child holds the same sockets
    if (wj_run_state != WJ_RUN_RECORDING) return;
    wj_conns_fork_parent();
    wj_agent_fork_parent();
}

static void atfork_child(void) {
    wj_tid_forget();
    wj_lc_state s = wj_lc_state_now();
    if (s == WJ_LC_LOADED || s == WJ_LC_OFF) return;
    fire_simple(WJ_LC_FORK_CHILD);
}

// The child of a fork: threads did not survive it, the parent's pending events, connections,
// records and log are the parent's. Here rather than in the fork() wrapper: glibc's own forks
// (daemon()) run the handlers but not the wrapper.
static void reset_child(void) {
    char parent_log[WJ_PATH_MAX];
    memcpy(parent_log, wj_proc.log_path, sizeof parent_log);
    wj_context_forked((int)syscall(SYS_getpid));
    wj_proc.generation++;
    wj_conns_forked();
    wj_http_counts_forked();
    wj_events_forget_pending();
    wj_process_new_identity();
    wj_records_forked();
    memcpy(wj_proc.parent_log, parent_log, sizeof parent_log);
    wj_proc.end_reason = WJ_END_NONE;
    wj_proc.has_exit_status = 0;
    wj_proc.main_mono_ns = 0;
    wj_agent_fork_child();
    wj_components_forked_child();
    atomic_store(&thread_failed, 0);
    atomic_store(&network_seen_without_agent, 0);
    atomic_store(&app_made_threads, 0);   // only the forking thread lives on
    atomic_store(&wj_requests, 0);
    // A child that lives on (a daemon, a worker) is watched too, from its first wait, sleep or
    // I/O call past the gate; one that execs soon never starts the thread.
    thread_gate_ns = coarse_now_ns() + WJ_THREAD_GATE_MS * 1000000ull;
    if (wj_proc.config.sample_ms > 0) wj_request(WJ_REQ_SAMPLER);
}

// ---------------------------------------------------------------- actions

static void final_here(const wj_final *final) {
    // Nothing else of the app may run while wedjat's fds are in its table: this thread is the
    // only one (the transition made sure), and no signal handler may interrupt it.
    sigset_t all, old;
    memset(&all, 0xff, sizeof all);   // sigfillset (pthread_sigmask leaves glibc's own signals out)
    pthread_sigmask(SIG_SETMASK, &all, &old);
    wj_guard_take();
    wj_agent_final_here(final);
    wj_guard_drop();
    pthread_sigmask(SIG_SETMASK, &old, 0);
}

static void perform(unsigned a, wj_lc_state next, const wj_final *final) {
    if (a & WJ_LC_DO_RESET_CHILD) reset_child();
    if (a & WJ_LC_DO_MAIN) {
        wj_components_main_entered();
        thread_gate_ns = coarse_now_ns() + WJ_THREAD_GATE_MS * 1000000ull;
        if (wj_proc.config.sample_ms > 0) wj_request(WJ_REQ_SAMPLER);
    }
    if (a & (WJ_LC_DO_START_SAMPLER | WJ_LC_DO_START_AGENT | WJ_LC_DO_RESTART)) {
        int role = (a & WJ_LC_DO_START_AGENT) || next == WJ_LC_RUNNING ? WJ_ROLE_FULL : WJ_ROLE_SAMPLER;
        if (role == WJ_ROLE_FULL) atomic_store(&network_seen_without_agent, 0);
        if (!wj_agent_start(role)) thread_did_not_start();
        // From now on a default SIGTERM can be given the log's end first (killed_by): held
        // once per image, and not before (a short process pays nothing for it).
        static _Atomic int fatal_held;
        if (!atomic_exchange(&fatal_held, 1)) wj_signal_watch_fatal(killed_by);
    }
    if (a & WJ_LC_DO_PROMOTE) wj_agent_promote();
    if (a & WJ_LC_DO_STOP_THREAD) wj_agent_stop();
    if (a & WJ_LC_DO_OPEN_LOG) wj_agent_open_log(2000);
    if (a & (WJ_LC_DO_FINAL_THREAD | WJ_LC_DO_FINAL_HERE)) {
        // On wedjat's thread; here when there is none (it could not start). A thread that does
        // not answer in 3 s is given up on rather than hang the exit: the log then lacks
        // process_end, as that of a killed process does.
        int on_thread = (a & WJ_LC_DO_FINAL_THREAD) ? wj_agent_final_on_thread(final, 3000) : -1;
        if (on_thread < 0) final_here(final);
        wj_lc_facts f;
        facts_now(&f);
        fire(WJ_LC_FLUSHED, &f, 0);
    }
    if (a & WJ_LC_DO_EXEC_FAILED) wj_agent_exec_failed(ending_tid);
    if (a & WJ_LC_DO_DEFER) {
        // Kept for the next hook outside a signal handler (wj_lc_poke).
    }
}

// ---------------------------------------------------------------- entry points

// SIGTERM, SIGINT or SIGHUP at its default action (signals.c holds them): the log's end is
// written as for exit (final flush on wedjat's thread, this one waiting), then the signal ends
// the process. Only while wedjat's thread runs: a quiet process has nothing a handler could
// safely finish (its records wait in its buffer, the aggregator is not loaded).
static void killed_by(int sig) {
    wj_lc_state s = wj_lc_state_now();
    if ((s != WJ_LC_SAMPLING && s != WJ_LC_RUNNING) || wj_gate_ending() != WJ_GATE_RUN) return;
    wj_records_end_signal(sig);
    wj_lc_end(WJ_END_SIGNAL, 0, 0, 0, 0);
}

// An image exec'd on connections its previous image inherited and never used (a CGI
// program on its parent's socket): it goes on with them before the app can touch them.
static void exec_resume(void) {
    char lines[2048], parent[WJ_PATH_MAX];
    if (!wj_exec_hint_carried(lines, sizeof lines, parent, sizeof parent)) return;
    if (!wj_proc.parent_log[0]) wj_copy_str(wj_proc.parent_log, sizeof wj_proc.parent_log, parent);
    wj_framing_exec_resume(lines);
}

int wj_lc_init(void) {
    // Before libc set up the environment (a preloaded library's preinit code, such as ASan's,
    // calling a hooked function), the configuration cannot be read yet: pass the call
    // through and initialise at a later hook or the constructor.
    extern char **environ;
    if (!environ) return WJ_GATE_PASS;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&init_running, &expected, 1)) {
        // Another thread is initialising (only possible before main): wait for it.
        while (wj_lc_state_now() == WJ_LC_LOADED) sched_yield();
        return wj_gate();
    }
    int saved_errno = errno;
    wj_context_pid = (int)syscall(SYS_getpid);
    // Threads made before wedjat initialised (another library's constructor).
    atomic_store(&app_made_threads, __libc_single_threaded == 0);
    wj_lc_facts f;
    memset(&f, 0, sizeof f);
    f.disabled = !wj_process_configure();
    if (!f.disabled) {
        wj_events_init();
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        wj_components_init();
        exec_resume();
    }
    fire(WJ_LC_INIT, &f, 0);
    errno = saved_errno;
    return wj_gate();
}

void wj_lc_main_entered(int argc, char **argv) {
    wj_proc.main_mono_ns = wj_now_ns();
    wj_records_keep_argv(argc, argv);
    fire_simple(WJ_LC_MAIN);
}

void wj_lc_want_agent_slow(void) {
    wj_lc_state s = wj_lc_state_now();
    if (s == WJ_LC_RUNNING || s == WJ_LC_OFF || s >= WJ_LC_ENDING) return;
    wj_lc_facts f;
    facts_now(&f);
    unsigned done = fire(WJ_LC_WANT_AGENT, &f, 0);
    if (done & WJ_LC_DO_DEFER) {
        atomic_store(&network_seen_without_agent, 1);
        wj_request(WJ_REQ_AGENT);
    } else if (done & WJ_LC_DO_GIVE_UP) {
        atomic_store(&network_seen_without_agent, 1);
    }
}

void wj_lc_poke_slow(int gated) {
    uint32_t req = atomic_load(&wj_requests);
    if (!(req & WJ_REQ_START) || wj_in_handler()) return;
    // Only the sampler and fork records wait for the gate; the agent and the watchdog are wanted
    // now.
    if (!(req & (WJ_REQ_AGENT | WJ_REQ_THREAD)) && gated && coarse_now_ns() < thread_gate_ns) return;
    atomic_fetch_and(&wj_requests, ~(uint32_t)WJ_REQ_START);
    wj_lc_facts f;
    facts_now(&f);
    if (req & WJ_REQ_AGENT) fire(WJ_LC_WANT_AGENT, &f, 0);
    // The sampler only when sampling is on; the watchdog (stall detection) asks for the thread
    // even when it is off.
    // Fork records too, once past the gate: a process that forks and ends within 20 ms (a
    // shell's pipeline, a build step) writes them in its final flush instead. Its children
    // then fork from a single-threaded process: glibc's fork skips the work a multi-threaded
    // parent needs (locks, and pages touched in every child).
    if ((req & (WJ_REQ_THREAD | WJ_REQ_FORKS)) || ((req & WJ_REQ_SAMPLER) && wj_proc.config.sample_ms > 0))
        fire(WJ_LC_WANT_THREAD, &f, 0);
}

void wj_lc_main_thread_exits(void) {
    wj_lc_state s = wj_lc_state_now();
    if (s == WJ_LC_QUIET) fire_simple(WJ_LC_WANT_THREAD);  // the thread that will notice the end
    s = wj_lc_state_now();
    if (s == WJ_LC_SAMPLING || s == WJ_LC_RUNNING) wj_agent_keep_app_table();
}

void wj_lc_app_thread(void) { atomic_store_explicit(&app_made_threads, 1, memory_order_relaxed); }

void wj_lc_pause(void) { fire_simple(WJ_LC_PAUSE); }
void wj_lc_resume(void) { fire_simple(WJ_LC_RESUME); }
void wj_lc_identity_change(void) { fire_simple(WJ_LC_IDENTITY); }

void wj_lc_set_exit_status(int status) {
    if (wj_proc.has_exit_status) return;
    wj_proc.exit_status = status;
    wj_proc.has_exit_status = 1;
}

void wj_lc_end(int reason, int status, int has_status, const char *exec_target, char *const *exec_envp) {
    if (has_status) wj_lc_set_exit_status(status);
    wj_lc_state s = wj_lc_state_now();
    if (s >= WJ_LC_ENDING || s == WJ_LC_OFF || s == WJ_LC_LOADED) return;
    if (wj_proc.end_reason == WJ_END_NONE || reason == WJ_END_EXEC) wj_proc.end_reason = reason;
    if (reason == WJ_END_EXEC) {
        wj_copy_str(wj_proc.exec_target, sizeof wj_proc.exec_target, exec_target ? exec_target : "");
        // Here, on the exec'ing thread: its fd table is the app's (wedjat's thread has its own).
        char carry[2048];
        wj_exec_hint_set_carry(carry, wj_framing_exec_carry(carry, sizeof carry));
    }
    role_before_end = wj_agent_role();
    ending_tid = wj_gettid();
    wj_final final = {ending_tid, exec_target, exec_envp};
    wj_lc_facts f;
    facts_now(&f);
    fire(WJ_LC_END, &f, &final);
}

void wj_lc_exec_failed(void) {
    wj_proc.end_reason = WJ_END_NONE;
    wj_exec_hint_forget();
    wj_lc_facts f;
    facts_now(&f);
    f.had_thread = role_before_end;
    fire(WJ_LC_EXEC_FAILED, &f, 0);
}

int wj_lc_flush(void) {
    if (wj_lc_state_now() == WJ_LC_QUIET) fire_simple(WJ_LC_WANT_THREAD);  // the flush is the thread's
    wj_lc_state s = wj_lc_state_now();
    if (s != WJ_LC_SAMPLING && s != WJ_LC_RUNNING) return -1;
    return wj_agent_flush_now(3000) ? 0 : -1;
}
