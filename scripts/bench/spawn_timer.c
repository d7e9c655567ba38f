// Times N interleaved runs of a command with and without extra environment entries
// (e.g. LD_PRELOAD=...), and prints the medians and the added median in ms: wall time, and
// the CPU time the command used (all its threads and children, from wait4), which moves far
// less with the neighbours' load. Interleaving (A B A B ...) cancels drift in machine load
// between the two series.
//   spawn_timer RUNS ENV_ASSIGNMENT [ENV_ASSIGNMENT...] -- cmd args...
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run(char **argv, char **envp, double *cpu_ms) {
    pid_t pid;
    double t0 = now_ms();
    if (posix_spawnp(&pid, argv[0], 0, 0, argv, envp) != 0) { perror("posix_spawnp"); exit(2); }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double t = now_ms() - t0;
    *cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return t;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: spawn_timer RUNS VAR=VALUE... -- cmd args...\n"); return 2; }
    int runs = atoi(argv[1]);
    int sep = 2;
    while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
    if (sep >= argc - 1) { fprintf(stderr, "missing -- cmd\n"); return 2; }
    int envc = 0;
    while (environ[envc]) envc++;
    char **with = calloc((size_t)(envc + sep), sizeof *with);
    int k = 0;
    for (int i = 2; i < sep; i++) with[k++] = argv[i];
    for (int i = 0; i < envc; i++) with[k++] = environ[i];
    double *a = calloc((size_t)runs, sizeof *a), *b = calloc((size_t)runs, sizeof *b);
    double *ca = calloc((size_t)runs, sizeof *ca), *cb = calloc((size_t)runs, sizeof *cb), ignored;
    for (int i = 0; i < 20; i++) { run(argv + sep + 1, environ, &ignored); run(argv + sep + 1, with, &ignored); }  // warm up
    for (int i = 0; i < runs; i++) {
        a[i] = run(argv + sep + 1, environ, &ca[i]);
        b[i] = run(argv + sep + 1, with, &cb[i]);
    }
    qsort(a, (size_t)runs, sizeof *a, cmp);
    qsort(b, (size_t)runs, sizeof *b, cmp);
    qsort(ca, (size_t)runs, sizeof *ca, cmp);
    qsort(cb, (size_t)runs, sizeof *cb, cmp);
    double ma = a[runs / 2], mb = b[runs / 2], cpa = ca[runs / 2], cpb = cb[runs / 2];
    printf("runs=%d median_without_ms=%.3f median_with_ms=%.3f added_ms=%.3f ratio=%.3f "
           "cpu_without_ms=%.3f cpu_with_ms=%.3f cpu_added_ms=%.3f\n",
           runs, ma, mb, mb - ma, mb / ma, cpa, cpb, cpb - cpa);
    return 0;
}
