#!/usr/bin/env bash
# Stall detection's costs (issue targets: <= 50 ns of loop bookkeeping per wait call; <= 1 ms
# from the threshold crossing to the captured stack).
#   1. ns per poll(NULL, 0, 0) with wedjat and WEDJAT_STALL_MS=0 (the hook without loop
#      bookkeeping) vs the default: the difference is the bookkeeping. Interleaved rounds,
#      medians; plain (no preload) shown for reference.
#   2. N stalls of 300 ms (WEDJAT_STALL_MS=100): for each, the first sample's time minus the
#      crossing (start + threshold), from the log. The sample's time is taken once the
#      thread is parked in the handler, before its stack is walked.
#   scripts/bench/stalls.sh LIBDIR [ROUNDS] [N_WAITS] [N_STALLS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [ROUNDS] [N_WAITS] [N_STALLS]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
rounds=${2:-7} n_waits=${3:-2000000} n_stalls=${4:-20}
work=$(mktemp -d /tmp/wedjat-bench-stalls.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/stalls" "$here/stalls.c"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); $rounds rounds of $n_waits waits; $n_stalls stalls"
for i in $(seq 1 "$rounds"); do
    echo "plain $("$work/stalls" waits "$n_waits")" >> "$work/waits"
    echo "off $(WEDJAT_DIR="$work/l" WEDJAT_STALL_MS=0 LD_PRELOAD="$lib" "$work/stalls" waits "$n_waits")" >> "$work/waits"
    echo "on $(WEDJAT_DIR="$work/l" LD_PRELOAD="$lib" "$work/stalls" waits "$n_waits")" >> "$work/waits"
done
WEDJAT_DIR="$work/s" WEDJAT_STALL_MS=100 LD_PRELOAD="$lib" "$work/stalls" stalls "$n_stalls" 300
python3 - "$work/waits" "$work/s" <<'PY'
import glob, json, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {k: statistics.median(float(v) for kk, v in rows if kk == k) for k in ("plain", "off", "on")}
print(f"poll(NULL,0,0): plain {med['plain']:.1f} ns, wedjat with stalls off {med['off']:.1f} ns, on {med['on']:.1f} ns")
print(f"loop bookkeeping per wait call: {med['on'] - med['off']:+.1f} ns (target <= 50)")
lags = []
for f in glob.glob(sys.argv[2] + "/*.ndjson"):
    for line in open(f):
        r = json.loads(line)
        if r["type"] == "stall" and r["samples"]:
            lags.append(r["samples"][0]["ts"] - r["start_ts"] - r["threshold_us"])
lags.sort()
if lags:
    print(f"crossing to stack, {len(lags)} stalls: median {statistics.median(lags):.0f} us, "
          f"p90 {lags[int(0.9 * (len(lags) - 1))]} us, max {lags[-1]} us (target <= 1000)")
else:
    print("no sampled stalls found")
PY
