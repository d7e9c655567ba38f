#!/usr/bin/env bash
# Per-process start-up cost of the preload: /bin/true run RUNS times (default 1000) with and
# without LD_PRELOAD=LIBDIR/libwedjat.so, interleaved (spawn_timer.c), each series with its
# logs in a fresh directory:
#   1. under ${TMPDIR:-/tmp}   (the usual place; on a disk file system)
#   2. under /dev/shm          (tmpfs: the cost of wedjat itself, without the disk's)
#   3. WEDJAT_DISABLE=1        (only loading the library)
# Every watched /bin/true writes a log (process_start + process_end), so series 1 includes
# one file creation per process; the script also prints what a bare open(O_CREAT|O_EXCL) +
# write + close costs on each file system, to tell the disk's share from wedjat's.
#   scripts/bench/startup.sh LIBDIR [RUNS]
# Target: added median <= 0.3 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [RUNS]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
runs=${2:-1000}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-startup.XXXXXX")
shm=
[ -d /dev/shm ] && [ -w /dev/shm ] && shm=$(mktemp -d /dev/shm/wedjat-bench-startup.XXXXXX)
trap 'rm -rf "$work" ${shm:+"$shm"}' EXIT
gcc -O2 -o "$work/spawn_timer" "$here/spawn_timer.c"
cat > "$work/create_cost.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
int main(int argc, char **argv) {  // create_cost DIR: median-free mean of 300 create+write+close
    char p[4096];
    struct timespec a, b;
    mkdir(argv[1], 0700);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 300; i++) {
        snprintf(p, sizeof p, "%s/f.%d.ndjson", argv[1], i);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, p, 200) != 200) return 1;
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 300 / 1e6);
    return 0;
}
C
gcc -O2 -o "$work/create_cost" "$work/create_cost.c"

added() { sed -n 's/.*added_ms=\([-0-9.]*\).*/\1/p' "$1"; }
verdict() { awk -v a="$1" 'BEGIN { print (a <= 0.3 ? "OK" : "OVER TARGET") }'; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r), RLIMIT_NOFILE $(ulimit -n); $runs interleaved runs of /bin/true"
fs_tmp=$(df -T "$work" | awk 'NR == 2 { print $2 }')
echo "# 1. logs in $work ($fs_tmp); a bare file create+write+close there: $("$work/create_cost" "$work/cc") ms"
"$work/spawn_timer" "$runs" WEDJAT_DIR="$work/logs" LD_PRELOAD="$lib" -- /bin/true | tee "$work/disk.txt"
echo "#    logs written: $(find "$work/logs" -name '*.ndjson' | wc -l)"
if [ -n "$shm" ]; then
    echo "# 2. logs in $shm (tmpfs); a bare file create+write+close there: $("$work/create_cost" "$shm/cc") ms"
    "$work/spawn_timer" "$runs" WEDJAT_DIR="$shm/logs" LD_PRELOAD="$lib" -- /bin/true | tee "$work/shm.txt"
fi
echo "# 3. library loaded, WEDJAT_DISABLE=1 (no log):"
"$work/spawn_timer" "$runs" WEDJAT_DIR="$work/logs-off" WEDJAT_DISABLE=1 LD_PRELOAD="$lib" -- /bin/true | tee "$work/off.txt"

echo
a=$(added "$work/disk.txt")
echo "startup, logs on $fs_tmp: added median $a ms per process (target <= 0.300 ms): $(verdict "$a")"
if [ -n "$shm" ]; then
    a=$(added "$work/shm.txt")
    echo "startup, logs on tmpfs: added median $a ms per process (target <= 0.300 ms): $(verdict "$a")"
fi
a=$(added "$work/off.txt")
echo "startup, WEDJAT_DISABLE=1: added median $a ms per process"
