#!/usr/bin/env bash
# Builds against each other, per child: `proc_cost MODE 40` (fork_exec, spawn or fork_exit: 40
# children of a watched parent, proc_cost.c) run plain and under each LIBDIR in turn, ROUNDS
# times, the order the same every round (plain, then the libraries as given), logs on tmpfs.
# Prints each one's median wall and CPU time per child, and what it adds to plain. Where
# process_cost.sh measures one build against plain, this tells two builds apart in one series:
# on this shared VM two series of the same build move by 20-50 us, two builds in one series by
# less than 10.
#   scripts/bench/process_compare.sh MODE ROUNDS LIBDIR...
# Writes only to fresh temp directories (one on /dev/shm for the logs), removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: $0 fork_exec|spawn|fork_exit ROUNDS LIBDIR..." >&2; exit 2; }
mode=$1 rounds=$2
shift 2
libs=()
for d in "$@"; do
    [ -f "$d/libwedjat.so" ] || { echo "no $d/libwedjat.so" >&2; exit 2; }
    libs+=("$(cd "$d" && pwd)")
done
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-compare.XXXXXX")
shm=$(mktemp -d /dev/shm/wedjat-bench-compare.XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT
gcc -O2 -o "$work/proc_cost" "$here/proc_cost.c"

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); proc_cost $mode 40, $rounds rounds"
for _ in $(seq "$rounds"); do
    echo "plain $("$work/proc_cost" "$mode" 40)"
    for lib in "${libs[@]}"; do
        echo "$lib $(WEDJAT_DIR="$shm/logs" LD_PRELOAD="$lib/libwedjat.so" "$work/proc_cost" "$mode" 40)"
        rm -rf "$shm/logs"
    done
done > "$work/runs.txt"
python3 - "$work/runs.txt" <<'PY'
import statistics, sys
wall, cpu, order = {}, {}, []
for line in open(sys.argv[1]):
    name, w, c = line.split()
    if name not in wall:
        order.append(name)
        wall[name], cpu[name] = [], []
    wall[name].append(float(w))
    cpu[name].append(float(c))
w0, c0 = statistics.median(wall["plain"]), statistics.median(cpu["plain"])
for name in order:
    w, c = statistics.median(wall[name]), statistics.median(cpu[name])
    added = "" if name == "plain" else f"  added {w - w0:7.1f} us, CPU {c - c0:7.1f} us"
    print(f"{name:40s} wall {w:8.1f} us  CPU {c:8.1f} us per child{added}")
PY
