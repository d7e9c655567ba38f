// Identity changes: setuid and friends, setgroups, capset. A process started as root that
// drops to another user (nginx's workers, with the stock `user nobody;`) could no longer
// create its log in a directory only root may write to: the log is opened before the change,
// by wedjat's thread, whose fd table keeps it open afterwards.
#include "hooks.h"
#include "lifecycle.h"
#include <unistd.h>

#define WJ_IDENTITY(ret, name, params, args)  \
    ret wj_hook_##name params {              \
        wj_lc_identity_change();             \
        return WJ_REAL(name) args;           \
    }

WJ_IDENTITY(int, setuid, (uid_t uid), (uid))
WJ_IDENTITY(int, setgid, (gid_t gid), (gid))
WJ_IDENTITY(int, seteuid, (uid_t uid), (uid))
WJ_IDENTITY(int, setegid, (gid_t gid), (gid))
WJ_IDENTITY(int, setreuid, (uid_t r, uid_t e), (r, e))
WJ_IDENTITY(int, setregid, (gid_t r, gid_t e), (r, e))
WJ_IDENTITY(int, setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
WJ_IDENTITY(int, setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
WJ_IDENTITY(int, setgroups, (size_t n, const gid_t *groups), (n, groups))
WJ_IDENTITY(int, initgroups, (const char *user, gid_t group), (user, group))
WJ_IDENTITY(int, setfsuid, (uid_t uid), (uid))
WJ_IDENTITY(int, setfsgid, (gid_t gid), (gid))
WJ_IDENTITY(int, capset, (void *header, const void *data), (header, data))
