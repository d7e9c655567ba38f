#!/usr/bin/env bash
# Throughput of a Node.js http server under wedjat: one node process (libuv, its sockets closed
# with a raw syscall) answers every request with 600 bytes to wrk (-t1 -c32, keep-alive) for
# BENCH_SECONDS; BENCH_RUNS rounds, each one run without wedjat, one with
# LD_PRELOAD=LIBDIR/libwedjat.so and one under `strace -f -o /dev/null`, each on a fresh
# server, the order of the first two alternating between rounds. The frame (what each run
# prints, the medians, the quiet-machine waits, the pinning) is nginx.sh's and redis.sh's:
# lib/server_bench.sh.
#   scripts/bench/node.sh [LIBDIR]     (default: build the libraries into a temp dir)
# Exit status 1 when the median req/s with wedjat / without is below BENCH_TARGET, else 0.
# Environment (defaults): BENCH_RUNS=5 BENCH_SECONDS=5 BENCH_CONNS=32 BENCH_TARGET=0.95, and
# BENCH_TASKSET, BENCH_STRACE, BENCH_WEDJAT_ENV, BENCH_MAX_FOREIGN, BENCH_QUIET_WAIT as in
# nginx.sh. Needs node, wrk, python3. Writes only to a fresh temp dir, talks only to 127.0.0.1,
# stops every server it started by its PID.
set -euo pipefail
bench_name=node bench_unit=request bench_metrics=("")
: "${BENCH_TARGET:=0.95}"
# shellcheck source=lib/server_bench.sh
. "$(dirname "$0")/lib/server_bench.sh"
secs=${BENCH_SECONDS:-5}
bench_require node wrk python3
bench_setup "$@"

cat > "$work/server.js" <<'JS'
const http = require('http');
const fs = require('fs');
const body = Buffer.alloc(600, 'a');
const server = http.createServer((req, res) => {
  res.writeHead(200, {'Content-Type': 'text/plain', 'Content-Length': body.length});
  res.end(body);
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => fs.writeFileSync(process.argv[3], String(process.pid)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
JS

# measure MODE N: start a fresh node server in MODE, wrk it for $secs s, stop it (bench_record).
measure() {
    local mode=$1 n=$2 i logs="$work/logs-$1-$2" out="$work/wrk-$1-$2.txt" a b
    bench_prepare "$mode" "$logs"
    rm -f "$bench_pidfile"
    "${srv_cpu[@]}" "${bench_pre[@]}" node "$work/server.js" "$port" "$bench_pidfile" >"$work/node.out" 2>&1 &
    server_pid=$!
    for i in $(seq 1 200); do
        [ -s "$bench_pidfile" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "node exited: $(tail -5 "$work/node.out")" >&2; exit 2; }
        sleep 0.05
    done
    [ -s "$bench_pidfile" ] || { echo "node did not start in 10 s" >&2; exit 2; }
    a=$(bench_snap)
    bench_wrk "http://127.0.0.1:$port/" "$out"
    b=$(bench_snap)
    kill -TERM "$(cat "$bench_pidfile")"   # the server closes and exits normally
    wait "$server_pid" || true
    server_pid=
    bench_wrk_record "$mode" "$n" "$out" "$a" "$b" "$logs"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); node $(node --version), wrk $(wrk -v 2>&1 | head -1 | awk '{ print $2 }')"
echo "# library: $lib (sha256 $(sha256sum "$lib" | cut -c1-12))${BENCH_WEDJAT_ENV:+, with wedjat: $BENCH_WEDJAT_ENV}"
echo "# node http server, 600-byte responses, keep-alive; wrk -t1 -c$conns -d${secs}s; $runs rounds;" \
     "$([ "$pin" = 1 ] && echo "server on CPU 0, wrk on CPU 1" || echo "no CPU pinning")"
measure without 0   # warm-up, not counted
bench_rounds
