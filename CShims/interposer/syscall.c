// Raw system calls made through libc's syscall() (the entry is syscall_x86_64.S): the fd life
// cycle (libuv closes sockets with syscall(SYS_close, fd)), sockets, exec, the process's end
// and identity changes take the same paths as their libc names. Everything else, and every
// call where wedjat must not act, goes straight through.
#include "context.h"
#include "fds.h"
#include "hooks.h"
#include "lifecycle.h"
#include "process.h"
#include "sockets.h"
#include "vitals.h"
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

WJ_HIDDEN long wj_syscall_hook(long n, long a, long b, long c, long d, long e, long f);
WJ_HIDDEN void *wj_syscall_forklike(long n, long flags_or_args);

#define REAL_SYSCALL() WJ_REAL(syscall)(n, a, b, c, d, e, f)

// A process or thread made by a raw fork/clone: glibc's fork handlers do not run in it, so
// it must not act on what it inherited. Marked like a vfork child: in it every hook passes
// through (the parent clears the mark at its next hook). A thread of its own (CLONE_THREAD)
// is no such child.
void *wj_syscall_forklike(long n, long flags_or_args) {
    unsigned long flags = 0;
    if (n == SYS_clone) flags = (unsigned long)flags_or_args;
    else if (n == SYS_clone3 && flags_or_args) flags = *(const unsigned long *)flags_or_args;
    if (!(flags & CLONE_THREAD)) wj_context_mark_vfork();
    return (void *)WJ_REAL(syscall);
}

WJ_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    void *ptid = va_arg(ap, void *), *tls = va_arg(ap, void *), *ctid = va_arg(ap, void *);
    va_end(ap);
    if (wj_gate() == WJ_GATE_RUN) {
        if (flags & CLONE_THREAD) wj_lc_app_thread();
        else wj_context_mark_vfork();
    }
    return WJ_REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
}

long wj_syscall_hook(long n, long a, long b, long c, long d, long e, long f) {
    if (WJ_UNLIKELY(wj_self.flags & WJ_T_UNWINDING) && (n == SYS_read || n == SYS_write))
        return wj_unwind_io(n == SYS_write, (const void *)b, (size_t)c);
    int g = wj_gate();
    if (WJ_UNLIKELY(g == WJ_GATE_INIT)) g = wj_lc_init();
    if (g != WJ_GATE_RUN) return REAL_SYSCALL();
    long r;
    int err;
    switch (n) {
    case SYS_close: {
        wj_event ev;
        int ended = wj_closing((int)a, &ev);
        r = REAL_SYSCALL();
        if (ended) wj_closed(&ev);
        return r;
    }
    case SYS_close_range:
        r = REAL_SYSCALL();
        wj_close_range_done((unsigned)a, (unsigned)b, (int)c, (int)r);
        return r;
    case SYS_dup:
        return wj_duplicated((int)a, (int)REAL_SYSCALL());
    case SYS_dup2:
    case SYS_dup3:
        wj_replacing((int)a, (int)b);
        return wj_duplicated((int)a, (int)REAL_SYSCALL());
    case SYS_fcntl:
        return wj_fcntl_done((int)a, (int)b, c, (int)REAL_SYSCALL());
    case SYS_ioctl:
        return wj_ioctl_done((int)a, (unsigned long)b, (void *)c, (int)REAL_SYSCALL());
    case SYS_socket:
        r = REAL_SYSCALL();
        wj_socket_made((int)r, (int)a, (int)b, (int)c);
        return r;
    case SYS_connect:
        return wj_hook_connect((int)a, (const struct sockaddr *)b, (socklen_t)c);
    case SYS_accept:
        wj_note_ready(WJ_READY_ACCEPT);
        return wj_accepted((int)REAL_SYSCALL(), 0);
    case SYS_accept4:
        wj_note_ready(WJ_READY_ACCEPT4);
        return wj_accepted((int)REAL_SYSCALL(), (int)d);
    case SYS_exit_group:
        wj_lc_end(WJ_END__EXIT, (int)a, 1, 0, 0);
        return REAL_SYSCALL();
    case SYS_execve:
    case SYS_execveat: {
        const char *path = (const char *)(n == SYS_execve ? a : b);
        char *const *envp = (char *const *)(n == SYS_execve ? c : d);
        wj_lc_end(WJ_END_EXEC, 0, 0, path, envp);
        r = REAL_SYSCALL();
        err = errno;
        wj_lc_exec_failed();
        errno = err;
        return r;
    }
    case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid: case SYS_setresuid:
    case SYS_setresgid: case SYS_setgroups: case SYS_setfsuid: case SYS_setfsgid: case SYS_capset:
        wj_lc_identity_change();
        return REAL_SYSCALL();
    default:
        return REAL_SYSCALL();
    }
}
