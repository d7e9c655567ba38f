#!/usr/bin/env bash
# Cost the preload adds to each interposed I/O call: scripts/bench/hotpath.c does N 1-byte
# send+recv pairs on a tracked loopback TCP connection and on an untracked AF_UNIX socketpair;
# it runs ROUNDS times without and with LD_PRELOAD=LIBDIR/libwedjat.so, interleaved, and the
# medians are compared. A third series runs without the preload but with one idle extra
# thread: wedjat's agent thread alone makes the kernel take a file reference on every fd
# syscall (no single-threaded fdget fast path). And inside each run, hotpath.c interleaves
# calls through the hooks with calls to libc's own send/recv (dlsym on libc.so.6): under the
# preload, "hooked - direct" is the hooks' own cost, free of run-to-run noise.
#   scripts/bench/hotpath.sh LIBDIR [ROUNDS] [N_TCP] [N_UNIX]
# Target: <= 100 ns added per call.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [ROUNDS] [N_TCP] [N_UNIX]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
rounds=${2:-5} n_tcp=${3:-200000} n_unix=${4:-1000000}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
work=$(mktemp -d /tmp/wedjat-bench-hotpath.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -pthread -o "$work/hotpath" "$here/hotpath.c"

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); $rounds interleaved rounds; $n_tcp TCP pairs, $n_unix AF_UNIX pairs per run"
for i in $(seq 1 "$rounds"); do
    "$work/hotpath" "$n_tcp" "$n_unix" | sed 's/^/without /' | tee -a "$work/results"
    WEDJAT_DIR="$work/logs" LD_PRELOAD="$lib" "$work/hotpath" "$n_tcp" "$n_unix" | sed 's/^/with    /' | tee -a "$work/results"
    "$work/hotpath" "$n_tcp" "$n_unix" idle-thread | sed 's/^/thread  /' | tee -a "$work/results"
done
python3 /dev/stdin "$work/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(mode, key):
    return statistics.median(float(r[r.index(key) + 1]) for r in rows if r[0] == mode)
print()
for kind, label in [("tcp", "TCP loopback, tracked connection"), ("unix", "AF_UNIX socketpair, untracked fd")]:
    key = f"{kind}_ns_per_call"
    a, b, t = med("without", key), med("with", key), med("thread", key)
    hook = statistics.median(float(r[r.index(key) + 1]) - float(r[r.index(f"{kind}_direct_ns") + 1])
                             for r in rows if r[0] == "with")
    noise = statistics.median(float(r[r.index(key) + 1]) - float(r[r.index(f"{kind}_direct_ns") + 1])
                              for r in rows if r[0] == "without")
    verdict = "OK" if b - a <= 100 else "OVER TARGET"
    print(f"hotpath {label}:")
    print(f"  without {a:.1f} ns/call, with wedjat {b:.1f}: added {b - a:+.1f} ns/call ({(b / a - 1) * 100:+.1f}%)"
          f" -> target <= 100 ns: {verdict}")
    print(f"  no wedjat but one idle extra thread: {t:.1f} ns/call ({t - a:+.1f}): the cost of any second thread")
    print(f"  in-process, hooked minus libc-direct: {hook:+.1f} ns/call under wedjat (noise floor without: {noise:+.1f})")
PY
