// The hooks of a process's life: main, fork, the exit family, exec, unshare/setns and
// pthread_create. Each hands its transition to lifecycle.c.
#include "context.h"
#include "events.h"
#include "hooks.h"
#include "lifecycle.h"
#include "process.h"
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sys_raw.h"

extern char **environ;

// ---------------------------------------------------------------- main

static int (*app_main)(int, char **, char **);

static int main_wrapper(int argc, char **argv, char **envp) {
    if (wj_gate() == WJ_GATE_RUN) wj_lc_main_entered(argc, argv);
    int status = app_main(argc, argv, envp);
    wj_lc_set_exit_status(status);
    return status;
}

WJ_EXPORT int __libc_start_main(int (*main_fn)(int, char **, char **), int argc, char **argv,
                                void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
                                void *stack_end) {
    app_main = main_fn;
    return WJ_REAL(__libc_start_main)(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((constructor(101))) static void wj_constructor(void) {
    if (wj_lc_state_now() == WJ_LC_LOADED) wj_lc_init();
}

// Return from main and exit(): the image ends after the app's atexit handlers, in our
// destructor (a vfork child calling exit runs it too: the gate tells).
__attribute__((destructor)) static void wj_destructor(void) {
    if (wj_gate_ending() != WJ_GATE_RUN) return;
    wj_lc_end(WJ_END_EXIT, 0, 0, 0, 0);
}

// ---------------------------------------------------------------- fork

// Signals are blocked across the real fork: a handler that calls exit() while this thread is
// inside fork would otherwise find the locks glibc takes there (they are taken because
// wedjat's thread makes the process multi-threaded) held by its own thread, and hang forever.
// Blocked, such a signal is delivered as fork returns, in the parent, as it could be without
// wedjat too.
pid_t wj_hook_fork(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = WJ_REAL(fork)();
    int err = errno;
    if (pid > 0) {
        wj_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = WJ_EV_FORK;
        ev.t_start = ev.t_end = wj_now_ns();
        ev.a = (uint64_t)pid;
        wj_push(&ev);
        wj_request(WJ_REQ_FORKS);   // a fork record: the thread (not the aggregator) writes it
    }
    pthread_sigmask(SIG_SETMASK, &old, 0);
    if (pid > 0) wj_lc_poke(1);   // gated like plain I/O (lifecycle.c, WJ_REQ_FORKS)
    errno = err;
    return pid;
}

// ---------------------------------------------------------------- exit

void wj_hook_exit(int status) { wj_lc_set_exit_status(status); }
void wj_hook__exit(int status) { wj_lc_end(WJ_END__EXIT, status, 1, 0, 0); }
void wj_hook__Exit(int status) { wj_lc_end(WJ_END__EXIT, status, 1, 0, 0); }
void wj_hook_quick_exit(int status) { wj_lc_end(WJ_END_QUICK_EXIT, status, 1, 0, 0); }
void wj_hook_abort(void) { wj_lc_end(WJ_END_ABORT, 0, 0, 0, 0); }

// ---------------------------------------------------------------- exec

// The image ends here (process_end "exec"); if exec fails, it goes on.
#define WJ_EXEC(target, envp, call)                 \
    do {                                            \
        wj_lc_end(WJ_END_EXEC, 0, 0, target, envp);  \
        int r = call;                               \
        int err = errno;                            \
        wj_lc_exec_failed();                        \
        errno = err;                                \
        return r;                                   \
    } while (0)

int wj_hook_execve(const char *path, char *const argv[], char *const envp[]) {
    WJ_EXEC(path, envp, WJ_REAL(execve)(path, argv, envp));
}
int wj_hook_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    WJ_EXEC(path, envp, WJ_REAL(execveat)(dirfd, path, argv, envp, flags));
}
int wj_hook_fexecve(int fd, char *const argv[], char *const envp[]) {
    WJ_EXEC(argv[0] ? argv[0] : "", envp, WJ_REAL(fexecve)(fd, argv, envp));
}
int wj_hook_execv(const char *path, char *const argv[]) { WJ_EXEC(path, environ, WJ_REAL(execv)(path, argv)); }
int wj_hook_execvp(const char *file, char *const argv[]) { WJ_EXEC(file, environ, WJ_REAL(execvp)(file, argv)); }
int wj_hook_execvpe(const char *file, char *const argv[], char *const envp[]) {
    WJ_EXEC(file, envp, WJ_REAL(execvpe)(file, argv, envp));
}

// The execl family is variadic: collect the arguments on the stack (no allocation) and go
// through the execv forms, which are hooked.
#define WJ_MAX_EXECL_ARGS 4096
#define WJ_COLLECT_ARGS(first, argv_out, envp_out, want_env)          \
    va_list ap;                                                       \
    va_start(ap, first);                                              \
    size_t argc_ = 1;                                                 \
    {                                                                 \
        va_list count;                                                \
        va_copy(count, ap);                                           \
        while (va_arg(count, const char *) && argc_ < WJ_MAX_EXECL_ARGS) argc_++; \
        va_end(count);                                                \
    }                                                                 \
    const char *argv_out[argc_ + 1];                                  \
    argv_out[0] = first;                                              \
    for (size_t i_ = 1; i_ <= argc_; i_++) argv_out[i_] = va_arg(ap, const char *); \
    argv_out[argc_] = 0;                                              \
    char *const *envp_out = want_env ? va_arg(ap, char *const *) : 0; \
    va_end(ap)

WJ_EXPORT int execl(const char *path, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 0);
    (void)envp;
    return execv(path, (char *const *)argv);
}
WJ_EXPORT int execlp(const char *file, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 0);
    (void)envp;
    return execvp(file, (char *const *)argv);
}
WJ_EXPORT int execle(const char *path, const char *arg, ...) {
    WJ_COLLECT_ARGS(arg, argv, envp, 1);
    return execve(path, (char *const *)argv, envp);
}

// ---------------------------------------------------------------- unshare, setns

// The kernel refuses unshare(CLONE_NEWUSER) and setns() into a user or mount namespace
// (EINVAL) when the process has more than one thread. wedjat's thread steps aside for those
// calls: it is stopped, the call made, and a new one started. The thread's function has
// returned when it is stopped, but the kernel counts it until its exit completes (a few
// microseconds): EINVAL meanwhile is retried for at most 2 ms.
#define WJ_SINGLE_THREADED_CALL(call)                                                   \
    do {                                                                                \
        wj_lc_state before = wj_lc_state_now();                                         \
        wj_lc_pause();                                                                  \
        int paused = before != wj_lc_state_now();                                       \
        int r = call;                                                                   \
        for (int i = 0; paused && r != 0 && errno == EINVAL && i < 40; i++) {           \
            struct timespec ts = {0, 50000};                                            \
            syscall(SYS_nanosleep, &ts, 0);                                             \
            r = call;                                                                   \
        }                                                                               \
        int err = errno;                                                                \
        if (paused) wj_lc_resume();                                                     \
        errno = err;                                                                    \
        return r;                                                                       \
    } while (0)

int wj_hook_unshare(int flags) {
    if (!(flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM))) return WJ_REAL(unshare)(flags);
    WJ_SINGLE_THREADED_CALL(WJ_REAL(unshare)(flags));
}

int wj_hook_setns(int fd, int nstype) {
    // nstype 0: any namespace the fd names; a pidfd: a set of CLONE_NEW* flags.
    if (nstype != 0 && !(nstype & (CLONE_NEWUSER | CLONE_NEWNS))) return WJ_REAL(setns)(fd, nstype);
    WJ_SINGLE_THREADED_CALL(WJ_REAL(setns)(fd, nstype));
}

// ---------------------------------------------------------------- threads

// main() ends with pthread_exit: the process lives on in its other threads. When the last of
// them ends, glibc would call exit(0) on it; wedjat's thread keeps the process alive instead,
// so wedjat does it (agent.c), on a thread that shares the app's fd table: the app's atexit
// handlers and stdio see the app's fds.
void wj_hook_pthread_exit(void *retval) {
    (void)retval;
    if (wj_gettid() == wj_proc.pid && !wj_in_handler()) wj_lc_main_thread_exits();
}

// A program that starts threads will live: wedjat's thread starts with them. (Not from a
// signal handler: the app's pthread_create there is its own business, ours waits.)
int wj_hook_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    wj_lc_app_thread();
    wj_lc_poke(0);
    return WJ_REAL(pthread_create)(thread, attr, start, arg);
}
