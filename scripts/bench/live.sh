#!/usr/bin/env bash
# What `wedjat top` and `wedjat ship` cost while they follow a busy server: a watched nginx
# (master + 1 worker, a 1 KiB file, keep-alive) loaded by wrk (-t1 -c8) for BENCH_SECONDS,
# while `wedjat top --lines` (output discarded) and `wedjat ship --otlp` (to a local sink that
# answers 200 without decoding) follow its log directory. Two configurations, each on a fresh
# nginx and directory:
#   budget   the default record budget: 200 http records a second, the other exchanges
#            counted in http_summary records every 10 s (what a busy server writes by default)
#   records  WEDJAT_HTTP_RECORDS=1000000: one http record per exchange (the worst case for
#            the followers: every exchange is a line to read, and a span to send)
# For each: wrk's req/s, the log's growth (MB/s, lines/s), and for top and ship: CPU (% of one
# core, utime + stime from /proc over the load), CPU time per 1,000 log lines, and RSS sampled
# every second (first quarter of the run, then its maximum: flat memory shows as equal
# numbers). The figures come from the same runs; "at 50k req/s" scales each follower's CPU
# per exchange to 50,000 exchanges a second (the budget case's cost barely depends on the
# request rate: it is mostly the 200 records and the samples).
#   scripts/bench/live.sh [LIBDIR [CLI]]   (default: build both, the CLI in release mode)
# The writer's own losses are printed too (exchanges in the log against wrk's count, drops):
# past what wedjat's aggregator keeps up with, a log holds fewer lines than exchanges.
# Environment: BENCH_SECONDS=30, BENCH_CONNS=8, BENCH_CONFIGS="budget records".
# Needs nginx, wrk, python3. Writes only to a fresh temp dir, talks only to 127.0.0.1, stops
# every process it started by its PID.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${BENCH_SECONDS:-30}
conns=${BENCH_CONNS:-8}
configs=${BENCH_CONFIGS:-"budget records"}
for c in nginx wrk python3; do command -v "$c" >/dev/null || { echo "live.sh: $c is not installed" >&2; exit 2; }; done

work=$(mktemp -d /tmp/wedjat-bench-live.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

libdir=${1:-}
if [ -z "$libdir" ]; then
    libdir=$work/lib
    "$root/scripts/build-lib.sh" "$libdir" > "$work/build-lib.log" 2>&1 || { cat "$work/build-lib.log"; exit 1; }
fi
cli=${2:-}
if [ -z "$cli" ]; then
    (cd "$root" && swift build -c release --product wedjat-cli > "$work/build-cli.log" 2>&1) || { cat "$work/build-cli.log"; exit 1; }
    cli=$(cd "$root" && swift build -c release --show-bin-path)/wedjat-cli
fi

# A sink for OTLP/HTTP: reads the body, answers 200 with an empty body; counts bytes.
cat > "$work/sink.py" <<'PY'
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
python3 "$work/sink.py" "$work/sink.port" > /dev/null 2>&1 &
sink=$!
disown "$sink"
pids+=("$sink")
for _ in $(seq 1 100); do [ -s "$work/sink.port" ] && break; sleep 0.05; done
sink_port=$(cat "$work/sink.port")

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

head -c 1024 /dev/urandom > "$work/f.bin"
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root root;"

printf "%-8s %8s %8s %9s | %-36s | %-36s\n" config "req/s" "log MB/s" "lines/s" \
    "top: CPU%  us/1k lines  RSS MiB q1 -> max" "ship: CPU%  us/1k lines  RSS MiB q1 -> max"
results=()
for config in $configs; do
    d=$work/$config
    mkdir -p "$d/logs" "$d/www" "$d/tmp"
    cp "$work/f.bin" "$d/www/f.bin"
    port=$(free_port)
    cat > "$d/nginx.conf" <<CONF
$user_line
daemon off;
master_process on;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    server { listen 127.0.0.1:$port; root $d/www; }
}
CONF
    extra=()
    [ "$config" = records ] && extra=(WEDJAT_HTTP_RECORDS=1000000)
    env WEDJAT_DIR="$d/logs" LD_PRELOAD="$libdir/libwedjat.so" "${extra[@]}" \
        nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" > "$d/nginx.out" 2>&1 &
    master=$!
    pids+=("$master")
    for _ in $(seq 1 200); do [ -s "$d/nginx.pid" ] && break; sleep 0.05; done
    [ -s "$d/nginx.pid" ] || { echo "nginx did not start: $(cat "$d/error.log")" >&2; exit 1; }

    "$cli" top --lines "$d/logs" > "$d/top.out" 2> "$d/top.err" &
    top=$!
    "$cli" ship --otlp "http://127.0.0.1:$sink_port" "$d/logs" > /dev/null 2> "$d/ship.err" &
    ship=$!
    pids+=("$top" "$ship")
    sleep 2
    lines0=$(cat "$d"/logs/*.ndjson | wc -l)
    bytes0=$(cat "$d"/logs/*.ndjson | wc -c)
    top0=$(cpu_ticks "$top"); ship0=$(cpu_ticks "$ship")
    wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:$port/f.bin" > "$d/wrk.out" 2>&1 &
    wrk_pid=$!
    pids+=("$wrk_pid")
    : > "$d/rss.txt"
    while kill -0 "$wrk_pid" 2>/dev/null; do
        echo "$(rss_kb "$top") $(rss_kb "$ship")" >> "$d/rss.txt"
        sleep 1
    done
    wait "$wrk_pid" || true
    # Let the followers catch up with what the load wrote (2 s), then take their CPU.
    sleep 2
    top1=$(cpu_ticks "$top"); ship1=$(cpu_ticks "$ship")
    lines1=$(cat "$d"/logs/*.ndjson | wc -l)
    bytes1=$(cat "$d"/logs/*.ndjson | wc -c)
    kill -TERM "$top" "$ship" 2>/dev/null || true
    wait "$top" "$ship" 2>/dev/null || true
    kill -QUIT "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
    rate=$(awk '/^Requests\/sec:/ { print $2 }' "$d/wrk.out")
    python3 - "$config" "$rate" "$secs" "$ticks" "$((lines1 - lines0))" "$((bytes1 - bytes0))" \
        "$((top1 - top0))" "$((ship1 - ship0))" "$d/rss.txt" "$d/ship.err" "$d/top.out" <<'PY'
import re, sys
config, rate, secs, ticks, lines, nbytes, top_t, ship_t, rss_file, ship_err, top_out = sys.argv[1:]
rate, secs, ticks = float(rate), float(secs), int(ticks)
lines, nbytes, top_t, ship_t = int(lines), int(nbytes), int(top_t), int(ship_t)
span = secs + 2   # the load and the catch-up after it
rss = [tuple(int(x) for x in l.split()) for l in open(rss_file) if l.strip()]
q1 = rss[: max(1, len(rss) // 4)]
# Lines each follower went through: ship says how many records it sent; top, unless it
# reported being behind at its last refresh, read what was written.
shipped = [int(m.group(1)) for l in open(ship_err) for m in [re.search(r"; (\d+) records in", l)] if m]
top_behind = any("behind_bytes" in l for l in open(top_out).readlines()[-4:])
def cell(t, col, done):
    cpu = 100.0 * t / ticks / span
    per_k = 1e6 * t / ticks / max(1, done) * 1000
    # One line per exchange: 50,000 lines a second at 50k req/s.
    at50k = per_k / 1e6 * 50 * 100 if config == "records" else cpu
    first, peak = max(r[col] for r in q1) / 1024, max(r[col] for r in rss) / 1024
    return f"{cpu:5.2f}  {per_k:8.1f}  {first:6.1f} -> {peak:6.1f}", at50k
top_cell, top50 = cell(top_t, 0, lines)
ship_cell, ship50 = cell(ship_t, 1, shipped[-1] if shipped else lines)
if top_behind:
    top_cell += " BEHIND"
print(f"{config:<8} {rate:8.0f} {nbytes / span / 1e6:8.2f} {lines / span:9.0f} | {top_cell:<36} | {ship_cell:<36}")
print(f"{'':8} at 50k req/s (scaled): top {top50:.2f}% of a core, ship {ship50:.2f}%"
      + (f" (CPU per line x 50,000 lines/s; this run wrote {lines / span / max(1.0, rate):.2f} lines per request)"
         if config == "records" else " (budget: the same lines a second whatever the rate)"))
for l in open(ship_err):
    if "sent" in l or "skipped" in l or "unavailable" in l:
        print(f"{'':8} {l.strip()}")
PY
    python3 - "$d/logs" "$d/wrk.out" <<'PY'
import glob, json, re, sys
records = summarized = dropped = capture = 0
for f in glob.glob(sys.argv[1] + "/*.ndjson"):
    for l in open(f):
        try:
            r = json.loads(l)
        except ValueError:
            continue
        t = r.get("type")
        if t == "http":
            records += 1
        elif t == "http_summary":
            summarized += r.get("count", 0)
        elif t == "process_end":
            dropped += r.get("dropped_events", 0) + r.get("dropped_records", 0)
            capture += r.get("capture_dropped", 0)
m = re.search(r"(\d+) requests in", open(sys.argv[2]).read())
print(f"{'':8} the log: {records} http records + {summarized} summarized of wrk's {m.group(1) if m else '?'} requests;"
      f" {dropped} events/records dropped, {capture} capture slots dropped (the writer's, not the followers')")
PY
done
