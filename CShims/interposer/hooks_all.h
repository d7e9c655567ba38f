// Expands WJ_ALL_HOOKS_X(ret, name, params, args) once for every entry of hooks.def, whatever
// its kind. Define WJ_ALL_HOOKS_X, include this file, undefine it.
#define WJ_HOOK(ret, name, params, args) WJ_ALL_HOOKS_X(ret, name, params, args)
#define WJ_HOOK_VOID(name, params, args) WJ_ALL_HOOKS_X(void, name, params, args)
#define WJ_HOOK_END(name, params, args) WJ_ALL_HOOKS_X(void, name, params, args)
#define WJ_HOOK_RAW(ret, name, params, args) WJ_ALL_HOOKS_X(ret, name, params, args)
#define WJ_IO_HOOK(ret, name, params, args, fd, dir, counted, bufs) WJ_ALL_HOOKS_X(ret, name, params, args)
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_HOOK_VOID
#undef WJ_HOOK_END
#undef WJ_HOOK_RAW
#undef WJ_IO_HOOK
