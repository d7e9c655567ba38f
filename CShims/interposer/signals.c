// Signal dispositions (signals.h). For each signal the app gave a handler, the kernel holds
// one of two trampolines instead, with the app's flags and mask (plus SA_SIGINFO); the
// trampoline's slot holds the app's handler. Changing a handler writes the slot the kernel
// does not use, then installs its trampoline: a signal delivered under the old registration
// still runs the old handler, as it would without wedjat. A query returns the kernel's entry
// with the app's handler and SA_SIGINFO bit put back: flags, mask and restorer are the
// kernel's own. SA_RESETHAND needs nothing: the kernel resets the trampoline to SIG_DFL.
//
// Everything here is async-signal-safe (sigaction is): no lock but a per-signal try-flag
// that a writer waits on for a bounded time.
#include "signals.h"
#include "context.h"
#include "hooks.h"
#include "real.h"
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "sys_raw.h"

#define WJ_NSIG 65
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000   // the kernel's (glibc sets it on every action, its headers hide it)
#endif

typedef struct {
    void *fn;        // the app's handler (sa_handler or sa_sigaction)
    uint8_t siginfo; // it takes (sig, info, context)
    uint8_t onstack; // SA_ONSTACK: it may run on the alternate stack
} app_handler;

typedef struct {
    app_handler slot[2];
    _Atomic int active;   // the slot whose trampoline the kernel holds (when `ours`)
    _Atomic int writing;  // a sigaction() for this signal is under way
    struct sigaction held;  // a held SIG_DFL (signals.h): the entry the kernel would show
} disposition;

WJ_COLD static disposition disp[WJ_NSIG];   // 12 KiB: out of the small state
static int hold_default(int sig, disposition *d, const struct sigaction *view);

// wedjat's own signal: its handler, and what the app set on that number meanwhile (the kernel
// keeps wedjat's registration: SA_RESTART, so a sample never makes a call return EINTR).
static _Atomic int private_sig;
static int private_magic;
static void (*private_handler)(int, siginfo_t *, void *);
static struct sigaction private_app;   // the app's own action on that number
static _Atomic uint32_t private_app_seq;

int wj_signal_private(void) { return atomic_load(&private_sig); }

// SIG_DFL of a signal whose default ends the process, held by wedjat (signals.h): its slot's
// handler is this marker.
static void (*on_fatal_signal)(int);
static void default_marker(int sig) { (void)sig; }
#define DFL_HELD ((void *)default_marker)

static int fatal_watched(int sig) {
    return on_fatal_signal && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP);
}

static int is_default(const struct sigaction *a) {
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

// The default action, after wedjat wrote the log's end: the disposition back to SIG_DFL, the
// signal sent again to this thread and unblocked: the kernel ends the process with it.
static void fatal_default(int sig) {
    int err = errno;
    if (!(wj_self.flags & WJ_T_VFORK) && syscall(SYS_getpid) == wj_context_pid) on_fatal_signal(sig);
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    WJ_REAL(sigaction)(sig, &d, 0);
    syscall(SYS_tgkill, (int)syscall(SYS_getpid), (int)syscall(SYS_gettid), sig);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, 0);
    errno = err;   // not reached: the signal ended the process
}

int wj_signal_is_ours(const siginfo_t *si) {
    return si && si->si_code == SI_QUEUE && si->si_pid == wj_context_pid && si->si_value.sival_int == private_magic;
}

// The app's handler for a signal wedjat did not send, on wedjat's number: as the kernel would.
static void chain_private(int sig, siginfo_t *si, void *uc) {
    struct sigaction a;
    uint32_t seq;
    do {
        seq = atomic_load(&private_app_seq);
        a = private_app;
    } while (seq != atomic_load(&private_app_seq));
    if (a.sa_flags & SA_SIGINFO) {
        if (a.sa_sigaction) a.sa_sigaction(sig, si, uc);
    } else if (a.sa_handler == SIG_DFL) {
        // The default action of a real-time signal ends the process: do exactly that.
        struct sigaction d;
        memset(&d, 0, sizeof d);
        d.sa_handler = SIG_DFL;
        WJ_REAL(sigaction)(sig, &d, 0);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        pthread_sigmask(SIG_UNBLOCK, &s, 0);
        syscall(SYS_tgkill, wj_context_pid, (int)syscall(SYS_gettid), sig);
    } else if (a.sa_handler != SIG_IGN) {
        a.sa_handler(sig);
    }
}

// Around the app's handler: a frame for context.c, with where it runs (the alternate stack's
// bounds when it is on one) and where the interrupted code was.
static void run_app_handler(const app_handler *h, int sig, siginfo_t *si, void *uc, int private_num) {
    int err = errno;
    uintptr_t lo = 0, hi = 0;
    if (h->onstack) {
        stack_t ss;
        if (syscall(SYS_sigaltstack, 0, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
            lo = (uintptr_t)ss.ss_sp;
            hi = lo + ss.ss_size;
        }
    }
    uintptr_t interrupted = 0;
#if defined(__x86_64__)
    if (uc) interrupted = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
#endif
    wj_handler_enter(wj_stack_pointer(), lo, hi, interrupted);
    errno = err;  // the app's handler sees the interrupted code's errno
    if (private_num) chain_private(sig, si, uc);
    else if (h->siginfo) ((void (*)(int, siginfo_t *, void *))h->fn)(sig, si, uc);
    else ((void (*)(int))h->fn)(sig);
    wj_handler_leave();
}

static void dispatch(int which, int sig, siginfo_t *si, void *uc) {
    if (sig == atomic_load_explicit(&private_sig, memory_order_relaxed) && sig > 0) {
        if (wj_signal_is_ours(si)) {
            private_handler(sig, si, uc);
            return;
        }
        app_handler none = {0, 0, 1};
        run_app_handler(&none, sig, si, uc, 1);
        return;
    }
    if (sig <= 0 || sig >= WJ_NSIG) return;
    app_handler h = disp[sig].slot[which];
    if (!h.fn) return;
    if (h.fn == DFL_HELD) {
        fatal_default(sig);
        return;
    }
    run_app_handler(&h, sig, si, uc, 0);
}

static void trampoline0(int sig, siginfo_t *si, void *uc) { dispatch(0, sig, si, uc); }
static void trampoline1(int sig, siginfo_t *si, void *uc) { dispatch(1, sig, si, uc); }

static int is_trampoline(const struct sigaction *a) {
    if (!(a->sa_flags & SA_SIGINFO)) return -1;
    if (a->sa_sigaction == trampoline0) return 0;
    if (a->sa_sigaction == trampoline1) return 1;
    return -1;
}

static int handles(const struct sigaction *a) {
    void *fn = (a->sa_flags & SA_SIGINFO) ? (void *)a->sa_sigaction : (void *)a->sa_handler;
    return fn != (void *)SIG_DFL && fn != (void *)SIG_IGN;
}

// The kernel's entry, as it would be without wedjat.
static void app_view(int sig, struct sigaction *k) {
    int which = is_trampoline(k);
    if (which < 0 || sig <= 0 || sig >= WJ_NSIG) return;
    const app_handler *h = &disp[sig].slot[which];
    if (h->fn == DFL_HELD) {   // the app's SIG_DFL, as the kernel would show it
        *k = disp[sig].held;
        return;
    }
    if (h->siginfo) {
        k->sa_sigaction = (void (*)(int, siginfo_t *, void *))h->fn;
    } else {
        k->sa_flags &= ~SA_SIGINFO;
        k->sa_handler = (void (*)(int))h->fn;
    }
}

static void begin_write(disposition *d) {
    for (int i = 0; i < 1000; i++) {
        int idle = 0;
        if (atomic_compare_exchange_strong(&d->writing, &idle, 1)) return;
        sched_yield();
    }
    // Held for this long: a handler interrupted a sigaction() of this thread. Go on.
}

static void end_write(disposition *d) { atomic_store(&d->writing, 0); }

// The private signal's number: the app's action there is remembered, the kernel keeps ours.
static int private_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    struct sigaction prev;
    uint32_t seq;
    do {
        seq = atomic_load(&private_app_seq);
        prev = private_app;
    } while (seq != atomic_load(&private_app_seq));
    if (act) {
        atomic_fetch_add(&private_app_seq, 1);
        private_app = *act;
        atomic_fetch_add(&private_app_seq, 1);
    }
    if (old) *old = prev;
    (void)sig;
    return 0;
}

int wj_hook_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (sig <= 0 || sig >= WJ_NSIG || sig == SIGKILL || sig == SIGSTOP)
        return WJ_REAL(sigaction)(sig, act, old);
    int p = atomic_load_explicit(&private_sig, memory_order_relaxed);
    if (p > 0 && sig == p) return private_sigaction(sig, act, old);
    disposition *d = &disp[sig];
    if (!act) {
        int r = WJ_REAL(sigaction)(sig, 0, old);
        if (r == 0 && old) app_view(sig, old);
        return r;
    }
    begin_write(d);
    // The previous action comes back from the call that sets the new one (one system call, as
    // the app's own), and is shown as the app set it. app_view finds the app's handler by the
    // trampoline the kernel had, whose slot is not the one written here.
    struct sigaction prev;
    int r;
    if (handles(act)) {
        int next = 1 - atomic_load(&d->active);
        d->slot[next].fn = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction : (void *)act->sa_handler;
        d->slot[next].siginfo = (act->sa_flags & SA_SIGINFO) != 0;
        d->slot[next].onstack = (act->sa_flags & SA_ONSTACK) != 0;
        struct sigaction k = *act;
        k.sa_flags |= SA_SIGINFO;
        k.sa_sigaction = next ? trampoline1 : trampoline0;
        r = WJ_REAL(sigaction)(sig, &k, &prev);
        if (r == 0) {
            app_view(sig, &prev);
            atomic_store(&d->active, next);
        }
    } else if (fatal_watched(sig) && is_default(act)) {
        r = WJ_REAL(sigaction)(sig, 0, &prev);
        if (r == 0) {
            app_view(sig, &prev);
            r = hold_default(sig, d, act);
        }
    } else {
        r = WJ_REAL(sigaction)(sig, act, &prev);
        if (r == 0) app_view(sig, &prev);
    }
    int err = errno;
    end_write(d);
    if (r == 0 && old) *old = prev;
    errno = err;
    return r;
}

// signal(), bsd_signal(), ssignal(): BSD semantics, as glibc gives them (the signal blocked
// while its handler runs, interrupted calls restarted).
static sighandler_t set_handler(int sig, sighandler_t handler, int flags, int block_self) {
    if (handler == SIG_ERR || sig <= 0 || sig >= WJ_NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (block_self) sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    if (wj_hook_sigaction(sig, &act, &old) < 0) return SIG_ERR;
    return old.sa_handler;
}

sighandler_t wj_hook_signal(int sig, sighandler_t handler) { return set_handler(sig, handler, SA_RESTART, 1); }
sighandler_t wj_hook_bsd_signal(int sig, sighandler_t handler) { return set_handler(sig, handler, SA_RESTART, 1); }
sighandler_t wj_hook_ssignal(int sig, sighandler_t handler) { return set_handler(sig, handler, SA_RESTART, 1); }
// System V semantics: reset to the default on delivery, not blocked while it runs, calls not
// restarted.
sighandler_t wj_hook_sysv_signal(int sig, sighandler_t handler) {
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, 0);
}
sighandler_t wj_hook___sysv_signal(int sig, sighandler_t handler) { return wj_hook_sysv_signal(sig, handler); }

// sigset(): SIG_HOLD blocks the signal; any other disposition is set and the signal unblocked.
// The result is SIG_HOLD when the signal was blocked before, else the previous disposition.
sighandler_t wj_hook_sigset(int sig, sighandler_t disp_) {
    if (disp_ == SIG_ERR || sig < 1 || sig >= WJ_NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigset_t set, oset;
    sigemptyset(&set);
    sigaddset(&set, sig);
    struct sigaction act, oact;
    if (disp_ == SIG_HOLD) {
        if (pthread_sigmask(SIG_BLOCK, &set, &oset) != 0) return SIG_ERR;
        if (sigismember(&oset, sig)) return SIG_HOLD;
        if (wj_hook_sigaction(sig, 0, &oact) < 0) return SIG_ERR;
        return oact.sa_handler;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = disp_;
    sigemptyset(&act.sa_mask);
    if (wj_hook_sigaction(sig, &act, &oact) < 0) return SIG_ERR;
    if (pthread_sigmask(SIG_UNBLOCK, &set, &oset) != 0) return SIG_ERR;
    return sigismember(&oset, sig) ? SIG_HOLD : oact.sa_handler;
}

// Installs the trampoline with the held-default marker (the caller holds d->writing). `view`:
// the app's SIG_DFL as it set it (the kernel then holds its flags and mask with glibc's
// SA_RESTORER and restorer), or as an untouched entry reads (all zero) when 0.
static int hold_default(int sig, disposition *d, const struct sigaction *view) {
    int next = 1 - atomic_load(&d->active);
    d->slot[next].fn = DFL_HELD;
    d->slot[next].siginfo = 0;
    d->slot[next].onstack = 0;
    struct sigaction k;
    memset(&k, 0, sizeof k);
    k.sa_sigaction = next ? trampoline1 : trampoline0;
    k.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&k.sa_mask);
    int r = WJ_REAL(sigaction)(sig, &k, 0);
    if (r == 0) {
        memset(&d->held, 0, sizeof d->held);
        if (view) {
            struct sigaction now;
            d->held.sa_handler = SIG_DFL;
            d->held.sa_flags = view->sa_flags;
            d->held.sa_mask = view->sa_mask;
            if (WJ_REAL(sigaction)(sig, 0, &now) == 0) {   // glibc's restorer, as it set it
                d->held.sa_flags |= now.sa_flags & SA_RESTORER;
                d->held.sa_restorer = now.sa_restorer;
            }
        }
        atomic_store(&d->active, next);
    }
    return r;
}

void wj_signal_watch_fatal(void (*on_fatal)(int sig)) {
    on_fatal_signal = on_fatal;
    const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        disposition *d = &disp[sigs[i]];
        begin_write(d);
        struct sigaction cur;
        if (WJ_REAL(sigaction)(sigs[i], 0, &cur) == 0 && is_default(&cur)) hold_default(sigs[i], d, 0);
        end_write(d);
    }
}

int wj_signal_claim_private(void (*handler)(int, siginfo_t *, void *), int magic) {
    int sig = atomic_load(&private_sig);
    if (sig) return sig;
    private_handler = handler;
    private_magic = magic;
    for (int s = SIGRTMAX - 7; s >= SIGRTMIN + 4; s--) {
        struct sigaction cur;
        if (WJ_REAL(sigaction)(s, 0, &cur) != 0 || handles(&cur) || (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN))
            continue;
        begin_write(&disp[s]);
        memset(&private_app, 0, sizeof private_app);
        private_app.sa_handler = SIG_DFL;
        struct sigaction act;
        memset(&act, 0, sizeof act);
        act.sa_sigaction = trampoline0;
        act.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&act.sa_mask);
        atomic_store(&private_sig, s);  // before the kernel can deliver anything there
        int r = WJ_REAL(sigaction)(s, &act, 0);
        end_write(&disp[s]);
        if (r == 0) return s;
        atomic_store(&private_sig, 0);
        break;
    }
    atomic_store(&private_sig, -1);
    return -1;
}
