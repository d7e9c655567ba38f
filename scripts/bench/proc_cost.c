// The per-child cost of a process that spawns children, measured inside it: it runs MODE N
// times and prints the median wall time of one child and the median CPU time it cost (the
// child's, from wait4, plus this process's own, every thread), both in microseconds. CPU time
// moves far less than wall time with the neighbours' load. The script runs it with and
// without the preload (the children inherit it), alternating.
//   proc_cost fork_exec N    fork(), the child execve()s /bin/true, waitpid
//   proc_cost spawn N        posix_spawn(/bin/true), waitpid
//   proc_cost fork_exit N    fork(), the child _exit(0)s, waitpid
//   proc_cost exec_self N    (internal) unused
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double cpu_us(const struct rusage *r) {
    return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e6 + r->ru_utime.tv_usec + r->ru_stime.tv_usec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: proc_cost fork_exec|spawn|fork_exit N\n"); return 2; }
    const char *mode = argv[1];
    int n = atoi(argv[2]);
    double *v = calloc((size_t)n, sizeof *v), *c = calloc((size_t)n, sizeof *c);
    char *args[] = {"/bin/true", 0};
    for (int i = -5; i < n; i++) {   // 5 warm-up children
        struct rusage self0, self1, child;
        getrusage(RUSAGE_SELF, &self0);
        double t0 = now_us();
        pid_t p = -1;
        if (strcmp(mode, "fork_exec") == 0) {
            p = fork();
            if (p == 0) { execve("/bin/true", args, environ); _exit(127); }
        } else if (strcmp(mode, "spawn") == 0) {
            if (posix_spawn(&p, "/bin/true", 0, 0, args, environ) != 0) p = -1;
        } else if (strcmp(mode, "fork_exit") == 0) {
            p = fork();
            if (p == 0) _exit(0);
        } else {
            fprintf(stderr, "unknown mode %s\n", mode);
            return 2;
        }
        int st;
        if (p < 0 || wait4(p, &st, 0, &child) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "child failed\n");
            return 1;
        }
        double t1 = now_us();
        getrusage(RUSAGE_SELF, &self1);
        if (i >= 0) {
            v[i] = t1 - t0;
            c[i] = cpu_us(&child) + cpu_us(&self1) - cpu_us(&self0);
        }
    }
    qsort(v, (size_t)n, sizeof *v, cmp);
    qsort(c, (size_t)n, sizeof *c, cmp);
    printf("%.1f %.1f\n", v[n / 2], c[n / 2]);
    return 0;
}
