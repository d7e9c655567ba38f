// The hand-written logic of every hook whose exported wrapper is generated (wrappers.c):
// wj_hook_NAME, called only after the gate said wedjat may act on this call (context.h).
#ifndef WEDJAT_HOOKS_H
#define WEDJAT_HOOKS_H
#include "real.h"

#define WJ_HOOK(ret, name, params, args) WJ_HIDDEN ret wj_hook_##name params;
#define WJ_HOOK_VOID(name, params, args) WJ_HIDDEN void wj_hook_##name params;
#define WJ_HOOK_END(name, params, args) WJ_HIDDEN void wj_hook_##name params;
#define WJ_HOOK_RAW(ret, name, params, args)
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs)
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_HOOK_VOID
#undef WJ_HOOK_END
#undef WJ_HOOK_RAW
#undef WJ_IO_HOOK
#endif
