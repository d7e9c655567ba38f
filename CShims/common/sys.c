// Raw syscalls and clocks for wedjat's own I/O: they bypass the interposed libc names, so
// the aggregator never sees (or is counted as) its own traffic.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_common.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdarg.h>
#include <unistd.h>
#include "sys_raw.h"

// The system call itself (x86-64: number in rax, arguments in rdi rsi rdx r10 r8 r9), errno
// set as libc's syscall() sets it.
#undef syscall
long wj_raw_syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if ((unsigned long)ret > -4096UL) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
#else
    return syscall(number, a, b, c, d, e, f);
#endif
}
#define syscall wj_raw_syscall

uint64_t wj_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t wj_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int wj_gettid(void) { return (int)syscall(SYS_gettid); }

// Cached per thread, for stamping events on the hot path (a system call each time cost nginx
// three per request). Only a label: anything that signals a thread asks the kernel
// (wj_gettid). A fork child's thread gets a new tid: wj_tid_forget() in its atfork handler.
static __thread int cached_tid __attribute__((tls_model("initial-exec")));
int wj_tid(void) {
    int t = cached_tid;
    if (__builtin_expect(t == 0, 0)) cached_tid = t = (int)syscall(SYS_gettid);
    return t;
}
void wj_tid_forget(void) { cached_tid = 0; }
int wj_sys_getpid(void) { return (int)syscall(SYS_getpid); }
long wj_sys_write(int fd, const void *buf, size_t len) { return syscall(SYS_write, fd, buf, len); }
long wj_sys_read(int fd, void *buf, size_t len) { return syscall(SYS_read, fd, buf, len); }
int wj_sys_open(const char *path, int flags, int mode) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
int wj_sys_close(int fd) { return (int)syscall(SYS_close, fd); }

long wj_read_file(const char *path, char *buf, size_t cap) {
    int saved = errno;
    int fd = wj_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) { errno = saved; return -1; }
    size_t used = 0;
    while (used + 1 < cap) {
        size_t want = cap - 1 - used;
        long n = wj_sys_read(fd, buf + used, want);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        // Short: the end. /proc and sysfs files give all they have in one read when it fits
        // (a regular file too), so the read that would return 0 is not made.
        if ((size_t)n < want) break;
    }
    buf[used] = 0;
    wj_sys_close(fd);
    errno = saved;
    return (long)used;
}
