// The thread context (see context.h): the gate every hook passes, the reentrancy guard, the
// vfork mark and the signal-handler frames.
#include "context.h"
#include "real.h"
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

__thread wj_thread wj_self __attribute__((tls_model("initial-exec")));
_Atomic int wj_run_state;
int wj_context_pid;
_Atomic uint32_t wj_direct_epoch;

// The top handler frame is over when the stack pointer is back above it (its handler was left
// by a longjmp), or off the alternate stack it ran on. A push it interrupted was abandoned:
// its ring slot is given back as dropped, so the ring's reader never waits for it.
static int frame_over(const wj_handler_frame *f, uintptr_t sp) {
    if (f->alt_hi) return sp < f->alt_lo || sp >= f->alt_hi;
    return sp > f->sp;
}

static void drop_over_frames(wj_thread *t, uintptr_t sp) {
    while (t->handlers && !t->handlers_deep && frame_over(&t->frames[t->handlers - 1], sp)) {
        wj_handler_frame *f = &t->frames[t->handlers - 1];
        if (f->push_ring) wj_ring_abandon((wj_ring *)f->push_ring, f->push_pos);
        t->handlers--;
    }
    if (!t->handlers && !t->handlers_deep) t->flags &= ~(uint32_t)WJ_T_HANDLER;
}

// The guard is live when the code that took it is still below us on the stack: same handler
// depth and a deeper stack pointer, or a handler that interrupted it.
static int guard_live(const wj_thread *t, uintptr_t sp) {
    uint32_t depth = t->handlers + t->handlers_deep;
    if (depth > t->inside_handlers) return 1;
    if (depth < t->inside_handlers) return 0;
    return sp < t->inside_sp;
}

int wj_gate_slow(int run, int ending) {
    wj_thread *t = &wj_self;
    uint32_t f = t->flags;
    if (run == WJ_RUN_LOADED) return (f & (WJ_T_INTERNAL | WJ_T_INSIDE)) ? WJ_GATE_PASS : WJ_GATE_INIT;
    if (run != WJ_RUN_RECORDING || (f & WJ_T_INTERNAL)) return WJ_GATE_PASS;
    if (f & WJ_T_VFORK) {
        // After vfork the child shares our memory and this thread's TLS: tell them apart by pid.
        if ((int)syscall(SYS_getpid) != wj_context_pid) return WJ_GATE_PASS;
        t->flags &= ~(uint32_t)WJ_T_VFORK;
        wj_direct_new_epoch();  // the child (now exec'd, or gone) may hold our sockets
    }
    uintptr_t sp = wj_stack_pointer();
    if (t->flags & WJ_T_HANDLER) drop_over_frames(t, sp);
    if (t->flags & WJ_T_INSIDE) {
        if (guard_live(t, sp)) return ending ? WJ_GATE_RUN : WJ_GATE_PASS;
        t->flags &= ~(uint32_t)WJ_T_INSIDE;  // left behind by a longjmp
    }
    return WJ_GATE_RUN;
}

void wj_guard_take(void) {
    wj_thread *t = &wj_self;
    t->inside_sp = wj_stack_pointer();
    t->inside_handlers = t->handlers + t->handlers_deep;
    t->flags |= WJ_T_INSIDE;
}

void wj_guard_drop(void) { wj_self.flags &= ~(uint32_t)WJ_T_INSIDE; }

void wj_context_mark_internal(void) { wj_self.flags |= WJ_T_INTERNAL; }
int wj_context_is_internal(void) { return (wj_self.flags & WJ_T_INTERNAL) != 0; }

void wj_context_mark_vfork(void) { wj_self.flags |= WJ_T_VFORK; }

void *wj_vfork_prepare(void) {
    wj_self.flags |= WJ_T_VFORK;
    return (void *)WJ_REAL(vfork);
}

void wj_handler_enter(uintptr_t sp, uintptr_t alt_lo, uintptr_t alt_hi, uintptr_t interrupted_sp) {
    wj_thread *t = &wj_self;
    // What a longjmp out of an earlier handler (or out of guarded work) left behind: the code
    // this signal interrupted is above it.
    if (interrupted_sp) {
        if (t->flags & WJ_T_HANDLER) drop_over_frames(t, interrupted_sp);
        if ((t->flags & WJ_T_INSIDE) && !guard_live(t, interrupted_sp)) t->flags &= ~(uint32_t)WJ_T_INSIDE;
    }
    if (t->handlers < WJ_HANDLER_FRAMES && !t->handlers_deep) {
        wj_handler_frame *f = &t->frames[t->handlers++];
        f->sp = sp;
        f->alt_lo = alt_lo;
        f->alt_hi = alt_hi;
        // A push this signal interrupted: it resumes when the handler returns, and is
        // abandoned if the handler never does.
        f->push_ring = t->push.ring;
        f->push_pos = t->push.pos;
        t->push.ring = 0;
    } else {
        t->handlers_deep++;  // too deep to track: conservative (in a handler) until it returns
    }
    t->flags |= WJ_T_HANDLER;
}

void wj_handler_leave(void) {
    wj_thread *t = &wj_self;
    if (t->handlers_deep) {
        t->handlers_deep--;
    } else if (t->handlers) {
        wj_handler_frame *f = &t->frames[--t->handlers];
        t->push.pos = f->push_pos;  // the interrupted push goes on
        t->push.ring = f->push_ring;
    }
    if (!t->handlers && !t->handlers_deep) t->flags &= ~(uint32_t)WJ_T_HANDLER;
}

void wj_context_forked(int pid) {
    wj_context_pid = pid;
    wj_direct_new_epoch();  // the parent holds the same sockets
    wj_self.flags &= ~(uint32_t)WJ_T_VFORK;
}
