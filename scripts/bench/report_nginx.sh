#!/usr/bin/env bash
# The report against DuckDB on a real server's log (report.sh uses a generated client log):
#   scripts/bench/report_nginx.sh [LIBDIR] [REQUESTS]      (default: build the libraries; 450000)
# 1. nginx (one process, master_process off) serves a 606-byte file under LD_PRELOAD=libwedjat.so
#    with every exchange a record (WEDJAT_HTTP_RECORDS=1000000) to `h2load --h1 -n REQUESTS -c 16`
#    (keep-alive, 1,000 requests a connection): about 700 bytes of log per request, rotated in
#    64 MB segments (450,000 requests: about 314 MB, the size of the issue's nginx run);
# 2. the report's server requests and DuckDB's `http` records must both be h2load's count of
#    succeeded requests (exit 1 otherwise);
# 3. ROUNDS (default 5) interleaved rounds of `wedjat report --format json` and DuckDB's query
#    (report.sh's: count, p50 and p99 of TTFB per host and role, 2 threads) on the log directory:
#    wall and CPU medians, and the report's time over DuckDB's.
# Writes only under WEDJAT_BENCH_DIR (default /tmp/wedjat-report-nginx), talks only to 127.0.0.1,
# stops the nginx it started by its PID. Needs nginx, h2load (nghttp2-client), python3 + duckdb.
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${1:-}
requests=${2:-450000}
rounds=${ROUNDS:-5}
dir=${WEDJAT_BENCH_DIR:-/tmp/wedjat-report-nginx}
scratch=${WEDJAT_SCRATCH:-.build-release}
for tool in nginx h2load python3; do
    command -v "$tool" >/dev/null || { echo "report_nginx.sh: $tool is needed" >&2; exit 2; }
done
python3 -c "import duckdb" 2>/dev/null || { echo "report_nginx.sh: the duckdb python package is needed (scripts/deps.sh)" >&2; exit 2; }
if [ -z "$lib" ]; then
    lib=$(mktemp -d)
    scripts/build-lib.sh "$lib" >&2
fi
swift build -c release --scratch-path "$scratch" --product wedjat-cli >&2
cli=$(swift build -c release --scratch-path "$scratch" --show-bin-path)/wedjat-cli

rm -rf "$dir"
mkdir -p "$dir/logs" "$dir/www" "$dir/tmp"
head -c 606 /dev/urandom > "$dir/www/f.bin"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body; proxy_temp_path $dir/tmp/proxy; fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi; scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 1000;
    server { listen 127.0.0.1:$port; root $dir/www; location / { } }
}
CONF
LD_PRELOAD=$lib/libwedjat.so WEDJAT_DIR=$dir/logs WEDJAT_HTTP_RECORDS=1000000 nginx -c "$dir/nginx.conf" -p "$dir" &
nginx_pid=$!
trap 'kill "$nginx_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done
succeeded=$(timeout 300 h2load --h1 -n "$requests" -c 16 -t 1 "http://127.0.0.1:$port/f.bin" |
    awk '/^requests:/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "succeeded,") print $i }')
kill -QUIT "$nginx_pid"
wait "$nginx_pid" || true
trap - EXIT
bytes=$(cat "$dir"/logs/*.ndjson | wc -c)
cat "$dir"/logs/*.ndjson > /dev/null   # into the page cache for both tools


status=0
"$cli" report --format json "$dir/logs" > "$dir/report.json"
report_requests=$(python3 -c "import json,sys; print(sum(h['requests'] for h in json.load(open(sys.argv[1]))['http'] if h['role'] == 'server'))" "$dir/report.json")
duck_records=$(python3 scripts/bench/duckdb_ttfb.py "$dir/logs/*.ndjson" | awk '$1 == "server" { n += $3 } END { print n + 0 }')
echo "h2load: $succeeded requests succeeded; report: $report_requests server requests; DuckDB: $duck_records server records"
if [ "$report_requests" != "$succeeded" ] || [ "$duck_records" != "$succeeded" ]; then
    echo "FAIL: the counts differ"
    status=1
fi

for r in $(seq "$rounds"); do
    for tool in report duck; do
        if [ "$tool" = report ]; then
            /usr/bin/time -o "$dir/t" -f "%e %U %S" "$cli" report --format json "$dir/logs" > /dev/null
        else
            /usr/bin/time -o "$dir/t" -f "%e %U %S" python3 scripts/bench/duckdb_ttfb.py "$dir/logs/*.ndjson" > /dev/null
        fi
        echo "$tool $(cat "$dir/t")"
    done
done > "$dir/rounds"
python3 - "$dir/rounds" "$bytes" "$rounds" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
mb = int(sys.argv[2]) / 1048576
def med(tool, f): return statistics.median(f(r) for r in rows if r[0] == tool)
wall = {t: med(t, lambda r: float(r[1])) for t in ("report", "duck")}
cpu = {t: med(t, lambda r: float(r[2]) + float(r[3])) for t in ("report", "duck")}
print(f"log: {mb:.1f} MB (a real nginx server's, in segments); medians of {sys.argv[3]} interleaved rounds")
print(f"wedjat report: {wall['report']:6.3f} s wall  {cpu['report']:6.3f} s CPU  {mb / wall['report']:6.1f} MB/s")
print(f"DuckDB:        {wall['duck']:6.3f} s wall  {cpu['duck']:6.3f} s CPU  {mb / wall['duck']:6.1f} MB/s")
print(f"wedjat report takes {wall['report'] / wall['duck']:.2f}x DuckDB's time")
EOF
exit $status
