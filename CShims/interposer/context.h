// What wedjat may do on the calling thread, right now: the thread context. Every hook asks
// the gate first (the generated wrappers in wrappers.c do it before any of wedjat's code
// runs), so a vfork child, wedjat's own thread, wedjat's own work, a disabled or ended
// process never run anything of wedjat's but the forwarding call.
//
// Per thread, one flag word says whether anything is unusual:
//   INTERNAL  wedjat's agent thread (and the short private-fd helper): never records itself
//   VFORK     the thread called vfork: in the child (same memory, same TLS) every hook passes
//             through; the parent clears the mark at its first hook (told apart by pid)
//   INSIDE    the reentrancy guard: wedjat's own work is running and may call hooked
//             functions (a resolver's NSS module, libunwind). It records the stack pointer and
//             handler depth where it was taken, so a guard left behind by a longjmp is seen to
//             be stale and dropped: it cannot get stuck.
//   HANDLER   a signal handler of the app runs on this thread (signals.c's trampoline keeps a
//             frame per handler). Hooks in a handler forward and do only lock-free bookkeeping;
//             whatever allocates, loads, starts a thread or takes a lock is deferred. A frame
//             left by a longjmp out of its handler is dropped the same way as a stale guard.
#ifndef WEDJAT_CONTEXT_H
#define WEDJAT_CONTEXT_H
#include "base.h"
#include "wedjat_common.h"
#include <stddef.h>

// WJ_T_UNWINDING: libunwind walks this app thread's own stack (stalls.c); its reads and
// writes of its address-checking pipe are answered by io.c (the pipe is in wedjat's fd table).
// WJ_T_TLS_LEARN: inside a TLS library call whose socket the library could not name (tls.c):
// the I/O hooks take their slow path and note the fd they move bytes on. The gate ignores it.
enum { WJ_T_INTERNAL = 1, WJ_T_VFORK = 2, WJ_T_INSIDE = 4, WJ_T_HANDLER = 8, WJ_T_UNWINDING = 16, WJ_T_TLS_LEARN = 32 };
// libunwind's address check on an unwinding thread, answered without any fd (io.c): its
// read()s, write()s and syscall(SYS_read/SYS_write)s of its pipe all come here.
WJ_HIDDEN long wj_unwind_io(int is_write, const void *p, size_t n);

#define WJ_HANDLER_FRAMES 8

typedef struct wj_handler_frame {
    uintptr_t sp;                 // the trampoline's stack pointer
    uintptr_t alt_lo, alt_hi;     // the alternate signal stack it runs on (0, 0: none)
    void *push_ring;              // a ring push it interrupted on this thread, if any
    uint64_t push_pos;
} wj_handler_frame;

typedef struct wj_thread {
    uint32_t flags;               // WJ_T_*
    uint32_t handlers;            // handler frames in use (<= WJ_HANDLER_FRAMES)
    uint32_t handlers_deep;       // handlers nested deeper than the frames kept (counted)
    uint32_t inside_handlers;     // the guard: handler depth when it was taken
    uintptr_t inside_sp;          //            and the stack pointer
    wj_ring_mark push;            // a ring push in progress (events.c)
    wj_handler_frame frames[WJ_HANDLER_FRAMES];
} wj_thread;

WJ_HIDDEN extern __thread wj_thread wj_self __attribute__((tls_model("initial-exec")));

// The process-wide part of the gate, set by lifecycle.c: LOADED until the library has
// initialised (a hook then initialises it), RECORDING, or OFF (disabled, or the image ended).
enum { WJ_RUN_LOADED = 0, WJ_RUN_RECORDING = 1, WJ_RUN_OFF = 2 };
WJ_HIDDEN extern _Atomic int wj_run_state;
WJ_HIDDEN extern int wj_context_pid;   // this process's pid (a vfork child has another)

// Direct system calls (io.c): once a second thread exists (wedjat's own), glibc's send,
// recv, read, write and their variants take their cancellable path, about 48 instructions a
// call, only so that pthread_cancel can act inside the call. A call that cannot block (its
// socket known O_NONBLOCK) in a process that never called pthread_cancel needs none of it.
// What is known about a socket's O_NONBLOCK holds for one epoch: the epoch moves whenever
// another process may have come to share this one's sockets (fork, vfork, clone), as that
// process could change it. The first pthread_cancel turns direct calls off for good.
#define WJ_DIRECT_OFF 0x80000000u
#define WJ_DIRECT_NONE 0xffffffffu   // a socket's mark when its calls go through libc
WJ_HIDDEN extern _Atomic uint32_t wj_direct_epoch;
static inline void wj_direct_new_epoch(void) {
    uint32_t e = atomic_load(&wj_direct_epoch);
    // Never 0x7fffffff: with the off bit that would be WJ_DIRECT_NONE.
    while (!(e & WJ_DIRECT_OFF) && !atomic_compare_exchange_weak(&wj_direct_epoch, &e, (e + 1) % 0x7fffffffu)) {
    }
}
static inline void wj_direct_off(void) { atomic_fetch_or(&wj_direct_epoch, WJ_DIRECT_OFF); }

enum { WJ_GATE_PASS = 0, WJ_GATE_RUN = 1, WJ_GATE_INIT = 2 };
WJ_HIDDEN int wj_gate_slow(int run, int ending);

static inline uintptr_t wj_stack_pointer(void) {
    uintptr_t sp;
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#else
    volatile char here;
    sp = (uintptr_t)&here;
#endif
    return sp;
}

// May wedjat act on this call? RUN: yes (wj_in_handler() says how far); PASS: forward only;
// INIT: the library has not initialised yet (lifecycle.c does it, then asks again).
static inline int wj_gate(void) {
    int run = atomic_load_explicit(&wj_run_state, memory_order_relaxed);
    if (WJ_LIKELY(run == WJ_RUN_RECORDING && wj_self.flags == 0)) return WJ_GATE_RUN;
    return wj_gate_slow(run, 0);
}

// The exit family's gate: it also runs inside a handler that interrupted wedjat's own work.
static inline int wj_gate_ending(void) {
    return wj_gate_slow(atomic_load_explicit(&wj_run_state, memory_order_relaxed), 1);
}

// Inside one of the app's signal handlers (valid right after a gate said RUN).
static inline int wj_in_handler(void) { return wj_self.handlers + wj_self.handlers_deep != 0; }

// The guard, around wedjat's own work that calls functions which may land in hooks.
WJ_HIDDEN void wj_guard_take(void);
WJ_HIDDEN void wj_guard_drop(void);

// wedjat's own threads.
WJ_HIDDEN void wj_context_mark_internal(void);
WJ_HIDDEN int wj_context_is_internal(void);

// vfork: the assembly trampoline (and clone with CLONE_VM|CLONE_VFORK) mark the thread; the
// child then passes through every hook. Returns the real vfork.
WJ_HIDDEN void *wj_vfork_prepare(void);
WJ_HIDDEN void wj_context_mark_vfork(void);

// signals.c's trampoline, around each app handler. enter returns 1 when a frame was pushed.
// interrupted_sp: where the interrupted code was (from the ucontext), to drop frames and a
// guard that a longjmp left behind before this handler runs.
WJ_HIDDEN void wj_handler_enter(uintptr_t sp, uintptr_t alt_lo, uintptr_t alt_hi, uintptr_t interrupted_sp);
WJ_HIDDEN void wj_handler_leave(void);

// In a forked child: only the forking thread lives on; its handler frames and guard are the
// parent's story (the fork may have been called from a handler: those frames stay valid).
WJ_HIDDEN void wj_context_forked(int pid);
#endif
