// The exported wrappers. Each forwards to the real function and records what passed; the
// byte-counting ones are generated from hooks.def. errno is the real call's, always: a
// wrapper saves it right after the call and restores it before returning.
#include "internal.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <unistd.h>

#define WJ_EXPORT __attribute__((visibility("default")))

extern char **environ;

// ---------------------------------------------------------------- byte counting

static inline void count_io(int fd, int dir, uint64_t n) {
    wj_fd_entry *e = wj_fd_tracked(fd);
    if (WJ_LIKELY(e == 0)) return;
    atomic_fetch_add_explicit(dir == WJ_IN ? &e->bytes_in : &e->bytes_out, n, memory_order_relaxed);
    uint64_t now = wj_now_ns();
    if (dir == WJ_IN) { if (!e->t_first_in) e->t_first_in = now; }
    else if (!e->t_first_out) e->t_first_out = now;
    e->t_last_io = now;
    // Data moved: a pending non-blocking connect has completed by now at the latest.
    if (WJ_UNLIKELY(atomic_load_explicit(&e->connecting, memory_order_relaxed))) {
        atomic_store_explicit(&e->connecting, 0, memory_order_relaxed);
        if (!e->t_connected) e->t_connected = now;
    }
}

#define WJ_HOOK(ret, name, params, args)
#define WJ_IO_HOOK(ret, name, params, args, fdexpr, dir, counted) \
    WJ_EXPORT ret name params {                                   \
        ret r = WJ_REAL(name) args;                               \
        if (r > 0 && (counted)) count_io(fdexpr, dir, (uint64_t)r); \
        return r;                                                 \
    }
#include "hooks.def"
#undef WJ_HOOK
#undef WJ_IO_HOOK

WJ_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout) {
    int r = WJ_REAL(recvmmsg)(fd, vec, n, flags, timeout);
    if (!(flags & MSG_PEEK))
        for (int i = 0; i < r; i++) count_io(fd, WJ_IN, vec[i].msg_len);
    return r;
}

// splice moves bytes between a pipe and a socket (either side may be the socket).
WJ_EXPORT ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags) {
    ssize_t r = WJ_REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
    if (r > 0) {
        count_io(fd_in, WJ_IN, (uint64_t)r);
        count_io(fd_out, WJ_OUT, (uint64_t)r);
    }
    return r;
}

WJ_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags) {
    int r = WJ_REAL(sendmmsg)(fd, vec, n, flags);
    for (int i = 0; i < r; i++) count_io(fd, WJ_OUT, vec[i].msg_len);
    return r;
}

// ---------------------------------------------------------------- connections

static void to_wj_addr(wj_addr *out, const struct sockaddr *sa) {
    memset(out, 0, sizeof *out);
    if (!sa) return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        out->family = AF_INET;
        out->port = ntohs(in->sin_port);
        memcpy(out->bytes, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        out->family = AF_INET6;
        out->port = ntohs(in6->sin6_port);
        out->scope_id = in6->sin6_scope_id;
        memcpy(out->bytes, &in6->sin6_addr, 16);
    }
}

static void sock_name(int fd, wj_addr *out, int peer) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (syscall(peer ? SYS_getpeername : SYS_getsockname, fd, &ss, &len) == 0) to_wj_addr(out, (struct sockaddr *)&ss);
}

static int is_tcp_socket(int fd) {
    int type = 0, proto = 0;
    socklen_t len = sizeof type;
    if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return 0;
    len = sizeof proto;
    return syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 && proto == IPPROTO_TCP;
}

static int is_nonblocking(int fd) {
    long fl = syscall(SYS_fcntl, fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

// Starts tracking fd as a connection; returns its id, 0 if the fd table is exhausted.
static uint64_t track(int fd, int role, uint64_t t_open) {
    wj_fd_entry *e = wj_fd_slot(fd);
    if (!e) return 0;
    wj_event gone;  // the number's previous socket was closed where no hook saw it
    if (e->generation == wj_fd_generation && wj_take_close(fd, e, t_open, &gone)) wj_push(&gone);
    uint64_t id = wj_next_conn_id();
    e->generation = wj_fd_generation;
    e->role = (uint32_t)role;
    e->t_open = t_open;
    atomic_store_explicit(&e->bytes_in, 0, memory_order_relaxed);
    atomic_store_explicit(&e->bytes_out, 0, memory_order_relaxed);
    atomic_store_explicit(&e->connecting, 0, memory_order_relaxed);
    e->t_connected = e->t_first_out = e->t_first_in = e->t_last_io = 0;
    atomic_store_explicit(&e->conn_id, id, memory_order_release);
    return id;
}

static void mark_connected(wj_fd_entry *e, uint64_t now) {
    if (atomic_exchange(&e->connecting, 0) && !e->t_connected) e->t_connected = now;
}

// The connection ends here with `err` (a connect that failed after all).
static void connect_failed(int fd, wj_fd_entry *e, int err) {
    wj_event ev;
    if (!wj_take_close(fd, e, wj_now_ns(), &ev)) return;
    ev.err = err;
    wj_push(&ev);
}

static int connect_error(int r, int err) {
    if (r == 0) return 0;
    // Not failures: the connection goes on in the kernel (EINTR too, for a blocking connect).
    if (err == EINPROGRESS || err == EINTR || err == EALREADY || err == EISCONN || err == EAGAIN) return 0;
    return err;
}

// The kernel copies all `len` bytes of a connect() address before anything else, so they are
// readable once it took the call without EFAULT. Before that, or past a short `len`, wedjat
// never reads the app's memory.
static int inet_addr_usable(const struct sockaddr *addr, socklen_t len, int r, int err) {
    if (!addr || (r < 0 && err == EFAULT) || len < sizeof(sa_family_t) || len > sizeof(struct sockaddr_storage)) return 0;
    if (addr->sa_family == AF_INET) return len >= sizeof(struct sockaddr_in);
    if (addr->sa_family == AF_INET6) return len >= sizeof(struct sockaddr_in6);
    return 0;
}

WJ_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    if (!wj_enter()) return WJ_REAL(connect)(fd, addr, len);
    wj_fd_entry *known = wj_fd_tracked(fd);
    // A repeated connect on a pending non-blocking socket checks completion.
    int pending = known && atomic_load(&known->connecting);
    int nonblocking = !pending && is_nonblocking(fd);
    uint64_t t_start = wj_now_ns();
    int r = WJ_REAL(connect)(fd, addr, len);
    int err = errno;
    uint64_t t_end = wj_now_ns();
    if (pending) {
        if (connect_error(r, err)) connect_failed(fd, known, err);
        else if (r == 0 || err == EISCONN) mark_connected(known, t_end);
    } else if (inet_addr_usable(addr, len, r, err) && is_tcp_socket(fd)) {
        wj_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = WJ_EV_CONN_OPEN;
        ev.role = WJ_ROLE_CLIENT;
        ev.transport = WJ_TRANSPORT_TCP;
        ev.fd = fd;
        ev.a = nonblocking ? WJ_OPEN_NONBLOCKING : 0;
        to_wj_addr(&ev.peer, addr);
        ev.t_start = t_start;
        ev.t_end = t_end;
        ev.err = connect_error(r, err);
        if (!ev.err) {
            sock_name(fd, &ev.local, 0);
            ev.conn_id = track(fd, WJ_ROLE_CLIENT, t_start);  // ends a stale entry first
            wj_fd_entry *e = wj_fd_tracked(fd);
            if (e && r != 0) atomic_store(&e->connecting, 1);
            else if (e) e->t_connected = t_end;
        } else {
            ev.conn_id = wj_next_conn_id();
        }
        if (ev.conn_id) {
            wj_push(&ev);
            wj_agent_ensure_started();
        }
    }
    wj_leave();
    errno = err;
    return r;
}

// A listening process is a server, likely long-lived: start the agent now so its log exists
// (and is flushed) before the first client arrives, even if it is killed later.
WJ_EXPORT int listen(int fd, int backlog) {
    int r = WJ_REAL(listen)(fd, backlog);
    if (r == 0) {
        int err = errno;
        if (wj_enter()) {
            wj_agent_ensure_started();
            wj_leave();
        }
        errno = err;
    }
    return r;
}

// The peer comes from getpeername, never from the app's buffer: that may be shorter than
// the address (the kernel truncates it) or absent.
static int accepted(int r) {
    if (r < 0 || !wj_enter()) return r;
    int err = errno;
    wj_event ev;
    memset(&ev, 0, sizeof ev);
    sock_name(r, &ev.peer, 1);
    if (ev.peer.family == AF_INET || ev.peer.family == AF_INET6) {
        // An inet socket from accept() is TCP (SCTP one-to-one sockets are not told apart).
        ev.kind = WJ_EV_CONN_OPEN;
        ev.role = WJ_ROLE_SERVER;
        ev.transport = WJ_TRANSPORT_TCP;
        ev.fd = r;
        ev.t_start = ev.t_end = wj_now_ns();
        sock_name(r, &ev.local, 0);
        ev.conn_id = track(r, WJ_ROLE_SERVER, ev.t_start);
        wj_fd_entry *e = wj_fd_tracked(r);
        if (e) e->t_connected = ev.t_start;
        if (ev.conn_id) {
            wj_push(&ev);
            wj_agent_ensure_started();
        }
    }
    wj_leave();
    errno = err;
    return r;
}

WJ_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    return accepted(WJ_REAL(accept)(fd, addr, len));
}

WJ_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accepted(WJ_REAL(accept4)(fd, addr, len, flags));
}

// How a program learns that a non-blocking connect failed: getsockopt(SO_ERROR).
WJ_EXPORT int getsockopt(int fd, int level, int name, void *value, socklen_t *len) {
    int r = WJ_REAL(getsockopt)(fd, level, name, value, len);
    // (len is valid once the call succeeded: the kernel wrote it.)
    if (r != 0 || level != SOL_SOCKET || name != SO_ERROR || !value || !len || *len < (socklen_t)sizeof(int)) return r;
    wj_fd_entry *e = wj_fd_tracked(fd);
    if (!e || !atomic_load_explicit(&e->connecting, memory_order_relaxed)) return r;
    int so_error = *(int *)value;
    int err = errno;
    if (wj_enter()) {
        if (so_error == 0) mark_connected(e, wj_now_ns());
        else if (so_error != EINPROGRESS && so_error != EALREADY) connect_failed(fd, e, so_error);
        wj_leave();
    }
    errno = err;
    return r;
}

// ---------------------------------------------------------------- closing

WJ_EXPORT int close(int fd) {
    wj_fd_entry *e = wj_fd_tracked(fd);
    wj_logfile_release_if(&wj_proc.log, fd);
    if (WJ_LIKELY(!e)) return WJ_REAL(close)(fd);
    wj_event ev;
    int ended = wj_take_close(fd, e, wj_now_ns(), &ev);
    int r = WJ_REAL(close)(fd);
    if (ended) {
        int err = errno;
        if (wj_enter()) {
            wj_push(&ev);
            wj_leave();
        }
        errno = err;
    }
    return r;
}

// dup2/dup3 onto newfd closes whatever newfd was, if oldfd is valid (else nothing happens).
static void replacing(int oldfd, int newfd) {
    if (oldfd == newfd) return;
    wj_fd_entry *e = wj_fd_tracked(newfd);
    int is_log = newfd >= 0 && newfd == atomic_load_explicit(&wj_proc.log.fd, memory_order_relaxed);
    if (WJ_LIKELY(!e && !is_log)) return;
    int err = errno;
    if (syscall(SYS_fcntl, oldfd, F_GETFD) >= 0) {
        wj_logfile_release_if(&wj_proc.log, newfd);
        wj_event ev;
        if (e && wj_take_close(newfd, e, wj_now_ns(), &ev) && wj_enter()) {
            wj_push(&ev);
            wj_leave();
        }
    }
    errno = err;
}

WJ_EXPORT int dup2(int oldfd, int newfd) {
    replacing(oldfd, newfd);
    return WJ_REAL(dup2)(oldfd, newfd);
}

WJ_EXPORT int dup3(int oldfd, int newfd, int flags) {
    replacing(oldfd, newfd);
    return WJ_REAL(dup3)(oldfd, newfd, flags);
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

WJ_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags) {
    if (flags & CLOSE_RANGE_CLOEXEC) return WJ_REAL(close_range)(lo, hi, flags);
    if (lo <= hi) wj_logfile_release_range(&wj_proc.log, lo, hi);
    int r = WJ_REAL(close_range)(lo, hi, flags);
    int err = errno;
    if (r == 0 && wj_enter()) {
        wj_close_tracked_range(lo, hi);
        wj_leave();
    }
    errno = err;
    return r;
}

WJ_EXPORT void closefrom(int lo) {
    if (lo < 0) lo = 0;
    wj_logfile_release_range(&wj_proc.log, (unsigned)lo, ~0u);
    int err = errno;
    if (wj_enter()) {
        wj_close_tracked_range((unsigned)lo, ~0u);
        wj_leave();
    }
    errno = err;
    WJ_REAL(closefrom)(lo);
}

// ---------------------------------------------------------------- process life

static int (*wj_app_main)(int, char **, char **);

static int main_wrapper(int argc, char **argv, char **envp) {
    wj_main_entered(argc, argv);
    int status = wj_app_main(argc, argv, envp);
    wj_set_exit_status(status);
    return status;
}

WJ_EXPORT int __libc_start_main(int (*main_fn)(int, char **, char **), int argc, char **argv,
                                void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
                                void *stack_end) {
    wj_app_main = main_fn;
    return WJ_REAL(__libc_start_main)(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

WJ_EXPORT pid_t fork(void) {
    pid_t pid = WJ_REAL(fork)();
    if (pid > 0) {
        int err = errno;
        if (wj_enter()) {
            wj_event ev;
            memset(&ev, 0, sizeof ev);
            ev.kind = WJ_EV_FORK;
            ev.t_start = ev.t_end = wj_now_ns();
            ev.a = (uint64_t)pid;
            wj_push(&ev);
            wj_agent_ensure_started();
            wj_leave();
        }
        errno = err;
    }
    return pid;
}

WJ_EXPORT void exit(int status) {
    wj_set_exit_status(status);
    WJ_REAL(exit)(status);
    __builtin_unreachable();
}

static void finish_now(int reason, int status) {
    if (wj_enter_ending()) {
        wj_finish(reason, status, 1);
        wj_leave();
    }
}

WJ_EXPORT void _exit(int status) {
    finish_now(WJ_END__EXIT, status);
    WJ_REAL(_exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void _Exit(int status) {
    finish_now(WJ_END__EXIT, status);
    WJ_REAL(_Exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void quick_exit(int status) {
    finish_now(WJ_END_QUICK_EXIT, status);
    WJ_REAL(quick_exit)(status);
    __builtin_unreachable();
}

WJ_EXPORT void abort(void) {
    if (wj_enter_ending()) {
        wj_finish(WJ_END_ABORT, 0, 0);
        wj_leave();
    }
    WJ_REAL(abort)();
    __builtin_unreachable();
}

// exec: the image ends here (flush, process_end "exec"); if exec fails we carry on.
#define WJ_EXEC(target, envp, call)            \
    do {                                       \
        int inside = wj_enter();               \
        if (inside) wj_before_exec(target, envp); \
        int r = call;                          \
        int err = errno;                       \
        if (inside) {                          \
            wj_after_failed_exec();            \
            wj_leave();                        \
        }                                      \
        errno = err;                           \
        return r;                              \
    } while (0)

WJ_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    WJ_EXEC(path, envp, WJ_REAL(execve)(path, argv, envp));
}
WJ_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    WJ_EXEC(path, envp, WJ_REAL(execveat)(dirfd, path, argv, envp, flags));
}
WJ_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    WJ_EXEC(argv[0] ? argv[0] : "", envp, WJ_REAL(fexecve)(fd, argv, envp));
}
WJ_EXPORT int execv(const char *path, char *const argv[]) { WJ_EXEC(path, environ, WJ_REAL(execv)(path, argv)); }
WJ_EXPORT int execvp(const char *file, char *const argv[]) { WJ_EXEC(file, environ, WJ_REAL(execvp)(file, argv)); }
WJ_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
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
