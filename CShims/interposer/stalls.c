// Stalls: a loop thread busy between two waits, or a thread held in one blocking call, for
// longer than WEDJAT_STALL_MS.
//
// Loop threads. Every thread that calls a wait (poll, select, epoll_*) gets a slot. The wait
// wrappers keep its phase: WAIT inside the wait, BUSY from its return to the next wait (the
// busy time), SLEEP inside nanosleep and friends. wedjat's thread (the watchdog, in agent.c's
// loop) wakes at each thread's threshold crossing and takes samples of the stalled thread's
// stack, and writes a `stall` record when the thread's next wait ends the stall.
//
// A sample. The watchdog moves the phase BUSY -> SIGNALED (compare-and-swap) and only then
// queues its real-time signal to the thread: a thread that entered a wait meanwhile is never
// signalled, and one that enters a wait after the swap first lets the signal land (or takes it
// off its queue) before calling the real wait, so no wait ever returns EINTR because of wedjat.
// Sleeps (nanosleep, clock_nanosleep, usleep, sleep) are never interrupted either: a thread in
// one is asked to sample itself when the sleep returns. Any other system call is interrupted
// only when SA_RESTART restarts it (read, recv, futex without timeout, ...); otherwise the
// sample is skipped (samples_lost).
// The handler allocates nothing and takes no lock: it publishes its ucontext and parks on a
// futex; the watchdog unwinds the parked thread's stack with libunwind (loaded RTLD_LOCAL, so
// the host's C++ exceptions keep libgcc's unwinder) and releases it. The park is bounded on
// both sides.
//
// Blocked calls (connect, getaddrinfo & co., read/recv on a blocking client socket) are timed by
// their hooks; one past the threshold is recorded by the thread itself when the call returns,
// with its own stack.
#include "stalls.h"
#include "conns.h"
#include "context.h"
#include "process.h"
#include "records.h"
#include "signals.h"
#include "vitals.h"
#include "wake.h"
#include "wedjat_json.h"
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "sys_raw.h"

#define WJ_LOOPS 1024
#define WJ_STALL_BUFS 16
#define WJ_STALL_SAMPLES 16
#define WJ_STALL_FRAMES 64
#define WJ_SIG_MAGIC 0x57444a54  // "WDJT" in si_value: our signal, not the app's

enum { PH_NONE = 0, PH_WAIT, PH_BUSY, PH_SIGNALED, PH_SLEEP };
enum { PARK_IDLE = 0, PARK_PARKED, PARK_RELEASED, PARK_ABANDONED };
enum { BUF_FREE = 0, BUF_ACTIVE, BUF_FILLING, BUF_READY };

typedef struct wj_sample {
    uint64_t t, cpu_ns;
    uint32_t n;
    uint32_t interrupted;  // frames[0] is the interrupted instruction (a signal sample), not a return address
    uint64_t frames[WJ_STALL_FRAMES];
} wj_sample;

typedef struct wj_stall {
    _Atomic uint32_t state;
    int kind;                     // 0 loop, 1 blocked
    int tid;
    char thread[16];
    const char *after;            // loop: the wait before
    const char *call;             // blocked
    const char *no_stack;         // why it has no stack sample, if it has none
    int fd, err, ongoing;
    char peer[64], host[WJ_DNS_NAME_MAX];
    uint64_t start, end, cpu_first, t_first, cpu_end;
    int has_cpu;
    uint32_t nsamples, lost;
    uint64_t next_sample;
    wj_sample samples[WJ_STALL_SAMPLES];
} wj_stall;

typedef struct wj_loop {
    _Atomic int tid;              // 0: free
    _Atomic uint32_t phase;
    _Atomic uint32_t req;         // a sample signal is on its way
    _Atomic uint32_t park;        // PARK_*: the handler/watchdog handshake (futex word)
    _Atomic(void *) uc;           // the parked thread's context
    _Atomic uint32_t park_phase;  // its phase when it parked
    _Atomic uint64_t busy_since;  // return of the last wait
    _Atomic uint64_t busy_total;  // busy ns, added at each wait entry
    _Atomic uint64_t iterations;
    _Atomic uint64_t max_busy;    // since the last vitals sample
    _Atomic uint32_t after;       // WJ_READY_* code of the last wait that returned
    _Atomic uint32_t want_self;   // the watchdog asks a sleeping thread to sample itself
    _Atomic uint64_t ended_seq, ended_start, ended_end, ended_cpu;  // a stall its wait ended
    _Atomic uint64_t self_seq;    // a self-sample is in self
    wj_sample self;
    uint64_t self_busy_since;
    // the watchdog's own
    int stall;                    // active stall buffer + 1
    uint64_t seen_ended, seen_self, prev_iter, prev_busy, prev_t;
} wj_loop;

// By WJ_READY_* code, from WJ_READY_POLL on.
static const char *const wait_names[] = {"poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait",
                                         "epoll_pwait2"};

uint64_t wj_stall_ns;
WJ_BIG static wj_loop loops[WJ_LOOPS];
static _Atomic int loops_used;    // slots ever used (high-water mark)
static _Atomic uint64_t loops_since;   // when the first slot was taken (monotonic ns)
static _Atomic uint64_t loops_full;
WJ_BIG static wj_stall stalls[WJ_STALL_BUFS];
// Buffers ever claimed: the scans stop there. Each buffer has pages of its own, and a process
// that never stalls should not fault them in to find them all free.
static _Atomic int stalls_touched;
static _Atomic uint64_t stalls_lost;  // no buffer was free
static __thread wj_loop *my_loop __attribute__((tls_model("initial-exec")));
static __thread int my_loop_none __attribute__((tls_model("initial-exec")));
static pthread_key_t loop_key;
static _Atomic int loop_key_state;   // 0 not made, 1 being made, 2 made, -1 failed

static void loop_thread_exit(void *arg);

// The key that frees a loop slot when its thread ends, made by the first thread that takes a
// slot (a process without a loop never pays for it). glibc makes keys without a lock.
static int loop_key_ready(void) {
    int s = atomic_load(&loop_key_state);
    if (s == 0 && atomic_compare_exchange_strong(&loop_key_state, &s, 1)) {
        s = pthread_key_create(&loop_key, loop_thread_exit) == 0 ? 2 : -1;
        atomic_store(&loop_key_state, s);
    }
    while (s == 1) {   // another thread is making it: a few instructions
        sched_yield();
        s = atomic_load(&loop_key_state);
    }
    return s == 2;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, 0, 0);
}

// ---------------------------------------------------------------- libunwind, loaded aside

typedef int (*unw_getcontext_fn)(unw_context_t *);
typedef int (*unw_init_local_fn)(unw_cursor_t *, unw_context_t *);
typedef int (*unw_init_local2_fn)(unw_cursor_t *, unw_context_t *, int);
typedef int (*unw_step_fn)(unw_cursor_t *);
typedef int (*unw_get_reg_fn)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
static struct {
    _Atomic int state;  // 0 not tried, 1 loaded, -1 unavailable, 2 loading
    unw_getcontext_fn getcontext;
    unw_init_local_fn init_local;
    unw_init_local2_fn init_local2;
    unw_step_fn step;
    unw_get_reg_fn get_reg;
    uintptr_t self_lo, self_hi;  // libwedjat.so's own code: frames there are skipped
} unw;

static int find_self(struct dl_phdr_info *info, size_t size, void *data) {
    uintptr_t me = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz) {
            unw.self_lo = lo;
            unw.self_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

// Loaded by wedjat's thread only (dlopen allocates and takes the loader's lock): an app
// thread that needs a stack before it is loaded asks for it and goes without this once.
static int unwinder_loaded(void) { return atomic_load_explicit(&unw.state, memory_order_acquire) == 1; }

static _Atomic int unwinder_wanted;

void wj_stalls_want_unwinder(void) {
    if (WJ_UNLIKELY(atomic_load_explicit(&unw.state, memory_order_relaxed) == 0) &&
        !atomic_load_explicit(&unwinder_wanted, memory_order_relaxed)) {
        atomic_store(&unwinder_wanted, 1);
        wj_request(WJ_REQ_THREAD);
    }
}

static int unwinder_ready(void) {
    int s = atomic_load(&unw.state);
    if (WJ_LIKELY(s == 1)) return 1;
    if (s == -1 || !wj_context_is_internal()) return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&unw.state, &expected, 2)) {
        for (int i = 0; i < 1000 && atomic_load(&unw.state) == 2; i++) sched_yield();
        return atomic_load(&unw.state) == 1;
    }
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        unw.getcontext = (unw_getcontext_fn)dlsym(h, "_Ux86_64_getcontext");
        unw.init_local = (unw_init_local_fn)dlsym(h, "_ULx86_64_init_local");
        unw.init_local2 = (unw_init_local2_fn)dlsym(h, "_ULx86_64_init_local2");
        unw.step = (unw_step_fn)dlsym(h, "_ULx86_64_step");
        unw.get_reg = (unw_get_reg_fn)dlsym(h, "_ULx86_64_get_reg");
    }
    dl_iterate_phdr(find_self, (void *)&unwinder_ready);
    int ok = h && unw.getcontext && unw.init_local && unw.init_local2 && unw.step && unw.get_reg;
    if (ok) {
        // libunwind's one-time set-up (its address-checking pipe) here, in wedjat's fd table,
        // never on an app thread.
        unw_context_t uc;
        unw_cursor_t cur;
        if (unw.getcontext(&uc) >= 0 && unw.init_local(&cur, &uc) >= 0) (void)unw.step(&cur);
    }
    atomic_store(&unw.state, ok ? 1 : -1);
    return ok;
}

// Marked WJ_T_UNWINDING on whichever thread walks (an app thread's own stack, or the end of
// the image on an app thread): libunwind's address checks never reach an fd (io.c).
static uint32_t walk(unw_cursor_t *cur, uint64_t *frames) {
    uint32_t n = 0, flags = wj_self.flags;
    wj_self.flags = flags | WJ_T_UNWINDING;
    for (int guard = 0; guard < 256 && n < WJ_STALL_FRAMES; guard++) {
        unw_word_t ip = 0;
        if (unw.get_reg(cur, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        if (!(ip >= unw.self_lo && ip < unw.self_hi)) frames[n++] = ip;
        if (unw.step(cur) <= 0) break;
    }
    wj_self.flags = flags;
    return n;
}

// The calling thread's own stack, wedjat's frames left out (0 frames when the unwinder is not
// loaded yet).
// On an app thread, libunwind's check of each address it reads (one byte of it written to a
// pipe) must not reach the pipe's fd numbers: they are wedjat's thread's, in its own fd table,
// and in the app's table the app's own fds (libunwind, failing to read them back, closed the
// app's stdout and stderr and made its pipe there). io.c answers those calls meanwhile.
static uint32_t own_stack(uint64_t *frames) {
    if (!unwinder_loaded()) return 0;
    unw_context_t uc;
    unw_cursor_t cur;
    uint32_t flags = wj_self.flags;
    wj_self.flags = flags | WJ_T_UNWINDING;
    uint32_t n = 0;
    if (unw.getcontext(&uc) >= 0 && unw.init_local(&cur, &uc) >= 0) n = walk(&cur, frames);
    wj_self.flags = flags;
    return n;
}

static uint64_t thread_cpu_ns(int tid) {
    // The kernel's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
    clockid_t id = (clockid_t)((~(unsigned)tid) << 3) | 6;
    struct timespec ts;
    if (syscall(SYS_clock_gettime, id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t own_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// ---------------------------------------------------------------- the signal

// wedjat's signal (signals.c claims it and calls this only for the signals wedjat queued).
static void stall_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    int err = errno;
    wj_loop *l = my_loop;
    uint32_t one = 1;
    if (l && atomic_compare_exchange_strong(&l->req, &one, 0)) {
        atomic_store(&l->park_phase, atomic_load(&l->phase));
        atomic_store(&l->uc, uc);
        uint32_t idle = PARK_IDLE;
        if (atomic_compare_exchange_strong(&l->park, &idle, PARK_PARKED)) {
            futex(&l->park, FUTEX_WAKE_PRIVATE, 1, 0);
            // Until the watchdog has walked this stack: bounded, 20 ms at most.
            struct timespec ts = {0, 2 * 1000000L};
            for (int i = 0; i < 10 && atomic_load(&l->park) == PARK_PARKED; i++)
                futex(&l->park, FUTEX_WAIT_PRIVATE, PARK_PARKED, &ts);
            uint32_t parked = PARK_PARKED;
            atomic_compare_exchange_strong(&l->park, &parked, PARK_ABANDONED);
        }
        uint32_t signaled = PH_SIGNALED;
        atomic_compare_exchange_strong(&l->phase, &signaled, PH_BUSY);
    }
    errno = err;
}

static int install_signal(void) {
    int sig = wj_signal_private();
    if (sig) return sig > 0;
    return wj_signal_claim_private(stall_handler, WJ_SIG_MAGIC) > 0;
}

// A sample signal was queued to this thread, which is about to wait or sleep: let it land
// now (any system call returns through the signal check), or, if this thread blocks it, take
// it off the queue. Never inside the wait.
static void settle_signal(wj_loop *l) {
    int err = errno;
    for (int i = 0; i < 64 && atomic_load(&l->req); i++) syscall(SYS_getppid);
    if (atomic_load(&l->req)) {
        int sig = wj_signal_private();
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        struct timespec zero = {0, 0};
        siginfo_t si;
        if (sig > 0 && syscall(SYS_rt_sigtimedwait, &set, &si, &zero, _NSIG / 8) == sig && !wj_signal_is_ours(&si))
            syscall(SYS_rt_tgsigqueueinfo, wj_proc.pid, wj_gettid(), sig, &si);  // the app's: back in line
        atomic_store(&l->req, 0);
    }
    errno = err;
}

// ---------------------------------------------------------------- loop threads (their side)

static void loop_thread_exit(void *p) {
    wj_loop *l = p;
    if (l) atomic_store(&l->tid, 0);
}

// Called from a wait hook (after its gate). Not inside a signal handler: a wait there is no
// iteration of the thread's loop.
static wj_loop *loop_register(void) {
    if (my_loop_none || !wj_stall_ns || wj_in_handler()) return 0;
    int err = errno;
    int tid = wj_gettid();
    wj_loop *found = 0;
    for (int i = 0; i < WJ_LOOPS && !found; i++) {
        int zero = 0;
        if (atomic_load(&loops[i].tid) == 0 && atomic_compare_exchange_strong(&loops[i].tid, &zero, tid)) {
            found = &loops[i];
            int used = atomic_load(&loops_used);
            while (used < i + 1 && !atomic_compare_exchange_weak(&loops_used, &used, i + 1)) {}
            uint64_t never = 0;
            if (!atomic_load_explicit(&loops_since, memory_order_relaxed)) atomic_compare_exchange_strong(&loops_since, &never, wj_now_ns());
        }
    }
    if (!found) {
        my_loop_none = 1;
        atomic_fetch_add(&loops_full, 1);
    } else {
        WJ_STORE(found->busy_since, 0);
        WJ_STORE(found->busy_total, 0);
        WJ_STORE(found->iterations, 0);
        WJ_STORE(found->max_busy, 0);
        atomic_store(&found->req, 0);
        atomic_store(&found->park, PARK_IDLE);
        atomic_store(&found->phase, PH_BUSY);
        found->prev_t = wj_now_ns();  // the first vitals interval of this loop starts here
        found->prev_busy = found->prev_iter = 0;
        my_loop = found;
        if (loop_key_ready()) pthread_setspecific(loop_key, found);
        if (wj_proc.main_mono_ns) wj_request(WJ_REQ_THREAD);
    }
    errno = err;
    return found;
}

static void stall_ended(wj_loop *l, uint64_t since, uint64_t now) {
    WJ_STORE(l->ended_start, since);
    WJ_STORE(l->ended_end, now);
    WJ_STORE(l->ended_cpu, own_cpu_ns());
    atomic_fetch_add_explicit(&l->ended_seq, 1, memory_order_release);
    wj_wake();
}

void wj_wait_begin(void) {
    wj_loop *l = my_loop;
    if (WJ_UNLIKELY(!l) && !(l = loop_register())) return;
    uint64_t now = wj_now_ns();
    uint32_t old = atomic_exchange_explicit(&l->phase, PH_WAIT, memory_order_acq_rel);
    if (WJ_UNLIKELY(old == PH_SIGNALED)) settle_signal(l);
    uint64_t since = WJ_LOAD(l->busy_since);
    if (WJ_UNLIKELY(!since)) return;  // the thread's first wait
    uint64_t busy = now - since;
    WJ_STORE(l->busy_total, WJ_LOAD(l->busy_total) + busy);
    if (busy > WJ_LOAD(l->max_busy)) WJ_STORE(l->max_busy, busy);
    if (WJ_UNLIKELY(busy >= wj_stall_ns)) stall_ended(l, since, now);
}

void wj_wait_end(int ready_call) {
    wj_loop *l = my_loop;
    if (!l) return;
    int err = errno;
    WJ_STORE(l->busy_since, wj_now_ns());
    errno = err;
    WJ_STORE(l->after, (uint32_t)ready_call);
    WJ_STORE(l->iterations, WJ_LOAD(l->iterations) + 1);
    atomic_store_explicit(&l->phase, PH_BUSY, memory_order_release);
}

// Sleeps: no signal while in one; a sample asked for meanwhile is taken by the thread itself
// when the sleep returns (the same stack).
void *wj_sleep_begin(void) {
    wj_loop *l = my_loop;
    if (!l) return 0;
    uint32_t old = atomic_exchange_explicit(&l->phase, PH_SLEEP, memory_order_acq_rel);
    if (WJ_UNLIKELY(old == PH_SIGNALED)) settle_signal(l);
    if (old == PH_WAIT) {  // a sleep inside a wait call's own implementation: not ours to mark
        atomic_store(&l->phase, PH_WAIT);
        return 0;
    }
    return l;
}

void wj_sleep_end(void *loop) {
    wj_loop *l = loop;
    if (!l) return;
    // Still SLEEP while it samples itself: the watchdog must not signal it meanwhile.
    if (WJ_UNLIKELY(atomic_load(&l->want_self)) && atomic_exchange(&l->want_self, 0) && !wj_in_handler()) {
        int err = errno;
        wj_guard_take();
        l->self.t = wj_now_ns();
        l->self.interrupted = 0;
        l->self.cpu_ns = own_cpu_ns();
        l->self_busy_since = WJ_LOAD(l->busy_since);
        l->self.n = own_stack(l->self.frames);
        atomic_fetch_add_explicit(&l->self_seq, 1, memory_order_release);
        wj_guard_drop();
        errno = err;
    }
    atomic_store_explicit(&l->phase, PH_BUSY, memory_order_release);
}

// ---------------------------------------------------------------- stall buffers

static wj_stall *claim_buffer(uint32_t to) {
    for (int i = 0; i < WJ_STALL_BUFS; i++) {
        uint32_t free_ = BUF_FREE;
        if (atomic_load(&stalls[i].state) == BUF_FREE && atomic_compare_exchange_strong(&stalls[i].state, &free_, to)) {
            wj_stall *s = &stalls[i];
            int touched = atomic_load(&stalls_touched);
            while (touched < i + 1 && !atomic_compare_exchange_weak(&stalls_touched, &touched, i + 1)) {}
            memset((char *)s + sizeof s->state, 0, offsetof(wj_stall, samples) - sizeof s->state);
            s->fd = -1;
            return s;
        }
    }
    atomic_fetch_add(&stalls_lost, 1);
    return 0;
}

static void thread_name(int tid, char *out, size_t cap) {
    char path[64], buf[32];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    long n = wj_read_file(path, buf, sizeof buf);
    if (n <= 0) { out[0] = 0; return; }
    if (buf[n - 1] == '\n') n--;
    if ((size_t)n >= cap) n = (long)cap - 1;
    memcpy(out, buf, (size_t)n);
    out[n] = 0;
}

static void format_peer(int fd, const struct sockaddr *given, char *out, size_t cap) {
    struct sockaddr_storage ss;
    const struct sockaddr *sa = given;
    if (!sa) {
        socklen_t len = sizeof ss;
        if (fd < 0 || syscall(SYS_getpeername, fd, &ss, &len) != 0) { out[0] = 0; return; }
        sa = (const struct sockaddr *)&ss;
    }
    char host[INET6_ADDRSTRLEN] = "";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, cap, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, cap, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else if (sa->sa_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        snprintf(out, cap, "%s", un->sun_path[0] ? un->sun_path : "unix:(unnamed)");
    } else {
        out[0] = 0;
    }
}

// A hooked blocking call that took longer than the threshold, on the calling thread, after
// the call returned: the stack is the caller's.
void wj_stall_blocked(const char *call, int fd, const struct sockaddr *peer, const char *host, uint64_t start,
                      uint64_t end, int err) {
    if (!wj_stall_ns || end - start < wj_stall_ns) return;
    int saved = errno;
    wj_stall *s = claim_buffer(BUF_FILLING);
    if (s) {
        s->kind = 1;
        s->tid = wj_gettid();
        prctl(PR_GET_NAME, s->thread, 0, 0, 0);
        s->call = call;
        s->fd = fd;
        s->err = err;
        s->start = start;
        s->end = end;
        format_peer(fd, peer, s->peer, sizeof s->peer);
        if (host) snprintf(s->host, sizeof s->host, "%s", host);
        // Its stack, walked here: not inside a signal handler (a small alternate stack, and
        // the walk is not ours to make there), and only once wedjat's thread loaded the unwinder.
        if (wj_in_handler()) {
            s->no_stack = "the call was made inside a signal handler";
        } else if (!unwinder_loaded()) {
            s->no_stack = atomic_load(&unw.state) < 0 ? "libunwind.so.8 could not be loaded" : "the unwinder was not loaded yet";
            wj_stalls_want_unwinder();
        } else {
            wj_guard_take();
            s->samples[0].t = end;
            s->samples[0].interrupted = 0;
            s->samples[0].n = own_stack(s->samples[0].frames);
            s->nsamples = 1;
            wj_guard_drop();
        }
        atomic_store_explicit(&s->state, BUF_READY, memory_order_release);
        wj_request(WJ_REQ_THREAD | WJ_REQ_RECORDS);
        wj_wake();
    }
    errno = saved;
}

// ---------------------------------------------------------------- the watchdog's side

// Sample k is taken at (1, 2, ... 8, 16, 32, ...) times the threshold into the stall.
static uint64_t sample_due(const wj_stall *s, uint32_t k) {
    uint64_t mult = k < 8 ? k + 1 : 8ull << (k - 7);
    return s->start + mult * wj_stall_ns;
}

// Can a signal interrupt what the thread is doing now without the app seeing EINTR? Running
// in user space: yes. In a system call: only those SA_RESTART restarts.
// A socket's receive and send timeouts, read from wedjat's thread, whose fd table is not the
// app's: the app's fd is duplicated into it for a moment (pidfd_getfd). 1: no timeouts (or
// not a socket), 0: a timeout, or unknown.
static int no_socket_timeouts(int fd) {
    int pidfd = (int)syscall(434 /* pidfd_open */, wj_proc.pid, 0);
    if (pidfd < 0) return 0;
    int mine = (int)syscall(438 /* pidfd_getfd */, pidfd, fd, 0);
    wj_sys_close(pidfd);
    if (mine < 0) return 0;
    struct timeval tv[2];
    socklen_t len = sizeof tv[0];
    int ok;
    if (syscall(SYS_getsockopt, mine, SOL_SOCKET, SO_RCVTIMEO, &tv[0], &len) != 0) {
        ok = errno == ENOTSOCK;  // a pipe or a file: SA_RESTART restarts its reads
    } else {
        len = sizeof tv[1];
        ok = syscall(SYS_getsockopt, mine, SOL_SOCKET, SO_SNDTIMEO, &tv[1], &len) == 0 && !tv[0].tv_sec &&
             !tv[0].tv_usec && !tv[1].tv_sec && !tv[1].tv_usec;
    }
    wj_sys_close(mine);
    return ok;
}

static int safe_to_signal(int tid) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    long n = wj_read_file(path, buf, sizeof buf - 1);
    if (n <= 0) return 0;
    buf[n] = 0;
    if (strncmp(buf, "running", 7) == 0) return 1;
    char *p = buf;
    long nr = strtol(p, &p, 10);
    unsigned long args[6] = {0};
    for (int i = 0; i < 6; i++) args[i] = strtoul(p, &p, 16);
    switch (nr) {
    case SYS_futex:  // a wait without a timeout restarts; with one it may return EINTR
        return ((args[1] & 0x7f) == FUTEX_WAIT || (args[1] & 0x7f) == FUTEX_WAIT_BITSET) ? args[3] == 0 : 1;
    case SYS_read: case SYS_readv: case SYS_pread64: case SYS_write: case SYS_writev: case SYS_pwrite64:
    case SYS_recvfrom: case SYS_recvmsg: case SYS_sendto: case SYS_sendmsg: {
        // A socket with a receive or send timeout returns EINTR even under SA_RESTART.
        return no_socket_timeouts((int)args[0]);
    }
    case SYS_accept: case SYS_accept4: case SYS_connect: case SYS_wait4: case SYS_waitid: case SYS_flock:
    case SYS_fsync: case SYS_fdatasync: case SYS_open: case SYS_openat: case SYS_sendfile:
        return 1;
    default:
        return 0;
    }
}

static void take_sample(wj_loop *l, wj_stall *s, int tid, uint64_t now) {
    uint32_t k = s->nsamples;
    s->next_sample = k + 1 < WJ_STALL_SAMPLES ? sample_due(s, k + 1) : UINT64_MAX;
    // Loaded half a threshold ago in all but odd cases (a round delayed that long): a sleeping
    // thread's own sample needs it too.
    int have_unwinder = unwinder_ready();
    uint32_t ph = atomic_load(&l->phase);
    if (ph == PH_SLEEP) {  // the thread samples itself when the sleep returns
        atomic_store(&l->want_self, 1);
        return;
    }
    if (ph != PH_BUSY || atomic_load(&l->req) || !have_unwinder || !install_signal() || !safe_to_signal(tid)) {
        s->lost++;
        return;
    }
    atomic_store(&l->park, PARK_IDLE);
    atomic_store(&l->req, 1);
    uint32_t busy = PH_BUSY;
    if (!atomic_compare_exchange_strong(&l->phase, &busy, PH_SIGNALED)) {
        atomic_store(&l->req, 0);  // it went back to waiting: the stall is over
        return;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = wj_signal_private();
    si.si_code = SI_QUEUE;
    si.si_pid = wj_proc.pid;
    si.si_uid = getuid();
    si.si_value.sival_int = WJ_SIG_MAGIC;
    if (syscall(SYS_rt_tgsigqueueinfo, wj_proc.pid, tid, si.si_signo, &si) != 0) {
        atomic_store(&l->req, 0);
        uint32_t sig = PH_SIGNALED;
        atomic_compare_exchange_strong(&l->phase, &sig, PH_BUSY);
        s->lost++;
        return;
    }
    // Until the handler parked (5 ms at most: a thread that blocks the signal never does).
    struct timespec ts = {0, 1000000L};
    for (int i = 0; i < 5 && atomic_load(&l->park) == PARK_IDLE; i++) futex(&l->park, FUTEX_WAIT_PRIVATE, PARK_IDLE, &ts);
    uint32_t idle = PARK_IDLE;
    if (atomic_compare_exchange_strong(&l->park, &idle, PARK_ABANDONED)) {
        s->lost++;  // the signal is still queued; the thread settles it at its next wait
        return;
    }
    wj_sample *smp = &s->samples[k];
    smp->t = wj_now_ns();
    smp->n = 0;
    smp->interrupted = 1;
    if (atomic_load(&l->park_phase) == PH_SIGNALED) {
        unw_cursor_t cur;
        if (unw.init_local2(&cur, (unw_context_t *)atomic_load(&l->uc), UNW_INIT_SIGNAL_FRAME) >= 0)
            smp->n = walk(&cur, smp->frames);
    }
    smp->cpu_ns = thread_cpu_ns(tid);
    uint32_t parked = PARK_PARKED;
    int released = atomic_compare_exchange_strong(&l->park, &parked, PARK_RELEASED);
    futex(&l->park, FUTEX_WAKE_PRIVATE, 1, 0);
    // A thread that gave up waiting went on while its stack was read: not a sample.
    if (!released || atomic_load(&l->park_phase) != PH_SIGNALED || WJ_LOAD(l->busy_since) != s->start) {
        s->lost++;
        return;
    }
    s->nsamples = k + 1;
}

static void finish_loop_stall(wj_loop *l, uint64_t end, uint64_t cpu_end, int ongoing) {
    wj_stall *s = &stalls[l->stall - 1];
    l->stall = 0;
    s->end = end;
    s->cpu_end = cpu_end;
    s->ongoing = ongoing;
    atomic_store_explicit(&s->state, BUF_READY, memory_order_release);
}

static void start_loop_stall(wj_loop *l, int tid, uint64_t since) {
    wj_stall *s = claim_buffer(BUF_ACTIVE);
    if (!s) return;
    l->stall = (int)(s - stalls) + 1;
    s->kind = 0;
    s->tid = tid;
    s->start = since;
    uint32_t after = WJ_LOAD(l->after);
    uint32_t index = after - WJ_READY_POLL;  // wraps for codes below WJ_READY_POLL
    s->after = index < sizeof wait_names / sizeof *wait_names ? wait_names[index] : "";
    s->next_sample = sample_due(s, 0);
    // The thread's CPU clock from here to the end of the stall tells on-CPU from off-CPU.
    s->t_first = wj_now_ns();
    s->cpu_first = thread_cpu_ns(tid);
    s->has_cpu = s->cpu_first != 0;
    thread_name(tid, s->thread, sizeof s->thread);
}

static _Atomic uint64_t watch_due;

// When wedjat's thread loads the unwinder unasked: UINT64_MAX while no loop thread has waited,
// or once it is loaded (or failed).
static uint64_t unwinder_due(void) {
    uint64_t since = atomic_load_explicit(&loops_since, memory_order_relaxed);
    return since && atomic_load(&unw.state) == 0 ? since + wj_stall_ns / 2 : UINT64_MAX;
}

// What loop l's thread reported since the last look: a sample it took itself (after a sleep),
// and the end its wait saw (with its CPU time). Returns the stall still open, if any.
static wj_stall *settle_reported(wj_loop *l, int tid, uint64_t now) {
    wj_stall *s = l->stall ? &stalls[l->stall - 1] : 0;
    uint64_t self = atomic_load_explicit(&l->self_seq, memory_order_acquire);
    if (self != l->seen_self) {
        l->seen_self = self;
        if (s && l->self_busy_since == s->start && s->nsamples < WJ_STALL_SAMPLES) {
            s->samples[s->nsamples++] = l->self;
        }
    }
    uint64_t seq = atomic_load_explicit(&l->ended_seq, memory_order_acquire);
    if (seq == l->seen_ended) return s;
    l->seen_ended = seq;
    uint64_t st = WJ_LOAD(l->ended_start), en = WJ_LOAD(l->ended_end), cpu = WJ_LOAD(l->ended_cpu);
    if (s && s->start != st) { finish_loop_stall(l, now, 0, 0); s = 0; }
    if (!s) {  // ended before a round saw it: recorded without samples
        start_loop_stall(l, tid, st);
        s = l->stall ? &stalls[l->stall - 1] : 0;
        if (s) s->lost++;
    }
    if (s) finish_loop_stall(l, en, cpu, 0);
    return 0;
}

// One round of the watchdog: ends, samples, crossings. Returns when it wants the next round.
static uint64_t stalls_watch(void) {
    int used = atomic_load(&loops_used);
    if (!wj_stall_ns || !used) return 0;
    uint64_t now = wj_now_ns();
    uint64_t next = now + wj_stall_ns / 4;
    for (int i = 0; i < used; i++) {
        wj_loop *l = &loops[i];
        int tid = atomic_load(&l->tid);
        wj_stall *s = settle_reported(l, tid, now);
        if (!tid) {
            if (s) finish_loop_stall(l, now, 0, 1);
            continue;
        }
        uint32_t ph = atomic_load(&l->phase);
        uint64_t since = WJ_LOAD(l->busy_since);
        if (ph == PH_WAIT || ph == PH_NONE || !since) continue;
        // The round's clock was read before this thread's busy time began (this thread was
        // descheduled meanwhile, as on a loaded machine): read it again. Without this the
        // difference wrapped around, a busy time that had just begun passed for a stall, and
        // the thread, whose next wait saw it short, never ended it ('ongoing' to the end).
        if (WJ_UNLIKELY(since > now)) {
            now = wj_now_ns();
            if (since > now) continue;
        }
        if (now - since < wj_stall_ns) {
            // A stall this thread never reported although it has begun another busy time: its
            // own clock, read as its wait began, found that time under the threshold (the two
            // clocks straddled it). No stall: its buffer goes back unwritten.
            if (s && s->start != since && atomic_load_explicit(&l->ended_seq, memory_order_acquire) == l->seen_ended) {
                l->stall = 0;
                atomic_store(&s->state, BUF_FREE);
                s = 0;
            }
            if (since + wj_stall_ns < next) next = since + wj_stall_ns;
            continue;
        }
        if (s && s->start != since) { finish_loop_stall(l, now, 0, 0); s = 0; }
        if (!s) {
            start_loop_stall(l, tid, since);
            if (!l->stall) continue;
            s = &stalls[l->stall - 1];
        }
        if (now >= s->next_sample && s->nsamples + s->lost < WJ_STALL_SAMPLES) take_sample(l, s, tid, wj_now_ns());
        if (s->next_sample < next) next = s->next_sample;
    }
    uint64_t unwinder_at = unwinder_due();
    if (unwinder_at < next) next = unwinder_at;
    atomic_store(&watch_due, next);
    return next;
}

static uint64_t stalls_next_due(void) { return atomic_load(&watch_due); }

uint64_t wj_stalls_lost(void) { return atomic_load(&stalls_lost) + atomic_load(&loops_full); }

// The final flush: what the threads reported since the watchdog's last round first (a process
// that ends within a round of a stall's end, a server told to quit right after it, has that
// stall ended there, with its CPU time and the sample its thread took); stalls still going on
// are written as such.
static void stalls_final(void) {
    int used = atomic_load(&loops_used);
    uint64_t now = wj_now_ns();
    for (int i = 0; i < used; i++)
        if (settle_reported(&loops[i], atomic_load(&loops[i].tid), now)) finish_loop_stall(&loops[i], now, 0, 1);
}

// ---------------------------------------------------------------- records

static unsigned long long modules_adds = ~0ull, modules_subs = ~0ull;
static int modules_gen;
static int modules_segment = -1;   // the log segment the last modules record went to

static int count_changes(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *v = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        v[0] = info->dlpi_adds;
        v[1] = info->dlpi_subs;
    }
    return 1;
}

static void hex(char *out, uint64_t v) { sprintf(out, "0x%llx", (unsigned long long)v); }

static int module_json(struct dl_phdr_info *info, size_t size, void *data) {
    wj_json *j = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    char build_id[2 * 64 + 1] = "";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo) lo = a;
            if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE && !build_id[0]) {
            const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
            const unsigned char *e = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= e) {
                const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                const unsigned char *name = p + sizeof *nh;
                const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
                if (desc + nh->n_descsz > e) break;
                if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                    for (unsigned k = 0; k < nh->n_descsz && k < 64; k++) sprintf(build_id + 2 * k, "%02x", desc[k]);
                    break;
                }
                p = desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    if (!hi) return 0;
    const char *path = info->dlpi_name;
    if (!path || !path[0]) path = wj_proc.exe;  // the executable itself
    else if (strstr(path, "linux-vdso") || strstr(path, "linux-gate")) path = "[vdso]";
    char a[24];
    wj_json_begin_object(j, 0);
    wj_json_str(j, "path", path);
    hex(a, info->dlpi_addr); wj_json_str(j, "base", a);
    hex(a, lo); wj_json_str(j, "lo", a);
    hex(a, hi); wj_json_str(j, "hi", a);
    wj_json_str(j, "build_id", build_id);
    wj_json_end(j);
    return 0;
}

static size_t format_modules(char *buf, size_t cap) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    wj_json_begin(&j);
    wj_json_str(&j, "type", "modules");
    wj_json_int(&j, "ts", wj_epoch_us(wj_now_ns()));
    wj_json_int(&j, "pid", wj_proc.pid);
    wj_json_int(&j, "gen", modules_gen);
    wj_json_begin_array(&j, "modules");
    dl_iterate_phdr(module_json, &j);
    wj_json_end_array(&j);
    wj_json_end(&j);
    wj_json_newline(&j);
    return j.overflow ? 0 : j.len;
}

static size_t format_stall(char *buf, size_t cap, const wj_stall *s) {
    wj_json j;
    wj_json_init(&j, buf, cap);
    wj_json_begin(&j);
    wj_json_str(&j, "type", "stall");
    wj_json_int(&j, "ts", wj_epoch_us(s->end));
    wj_json_int(&j, "pid", wj_proc.pid);
    wj_json_int(&j, "tid", s->tid);
    wj_json_str(&j, "thread", s->thread);
    wj_json_str(&j, "kind", s->kind ? "blocked" : "loop");
    wj_json_int(&j, "start_ts", wj_epoch_us(s->start));
    wj_json_int(&j, "end_ts", wj_epoch_us(s->end));
    uint64_t dur = s->end > s->start ? s->end - s->start : 0;
    wj_json_int(&j, "duration_us", (int64_t)(dur / 1000));
    if (s->kind == 0) {
        // Measured from the threshold crossing to the end, scaled to the whole stall.
        if (s->has_cpu && s->cpu_end && s->cpu_end >= s->cpu_first && s->end > s->t_first) {
            double share = (double)(s->cpu_end - s->cpu_first) / (double)(s->end - s->t_first);
            if (share > 1) share = 1;
            wj_json_int(&j, "cpu_us", (int64_t)(share * (double)dur / 1000));
        } else {
            wj_json_null(&j, "cpu_us");
        }
        wj_json_str(&j, "after", s->after);
    } else {
        wj_json_str(&j, "call", s->call);
        if (s->fd >= 0) wj_json_int(&j, "fd", s->fd);
        if (s->peer[0]) wj_json_str(&j, "peer", s->peer);
        if (s->host[0]) wj_json_str(&j, "host", s->host);
        if (s->err) wj_json_str(&j, "result", wj_errno_name(s->err));
    }
    wj_json_int(&j, "threshold_us", (int64_t)(wj_stall_ns / 1000));
    wj_json_int(&j, "modules_gen", modules_gen);
    wj_json_begin_array(&j, "samples");
    for (uint32_t k = 0; k < s->nsamples; k++) {
        const wj_sample *smp = &s->samples[k];
        wj_json_begin_object(&j, 0);
        wj_json_int(&j, "ts", wj_epoch_us(smp->t));
        wj_json_bool(&j, "interrupted", (int)smp->interrupted);
        if (s->kind == 0 && s->has_cpu && smp->cpu_ns >= s->cpu_first)
            wj_json_int(&j, "cpu_us", (int64_t)((smp->cpu_ns - s->cpu_first) / 1000));
        wj_json_begin_array(&j, "frames");
        char a[24];
        for (uint32_t f = 0; f < smp->n; f++) { hex(a, smp->frames[f]); wj_json_str(&j, 0, a); }
        wj_json_end_array(&j);
        wj_json_end(&j);
    }
    wj_json_end_array(&j);
    wj_json_int(&j, "samples_lost", s->lost);
    if (s->ongoing) wj_json_bool(&j, "ongoing", 1);
    if (!s->nsamples)
        wj_json_str(&j, "stack_unavailable", s->no_stack ? s->no_stack
                                             : atomic_load(&unw.state) == -1 ? "libunwind.so.8 could not be loaded"
                                                                             : "no sample could be taken");
    wj_json_end(&j);
    wj_json_newline(&j);
    return j.overflow ? 0 : j.len;
}

// The next record to write: a `modules` record when the loaded objects changed since the last
// one (and a stall is waiting), else a finished stall. 0 when there is none.
static size_t next_record(char *buf, size_t cap, int *is_modules) {
    int touched = atomic_load(&stalls_touched);
    for (int i = 0; i < touched; i++) {
        wj_stall *s = &stalls[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) != BUF_READY) continue;
        unsigned long long v[2] = {0, 0};
        dl_iterate_phdr(count_changes, v);
        // Again in each log segment: a segment can be read alone.
        if (v[0] != modules_adds || v[1] != modules_subs || modules_segment != wj_proc.log.seg.index) {
            modules_adds = v[0];
            modules_subs = v[1];
            modules_segment = wj_proc.log.seg.index;
            modules_gen++;
            *is_modules = 1;
            size_t n = format_modules(buf, cap);
            return n ? n : (size_t)-1;
        }
        *is_modules = 0;
        size_t n = format_stall(buf, cap, s);
        atomic_store(&s->state, BUF_FREE);
        return n ? n : (size_t)-1;
    }
    return 0;
}

// ---------------------------------------------------------------- loops in the vitals sample

void wj_stalls_loops_json(wj_json *j, uint64_t now) {
    int used = atomic_load(&loops_used);
    struct { int i; uint64_t iter, busy; } top[16];
    int ntop = 0;
    for (int i = 0; i < used; i++) {
        wj_loop *l = &loops[i];
        if (!atomic_load(&l->tid)) continue;
        uint64_t since = WJ_LOAD(l->busy_since);
        uint32_t ph = atomic_load(&l->phase);
        uint64_t busy = WJ_LOAD(l->busy_total) + (ph != PH_WAIT && since && now > since ? now - since : 0);
        uint64_t iter = WJ_LOAD(l->iterations);
        uint64_t d_busy = busy > l->prev_busy ? busy - l->prev_busy : 0;
        uint64_t d_iter = iter - l->prev_iter;
        l->prev_busy = busy;
        l->prev_iter = iter;
        if (!d_iter && !d_busy) continue;
        int at = ntop < 16 ? ntop++ : (top[15].busy < d_busy ? 15 : -1);
        if (at < 0) continue;
        top[at].i = i; top[at].iter = d_iter; top[at].busy = d_busy;
        for (int k = at; k > 0 && top[k].busy > top[k - 1].busy; k--) {
            __typeof__(top[0]) t = top[k]; top[k] = top[k - 1]; top[k - 1] = t;
        }
    }
    if (!ntop) return;
    wj_json_begin_array(j, "loops");
    for (int k = 0; k < ntop; k++) {
        wj_loop *l = &loops[top[k].i];
        uint64_t interval = l->prev_t && now > l->prev_t ? now - l->prev_t : 0;
        int tid = atomic_load(&l->tid);
        char name[16];
        thread_name(tid, name, sizeof name);
        wj_json_begin_object(j, 0);
        wj_json_int(j, "tid", tid);
        wj_json_str(j, "thread", name);
        wj_json_uint(j, "iterations", top[k].iter);
        if (interval) {
            char v[32];
            snprintf(v, sizeof v, "%.1f", (double)top[k].iter * 1e9 / (double)interval);
            wj_json_key(j, "per_s"); wj_json_raw(j, v);
            double pct = 100.0 * (double)top[k].busy / (double)interval;
            snprintf(v, sizeof v, "%.1f", pct > 100 ? 100.0 : pct);
            wj_json_key(j, "busy_pct"); wj_json_raw(j, v);
        }
        wj_json_uint(j, "max_busy_us", atomic_exchange(&l->max_busy, 0) / 1000);
        wj_json_end(j);
    }
    wj_json_end_array(j);
    for (int i = 0; i < used; i++) loops[i].prev_t = now;
}

// ---------------------------------------------------------------- life cycle

static void stalls_init(void) {
    wj_stall_ns = (uint64_t)wj_proc.config.stall_ms * 1000000ull;
}

// Only the forking thread lives on in the child: its slot stays, the others go.
static void stalls_forked_child(void) {
    int used = atomic_load(&loops_used);
    for (int i = 0; i < used; i++) {
        loops[i].stall = 0;
        if (&loops[i] != my_loop) atomic_store(&loops[i].tid, 0);
    }
    if (my_loop) {
        atomic_store(&my_loop->tid, wj_gettid());
        atomic_store(&my_loop->req, 0);
    }
    int touched = atomic_load(&stalls_touched);
    for (int i = 0; i < touched; i++) atomic_store(&stalls[i].state, BUF_FREE);
    modules_adds = modules_subs = ~0ull;
    modules_gen = 0;
    modules_segment = -1;
    atomic_store(&watch_due, 0);
}

// ---------------------------------------------------------------- the component

static void stalls_round(const wj_round *r) {
    (void)r;
    if (!wj_stall_ns) return;
    // The unwinder, loaded here (wedjat's thread) once a blocking call asked for it, or half a
    // threshold after the first loop thread's first wait: no loop can stall sooner than a
    // threshold after that, and a short process (a one-request curl, 0.07 ms less) never loads it.
    if (atomic_load(&unw.state) == 0 && (atomic_load(&unwinder_wanted) || unwinder_due() <= wj_now_ns())) unwinder_ready();
    stalls_watch();
}

static void stalls_collect(const wj_round *r, const wj_out *out) {
    // Stalls that ended (with the module map they need first); at the end, those going on.
    if (r->final) stalls_final();
    for (int is_modules;;) {
        size_t cap;
        char *line = out->room(out->ctx, &cap);
        size_t len = next_record(line, cap, &is_modules);
        if (!len) break;
        out->line(out->ctx, is_modules ? WJ_REC_MODULES : WJ_REC_STALL, line, len == (size_t)-1 ? 0 : len);
    }
}

const wj_component wj_stalls_component = {
    .name = "stalls",
    .init = stalls_init,
    .forked_child = stalls_forked_child,
    .next_due = stalls_next_due,
    .round = stalls_round,
    .collect = stalls_collect,
};
