// The real functions behind the hooks: one typedef and one lazily resolved slot per entry of
// hooks.def. WJ_REAL(name) is the next definition of name (libc's), resolved on first use so
// that hooks work even when called from another library's constructor before ours ran.
#ifndef WEDJAT_REAL_H
#define WEDJAT_REAL_H
#include "base.h"
#include <signal.h>
#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#define WJ_ALL_HOOKS_X(ret, name, params, args) typedef ret (*wj_fn_##name) params;
#include "hooks_all.h"
#undef WJ_ALL_HOOKS_X

typedef struct wj_real_table {
#define WJ_ALL_HOOKS_X(ret, name, params, args) wj_fn_##name name;
#include "hooks_all.h"
#undef WJ_ALL_HOOKS_X
} wj_real_table;

WJ_HIDDEN extern wj_real_table wj_real;
WJ_HIDDEN void *wj_resolve(const char *name);
// Resolves now the real functions a forked child usually ends with (_exit, exit, execve), so
// that each child does not: a dlsym in a new child also faults in the loader's and libc's code
// for it (fork copies no page table of a library's code). Called before fork.
WJ_HIDDEN void wj_real_warm_for_children(void);

#define WJ_ALL_HOOKS_X(ret, name, params, args)                               \
    static inline wj_fn_##name wj_real_##name(void) {                        \
        wj_fn_##name f = wj_real.name;                                       \
        if (WJ_UNLIKELY(!f)) wj_real.name = f = (wj_fn_##name)wj_resolve(#name); \
        return f;                                                            \
    }
#include "hooks_all.h"
#undef WJ_ALL_HOOKS_X
#define WJ_REAL(name) (wj_real_##name())
#endif
