// The exported wrappers of hooks.def's WJ_HOOK, WJ_HOOK_VOID and WJ_HOOK_END entries. Each
// asks the gate first: where wedjat must not act (a vfork child, wedjat's own thread or work,
// a disabled or ended image) the call goes straight to the real function and nothing else of
// wedjat's runs. Before the library initialised, the first hook initialises it.
#include "context.h"
#include "hooks.h"
#include "lifecycle.h"

static inline int gate_or_init(void) {
    int g = wj_gate();
    if (WJ_UNLIKELY(g == WJ_GATE_INIT)) g = wj_lc_init();
    return g;
}

static inline int gate_ending_or_init(void) {
    int g = wj_gate_ending();
    if (WJ_UNLIKELY(g == WJ_GATE_INIT)) g = wj_lc_init();
    return g;
}

#define WJ_HOOK(ret, name, params, args)                                     \
    WJ_EXPORT ret name params {                                             \
        if (WJ_UNLIKELY(gate_or_init() != WJ_GATE_RUN)) return WJ_REAL(name) args; \
        return wj_hook_##name args;                                         \
    }
#define WJ_HOOK_VOID(name, params, args)                                     \
    WJ_EXPORT void name params {                                            \
        if (WJ_UNLIKELY(gate_or_init() != WJ_GATE_RUN)) {                   \
            WJ_REAL(name) args;                                             \
            return;                                                         \
        }                                                                   \
        wj_hook_##name args;                                                \
    }
#define WJ_HOOK_END(name, params, args)                                      \
    WJ_EXPORT void name params {                                            \
        if (gate_ending_or_init() == WJ_GATE_RUN) wj_hook_##name args;      \
        WJ_REAL(name) args;                                                 \
        __builtin_unreachable();                                            \
    }
#define WJ_HOOK_RAW(ret, name, params, args)
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs)
#include "hooks.def"
