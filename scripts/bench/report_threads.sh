#!/usr/bin/env bash
# Where `wedjat report`'s time goes by thread, for builds side by side:
#   scripts/bench/report_threads.sh LOGDIR CLI [CLI...]      (WEDJAT_BENCH_ROUNDS, default 7)
# Runs `CLI report --format json LOGDIR` under `perf sched record` in interleaved rounds and
# prints, per CLI, the medians of the main thread's run time (it reads the blocks back in order
# and applies every record: the one the others wait for) and of all the other threads' together
# (decoding, releasing, rendering), from `perf sched timehist -s`. On this VM a report's wall time
# moved by 20-40% between quarter-hours; these run times moved far less, and they show which
# side a change moved: the wall on N cores is about the larger of the main thread's time and the
# sum of all over N (docs/PERFORMANCE.md, "2026-11-29"). Needs perf (scheduler tracepoints).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LOGDIR CLI [CLI...]" >&2; exit 2; }
command -v perf >/dev/null || { echo "report_threads.sh: perf is needed (apt-get install linux-perf)" >&2; exit 2; }
logdir=$1; shift
rounds=${WEDJAT_BENCH_ROUNDS:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for ((r = 0; r < rounds; r++)); do
    for k in $(seq 0 $(($# - 1))); do
        cli=${*:$((k + 1)):1}
        perf sched record -q -o "$work/sched.data" "$cli" report --format json "$logdir" >/dev/null 2>"$work/err" ||
            { echo "report_threads.sh: $cli failed:" >&2; cat "$work/err" >&2; exit 1; }
        # The runtime summary's per-task rows, `name[pid]` for the process's main thread (its
        # name is the CLI's file name as the kernel cuts it, 15 bytes) and `name[tid/pid]` for
        # its other threads; other processes' rows are left out.
        comm=$(basename "$cli" | cut -c1-15)
        perf sched timehist -i "$work/sched.data" -s 2>/dev/null |
            awk -v comm="$comm" -v k="$k" '
                /Terminated tasks:/ { on = 1; next }
                /Idle stats:/ { on = 0 }
                on && NF >= 4 && $1 ~ /\[[0-9\/]+\]$/ {
                    name = $1; sub(/\[.*/, "", name)
                    id = $1; sub(/.*\[/, "", id); sub(/\]/, "", id)
                    if (name == comm && id !~ /\//) { pid = id; main = $4 }
                    else if (id ~ /\//) { n++; ids[n] = id; run[n] = $4 }
                }
                END {
                    for (i = 1; i <= n; i++) { split(ids[i], p, "/"); if (p[2] == pid) other += run[i] }
                    printf "%d %.1f %.1f\n", k, main, other
                }' >> "$work/runs"
    done
done

python3 - "$work/runs" "$@" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
clis = sys.argv[2:]
for k, cli in enumerate(clis):
    main = [float(r[1]) for r in rows if int(r[0]) == k]
    other = [float(r[2]) for r in rows if int(r[0]) == k]
    print("%s: main thread %.0f ms (rounds %s), other threads %.0f ms, medians of %d" % (
        cli, statistics.median(main), " ".join("%.0f" % m for m in sorted(main)), statistics.median(other), len(main)))
EOF
