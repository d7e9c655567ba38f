// Stall-detection costs: `waits N` times N poll(NULL, 0, 0) calls (a wait that returns at
// once: the bookkeeping dominates) and prints ns per call; `stalls N MS` makes N loop stalls of
// MS ms (busy between two polls) and exits, for the crossing-to-stack latency read from the log.
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(int ms) {
    double end = now_s() + ms / 1000.0;
    while (now_s() < end) {}
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "waits") == 0) {
        long n = atol(argv[2]);
        poll(0, 0, 0);
        double t0 = now_s();
        for (long i = 0; i < n; i++) poll(0, 0, 0);
        printf("%.1f\n", (now_s() - t0) * 1e9 / n);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "stalls") == 0) {
        int n = atoi(argv[2]), ms = atoi(argv[3]);
        for (int i = 0; i < n; i++) {
            poll(0, 0, 0);
            burn(ms);
            poll(0, 0, 50);
        }
        return 0;
    }
    fprintf(stderr, "usage: %s waits N | stalls N MS\n", argv[0]);
    return 2;
}
