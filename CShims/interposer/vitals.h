// Process vitals: the `sample` record every WEDJAT_SAMPLE_MS and at the end of the image, and
// the `startup` record (exec -> constructor -> main -> ready). A component (component.h).
#ifndef WEDJAT_VITALS_H
#define WEDJAT_VITALS_H
#include "base.h"
#include "component.h"

enum { WJ_READY_CONNECT = 1, WJ_READY_ACCEPT, WJ_READY_ACCEPT4, WJ_READY_LISTEN, WJ_READY_POLL, WJ_READY_PPOLL,
       WJ_READY_SELECT, WJ_READY_PSELECT, WJ_READY_EPOLL_WAIT, WJ_READY_EPOLL_PWAIT, WJ_READY_EPOLL_PWAIT2 };
WJ_HIDDEN extern _Atomic uint64_t wj_ready_word;  // (mono ns << 4) | WJ_READY_*, 0 until ready
WJ_HIDDEN void wj_note_ready_slow(int call);
// The program is "ready" at its first connect/accept/listen or wait call (poll, select,
// epoll_wait, ...) after main: one relaxed load once that happened.
static inline void wj_note_ready(int call) {
    if (WJ_UNLIKELY(!atomic_load_explicit(&wj_ready_word, memory_order_relaxed))) wj_note_ready_slow(call);
}
// The previous image of this process (watched) called exec at this moment.
WJ_HIDDEN void wj_vitals_exec_called(uint64_t mono_ns);

WJ_HIDDEN extern const wj_component wj_vitals_component;
#endif
