#!/usr/bin/env bash
# Throughput of `wedjat report` on a big log, next to jq on the same file:
#   scripts/bench/report.sh [SIZE_MB]          (default 1024)
# 1. scripts/bench/report_gen.py writes a realistic log of SIZE_MB (one busy HTTP client:
#    connection, http, dns, sample, http_summary records to 200 hosts), and the requests per
#    host it wrote;
# 2. `wedjat report --format json` (release build) reads it: time, peak RSS;
# 3. jq computes the requests per host from the same file (http records + http_summary counts);
# 4. the three per-host counts must be equal (exit 1 otherwise), then MB/s of both and the ratio;
# 5. DuckDB (the python package, as a data-minded user would) answers count, p50 and p99 of TTFB
#    per host and role with read_ndjson (2 threads); its counts of http records per host must be
#    wedjat's `records`, and its time is printed beside wedjat's;
# 6. each export (--har, --chrome-trace, --otlp-json) of the same log: MB/s, peak RSS, and its
#    speed over the report's (target: at least 0.5);
# 7. the reader's stages (wedjat-reader-bench: JSONDocument's parse alone, parse + decode) beside
#    simdjson 3's parser on the same lines (scripts/bench/simdjson_parse.cpp, libsimdjson-dev).
# Target: report >= 100 MB/s (exit 1 below it; WEDJAT_BENCH_MIN_MBPS to change); every export at
# least half the report's MB/s (exit 1 otherwise). WEDJAT_READ_THREADS sets the reader's threads.
# The report, DuckDB and the exports run WEDJAT_BENCH_ROUNDS times (default 5), interleaved; the
# times printed are medians (one run of each moves by 10-20% on a shared VM), peak RSS the largest.
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
swift build -c release --scratch-path "$scratch" --product wedjat-reader-bench >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
cli=$bin/wedjat-cli

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

rounds=${WEDJAT_BENCH_ROUNDS:-5}
# median T...: the median of the times; peak: the largest RSS so far of a tool (in $dir/rss.TOOL).
median() { python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }
peak() { local f=$dir/rss.$1 now; now=$(cat "$dir/rss"); [ -s "$f" ] && [ "$(cat "$f")" -ge "$now" ] || echo "$now" > "$f"; }
rm -f "$dir"/rss.*

report_s=$(timed "$dir/report.json" "$cli" report --format json "$log")
report_times=("$report_s")
peak report
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

# DuckDB: the query a user would write for the same question (per host and role: requests with a
# record, TTFB p50 and p99), on 2 threads.
duck_s=""
if python3 -c "import duckdb" 2>/dev/null; then
    duck_s=$(timed "$dir/duck.counts" python3 scripts/bench/duckdb_ttfb.py "$log")
    duck_times=("$duck_s")
    peak duck
    python3 - "$dir/report.json" > "$dir/report.records" <<'EOF'
import json, sys
for h in json.load(open(sys.argv[1]))["http"]:
    if h["records"] > 0:
        print(h["role"], h["host"], h["records"])
EOF
else
    echo "report.sh: the duckdb python package is not installed (scripts/deps.sh installs it): no DuckDB comparison" >&2
fi

# The exports, each alone, as a user runs them; then more rounds of all, interleaved.
declare -A export_times
for r in $(seq "$rounds"); do
    if [ "$r" -gt 1 ]; then
        report_times+=("$(timed /dev/null "$cli" report --format json "$log")")
        peak report
        if [ -n "$duck_s" ]; then
            duck_times+=("$(timed /dev/null python3 scripts/bench/duckdb_ttfb.py "$log")")
            peak duck
        fi
    fi
    for fmt in har chrome-trace otlp-json; do
        export_times[$fmt]="${export_times[$fmt]:-} $(timed /dev/null "$cli" export --"$fmt" "$dir/export.$fmt" "$log")"
        peak "$fmt"
        rm -f "$dir/export.$fmt"
    done
done
report_s=$(median "${report_times[@]}")
report_rss=$(cat "$dir/rss.report")
if [ -n "$duck_s" ]; then
    duck_s=$(median "${duck_times[@]}")
    duck_rss=$(cat "$dir/rss.duck")
fi
exports=""
for fmt in har chrome-trace otlp-json; do
    # shellcheck disable=SC2086
    exports="$exports $fmt:$(median ${export_times[$fmt]}):$(cat "$dir/rss.$fmt")"
    rm -f "$dir/export.$fmt"
done

# The reader's stages, and simdjson on the same lines.
stages=$("$bin/wedjat-reader-bench" "$log")
simd=""
if [ -e /usr/include/simdjson.h ] && g++ -O3 -std=c++17 -o "$dir/simdjson_parse" scripts/bench/simdjson_parse.cpp -lsimdjson 2>"$dir/gcc.err"; then
    simd=$("$dir/simdjson_parse" "$log")
else
    echo "report.sh: simdjson could not be built (libsimdjson-dev missing?): $(head -3 "$dir/gcc.err" 2>/dev/null)" >&2
fi

status=0
if [ -n "$duck_s" ] && ! diff <(sort "$dir/report.records") <(sort "$dir/duck.counts") > "$dir/duck.diff"; then
    echo "FAIL: DuckDB's http records per host differ from the report's ($dir/duck.diff)"
    status=1
fi
for f in report jq; do

    if ! diff <(sort "$dir/expected.counts") <(sort "$dir/$f.counts") > "$dir/$f.diff"; then
        echo "FAIL: $f's requests per host differ from the generator's ($dir/$f.diff)"
        status=1
    fi
done
hosts=$(wc -l < "$dir/expected.counts")
requests=$(awk '{ n += $3 } END { print n }' "$dir/expected.counts")

echo "times: medians of $rounds interleaved rounds (jq: one run); each round's: report ${report_times[*]}; DuckDB ${duck_times[*]:-}"
python3 - "$mb" "$report_s" "$jq_s" "$report_rss" "$jq_rss" "$min_mbps" "$hosts" "$requests" "${duck_s:-}" "${duck_rss:-0}" \
    "$exports" "$stages" "$simd" "$(nproc)" "${WEDJAT_READ_THREADS:-all}" <<'EOF' || status=1
import sys
mb, rs, js = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
rss_r, rss_j, minimum, hosts, requests = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
duck_s, duck_rss, exports, stages, simd, cpus, threads = sys.argv[9], int(sys.argv[10]), sys.argv[11], sys.argv[12], sys.argv[13], sys.argv[14], sys.argv[15]
failed = False
print(f"log: {mb:.1f} MB, {hosts} hosts, {requests} requests (per-host counts checked); {cpus} CPUs, reader threads: {threads}")
print(f"wedjat report: {rs:7.3f} s  {mb / rs:7.1f} MB/s  peak RSS {rss_r / 1024:.0f} MiB")
print(f"jq:            {js:7.3f} s  {mb / js:7.1f} MB/s  peak RSS {rss_j / 1024:.0f} MiB  (wedjat report is {js / rs:.2f}x jq's speed)")
if duck_s:
    ds = float(duck_s)
    print(f"DuckDB:        {ds:7.3f} s  {mb / ds:7.1f} MB/s  peak RSS {duck_rss / 1024:.0f} MiB  (wedjat report takes {rs / ds:.2f}x DuckDB's time)")
for item in exports.split():
    fmt, secs, rss = item.split(":")
    secs = float(secs)
    ratio = rs / secs
    print(f"export --{fmt:12s} {secs:7.3f} s  {mb / secs:7.1f} MB/s  peak RSS {int(rss) / 1024:.0f} MiB  ({ratio:.2f} of the report's speed)")
    if ratio < 0.5:
        print(f"FAIL: export --{fmt} below half the report's MB/s")
        failed = True
names = {"parse": "JSONDocument parse", "decode": "parse + decode", "dom": "simdjson DOM, per line",
         "many": "simdjson parse_many"}
for line in (stages + "\n" + simd).splitlines():
    parts = line.split()
    if len(parts) == 4:
        t = float(parts[3])
        print(f"reader stage: {names.get(parts[0], parts[0]):24s} {t:7.3f} s  {int(parts[2]) / 1048576 / t:7.1f} MB/s  (one thread)")
if mb / rs < minimum:
    print(f"FAIL: wedjat report below {minimum:.0f} MB/s")
    failed = True
sys.exit(1 if failed else 0)
EOF
exit $status
