// Hot-path cost: 1-byte send()+recv() pairs, timed with CLOCK_MONOTONIC inside the process,
// on (a) a loopback TCP connection (connect/accept: a connection wedjat tracks, so every call
// counts bytes) and (b) an AF_UNIX socketpair (not tracked: the hooks only look the fd up).
//   hotpath N_TCP N_UNIX [idle-thread]
// Prints nanoseconds per call (a pair is two calls) through the normal symbols (the hooks,
// when preloaded) and, interleaved in 20 blocks with those, through libc's own send/recv
// found with dlsym on libc.so.6 (never hooked). Under the preload, "hooked - direct" is the
// hooks' own cost, measured in one process under identical conditions; without the preload
// both are libc's and the difference shows the measurement noise.
// With "idle-thread" it first starts a thread that only sleeps: the process then shares its
// fd table between two threads, as under wedjat (its agent thread), and the kernel takes a
// file reference on every fd syscall (fdget's single-threaded fast path no longer applies).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double pairs(send_fn sf, recv_fn rf, int a, int b, long n) {
    char c = 'x', d;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (sf(a, &c, 1, 0) != 1) { perror("send"); exit(1); }
        if (rf(b, &d, 1, 0) != 1) { perror("recv"); exit(1); }
    }
    return now_ns() - t0;
}

// ns per call through the normal symbols and through libc's directly, interleaved.
static void measure(int a, int b, long n, send_fn libc_send, recv_fn libc_recv, double *hooked, double *direct) {
    const int blocks = 20;
    long per = n / blocks > 0 ? n / blocks : 1;
    double th = 0, td = 0;
    pairs(send, recv, a, b, 1000);  // warm up
    pairs(libc_send, libc_recv, a, b, 1000);
    for (int i = 0; i < blocks; i++) {
        if (i % 2) {
            th += pairs(send, recv, a, b, per);
            td += pairs(libc_send, libc_recv, a, b, per);
        } else {
            td += pairs(libc_send, libc_recv, a, b, per);
            th += pairs(send, recv, a, b, per);
        }
    }
    *hooked = th / (2.0 * per * blocks);
    *direct = td / (2.0 * per * blocks);
}

static void *idle(void *arg) {
    for (;;) pause();
    return arg;
}

int main(int argc, char **argv) {
    long n_tcp = argc > 1 ? atol(argv[1]) : 200000, n_unix = argc > 2 ? atol(argv[2]) : 1000000;
    if (argc > 3 && strcmp(argv[3], "idle-thread") == 0) {
        pthread_t t;
        pthread_create(&t, 0, idle, 0);
    }
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    send_fn libc_send = libc ? (send_fn)dlsym(libc, "send") : 0;
    recv_fn libc_recv = libc ? (recv_fn)dlsym(libc, "recv") : 0;
    if (!libc_send || !libc_recv) { fprintf(stderr, "cannot find libc's send/recv\n"); return 1; }

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &len)) {
        perror("listener");
        return 1;
    }
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a)) { perror("connect"); return 1; }
    int s = accept(ls, 0, 0);
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double tcp_h, tcp_d, unix_h, unix_d;
    measure(c, s, n_tcp, libc_send, libc_recv, &tcp_h, &tcp_d);
    int sp[2];
    // Made with the raw syscall: wedjat tracks socketpair() ends, and this is the untracked case.
    if (syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sp)) { perror("socketpair"); return 1; }
    measure(sp[0], sp[1], n_unix, libc_send, libc_recv, &unix_h, &unix_d);
    printf("tcp_ns_per_call %.1f unix_ns_per_call %.1f tcp_direct_ns %.1f unix_direct_ns %.1f\n", tcp_h, unix_h, tcp_d, unix_d);
    close(c);
    close(s);
    close(ls);
    return 0;
}
