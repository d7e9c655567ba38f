// Per-call cost of the socket hooks, for instruction counting (scripts/bench/http_instructions.sh):
// N 1-byte send()+recv() pairs over a stream that is not HTTP (its first byte is not a letter).
//   sockloop unix N [thread] [nonblock]   an AF_UNIX socketpair
//   sockloop tcp N [thread] [nonblock]    a loopback TCP connection (connect + accept: a client and a server end)
// With "thread", an idle second thread exists first: glibc's cancellable calls (send, recv)
// then take their multi-threaded path, as in any process with an agent thread. With
// "nonblock", both ends are O_NONBLOCK (fcntl), as an event loop's sockets are; a recv that
// finds nothing yet is retried, and the number of retries printed on stderr.
// No timing here: cachegrind counts the instructions; two sizes cancel start-up.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
    int thread = 0, nonblock = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "thread") == 0) thread = 1;
        else if (strcmp(argv[i], "nonblock") == 0) nonblock = 1;
        else argc = 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: sockloop unix|tcp N [thread] [nonblock]\n");
        return 2;
    }
    long n = atol(argv[2]);
    pthread_t t;
    if (thread && pthread_create(&t, 0, idle, 0) != 0) die("pthread_create");
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
    if (nonblock && (fcntl(a, F_SETFL, O_NONBLOCK) != 0 || fcntl(b, F_SETFL, O_NONBLOCK) != 0)) die("fcntl");
    char c = 1, d;
    long retries = 0;
    for (long i = 0; i < n; i++) {
        if (send(a, &c, 1, 0) != 1) die("send");
        ssize_t r;
        while ((r = recv(b, &d, 1, 0)) < 0 && errno == EAGAIN) retries++;
        if (r != 1) die("recv");
    }
    if (retries) fprintf(stderr, "sockloop: %ld retries\n", retries);
    close(a);
    close(b);
    _exit(0);   // the idle thread, if any, ends with the process
}
