// Per-call cost of the socket hooks, for instruction counting (scripts/bench/http_instructions.sh):
// N 1-byte send()+recv() pairs over a stream that is not HTTP (its first byte is not a letter).
//   sockloop unix N [thread]   an AF_UNIX socketpair
//   sockloop tcp N [thread]    a loopback TCP connection (connect + accept: a client and a server end)
// With "thread", an idle second thread exists first: glibc's cancellable calls (send, recv)
// then take their multi-threaded path, as in any process with an agent thread.
// No timing here: cachegrind counts the instructions; two sizes cancel start-up.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void *idle(void *arg) {
    (void)arg;
    for (;;) pause();
    return 0;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: sockloop unix|tcp N [thread]\n");
        return 2;
    }
    long n = atol(argv[2]);
    pthread_t t;
    if (argc == 4 && pthread_create(&t, 0, idle, 0) != 0) die("pthread_create");
    int a, b;
    if (strcmp(argv[1], "unix") == 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
        a = sv[0];
        b = sv[1];
    } else {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof sa;
        if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 1) != 0 ||
            getsockname(l, (struct sockaddr *)&sa, &len) != 0)
            die("listen");
        a = socket(AF_INET, SOCK_STREAM, 0);
        if (a < 0 || connect(a, (struct sockaddr *)&sa, sizeof sa) != 0) die("connect");
        b = accept(l, 0, 0);
        if (b < 0) die("accept");
        close(l);
    }
    char c = 1, d;
    for (long i = 0; i < n; i++) {
        if (send(a, &c, 1, 0) != 1) die("send");
        if (recv(b, &d, 1, 0) != 1) die("recv");
    }
    close(a);
    close(b);
    _exit(0);   // the idle thread, if any, ends with the process
}
