#!/usr/bin/env bash
# Per-process start-up cost of the preload: /bin/true run RUNS times (default 1000) with and
# without LD_PRELOAD=LIBDIR/libwedjat.so, interleaved (spawn_timer.c), logs in a fresh temp
# dir. Also measures the same with WEDJAT_DISABLE=1 (the cost of just loading the library).
#   scripts/bench/startup.sh LIBDIR [RUNS]
# Target: added median <= 0.3 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [RUNS]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
runs=${2:-1000}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
work=$(mktemp -d /tmp/wedjat-bench-startup.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/spawn_timer" "$here/spawn_timer.c"

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r), $runs interleaved runs of /bin/true"
echo "# logging on (each run writes its process_start/process_end log):"
"$work/spawn_timer" "$runs" WEDJAT_DIR="$work/logs" LD_PRELOAD="$lib" -- /bin/true | tee "$work/on.txt"
echo "# library loaded, WEDJAT_DISABLE=1:"
"$work/spawn_timer" "$runs" WEDJAT_DIR="$work/logs-off" WEDJAT_DISABLE=1 LD_PRELOAD="$lib" -- /bin/true | tee "$work/off.txt"
logs=$(find "$work/logs" -name '*.ndjson' | wc -l)
echo "# logs written by the watched runs: $logs"
added=$(sed -n 's/.*added_ms=\([-0-9.]*\).*/\1/p' "$work/on.txt")
awk -v a="$added" 'BEGIN { printf "startup: added median %.3f ms per process (target <= 0.300 ms): %s\n", a, (a <= 0.3 ? "OK" : "OVER TARGET") }'
