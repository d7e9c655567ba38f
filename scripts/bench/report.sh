#!/usr/bin/env bash
# Throughput of `wedjat report` on a big log, next to jq on the same file:
#   scripts/bench/report.sh [SIZE_MB]          (default 1024)
# 1. scripts/bench/report_gen.py writes a realistic log of SIZE_MB (one busy HTTP client:
#    connection, http, dns, sample, http_summary records to 200 hosts), and the requests per
#    host it wrote;
# 2. `wedjat report --format json` (release build) reads it: time, peak RSS;
# 3. jq computes the requests per host from the same file (http records + http_summary counts);
# 4. the three per-host counts must be equal (exit 1 otherwise), then MB/s of both and the ratio.
# Target: report >= 100 MB/s (exit 1 below it; WEDJAT_BENCH_MIN_MBPS to change).
# The log is kept in WEDJAT_BENCH_DIR (default /tmp/wedjat-report-bench) and reused when its
# size matches. WEDJAT_SCRATCH: the build directory (default .build-release).
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mb=${1:-1024}
min_mbps=${WEDJAT_BENCH_MIN_MBPS:-100}
dir=${WEDJAT_BENCH_DIR:-/tmp/wedjat-report-bench}
scratch=${WEDJAT_SCRATCH:-.build-release}
command -v jq >/dev/null || { echo "report.sh: jq is needed (apt-get install jq)" >&2; exit 2; }
mkdir -p "$dir"
log=$dir/gateway.4242.1763782510000000.ndjson

swift build -c release --scratch-path "$scratch" --product wedjat-cli >&2
cli=$(swift build -c release --scratch-path "$scratch" --show-bin-path)/wedjat-cli

want=$(( size_mb * 1024 * 1024 ))
have=$(stat -c %s "$log" 2>/dev/null || echo 0)
# The generator stops at the first record past the size: within one connection's records.
if [ ! -s "$dir/expected.counts" ] || [ "$have" -lt "$want" ] || [ "$have" -gt $(( want + 1048576 )) ]; then
    echo "generating $size_mb MB in $log ..." >&2
    python3 scripts/bench/report_gen.py "$log" "$size_mb" > "$dir/expected.counts"
fi
bytes=$(stat -c %s "$log")
mb=$(python3 -c "print(f'{$bytes / 1048576:.1f}')")

# Read the file once first so both tools start from the page cache.
cat "$log" > /dev/null

# timed OUT cmd...: stdout to OUT; prints the wall time in seconds; peak RSS (KiB) in $dir/rss.
timed() {
    local out=$1 t0 t1
    shift
    t0=${EPOCHREALTIME/[.,]/}
    /usr/bin/time -f %M -o "$dir/rss" "$@" > "$out"
    t1=${EPOCHREALTIME/[.,]/}
    python3 -c "print(f'{($t1 - $t0) / 1e6:.3f}')"
}

report_s=$(timed "$dir/report.json" "$cli" report --format json "$log")
report_rss=$(cat "$dir/rss")
python3 - "$dir/report.json" > "$dir/report.counts" <<'EOF'
import json, sys
for h in json.load(open(sys.argv[1]))["http"]:
    if h["requests"] > 0:
        print(h["role"], h["host"], h["requests"])
EOF

jq_s=$(timed "$dir/jq.counts" jq -n -r 'reduce (inputs | select(.type == "http" or .type == "http_summary")) as $r ({};
        .[$r.role + " " + ($r.host // $r.peer // "?")] += (if $r.type == "http" then 1 else $r.count end))
    | to_entries[] | "\(.key) \(.value)"' "$log")
jq_rss=$(cat "$dir/rss")

status=0
for f in report jq; do
    if ! diff <(sort "$dir/expected.counts") <(sort "$dir/$f.counts") > "$dir/$f.diff"; then
        echo "FAIL: $f's requests per host differ from the generator's ($dir/$f.diff)"
        status=1
    fi
done
hosts=$(wc -l < "$dir/expected.counts")
requests=$(awk '{ n += $3 } END { print n }' "$dir/expected.counts")

python3 - "$mb" "$report_s" "$jq_s" "$report_rss" "$jq_rss" "$min_mbps" "$hosts" "$requests" <<'EOF' || status=1
import sys
mb, rs, js = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
rss_r, rss_j, minimum, hosts, requests = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
print(f"log: {mb:.1f} MB, {hosts} hosts, {requests} requests (per-host counts checked)")
print(f"wedjat report: {rs:7.3f} s  {mb / rs:7.1f} MB/s  peak RSS {rss_r / 1024:.0f} MiB")
print(f"jq:            {js:7.3f} s  {mb / js:7.1f} MB/s  peak RSS {rss_j / 1024:.0f} MiB")
print(f"ratio: wedjat report is {js / rs:.2f}x jq's speed")
if mb / rs < minimum:
    print(f"FAIL: wedjat report below {minimum:.0f} MB/s")
    sys.exit(1)
EOF
exit $status
