#!/usr/bin/env bash
# Throughput of nginx under wedjat: nginx (master + 1 worker) serves a 1 KiB static file to
# wrk (-t1 -c32, keep-alive) for BENCH_SECONDS; BENCH_RUNS rounds, each one run without
# wedjat, one with LD_PRELOAD=LIBDIR/libwedjat.so and one under `strace -f -o /dev/null` (for
# scale: what a ptrace-based tracer costs the same server), each on a fresh nginx. The order
# of the first two alternates between rounds (without first, then with first) so that drift
# cancels. Per run it prints the req/s, the server's CPU time per request (utime + stime of
# nginx's processes, and strace's under strace), the CPU that other programs on the machine
# used meanwhile (busy time not ours: see BENCH_MAX_FOREIGN) and, with wedjat, the CPU time
# of wedjat's own thread per request (schedstat: the steadiest of these numbers on a noisy VM),
# the connection records and drops in its logs (the worker is a forked child with its own log:
# all of the run's logs are summed); then the medians, with/without (also per round) and
# strace/without. The frame is shared with redis.sh: lib/server_bench.sh.
#   scripts/bench/nginx.sh [LIBDIR]     (default: build the libraries into a temp dir)
# Exit status 1 when the median req/s with wedjat / without is below BENCH_TARGET, else 0.
# Environment (defaults):
#   BENCH_RUNS=5 BENCH_SECONDS=5 BENCH_CONNS=32 BENCH_TARGET=0.97
#   BENCH_TASKSET=1        nginx (and strace, and wedjat's agent thread) on CPU 0, wrk on CPU 1;
#                          0: no pinning. On 2 CPUs this keeps the load generator off the
#                          server's core, which is what makes the runs comparable.
#   BENCH_STRACE=1         0: no strace runs.
#   BENCH_WEDJAT_ENV=      extra VAR=VALUE settings (space-separated) for the runs with wedjat,
#                          e.g. "WEDJAT_HTTP=0" to measure without byte capture / HTTP parsing.
#   BENCH_H2=0             1: TLS with HTTP/2 (ALPN h2, a self-signed certificate) to h2load -cCONNS
#                          -mBENCH_H2_STREAMS -D SECONDS instead of wrk (CONNS defaults to 4,
#                          streams to 10: h2load's usual -c 4 -m 10), nginx serving a 606-byte
#                          file (h2_instructions.sh's run, timed). Needs h2load and openssl.
#   BENCH_MAX_FOREIGN=10   a run during which other programs used more than this much CPU
#                          (% of one CPU: the machine's busy time minus that of the server
#                          and the load generator) is run again, up to 3 attempts (the last counts,
#                          flagged): the machine may be shared (builds).
#   BENCH_QUIET_WAIT=300   before each run, wait (at most this many seconds in all) until the
#                          machine has been idle for a second (< 15% of a CPU busy).
# Needs nginx, wrk, python3 (strace for the strace column, taskset for pinning). Writes only
# to a fresh temp dir, talks only to 127.0.0.1, stops every nginx it started by its PID.
set -euo pipefail
bench_name=nginx bench_unit=request bench_metrics=("")
# shellcheck source=lib/server_bench.sh
. "$(dirname "$0")/lib/server_bench.sh"
secs=${BENCH_SECONDS:-5}
h2=${BENCH_H2:-0} h2_streams=${BENCH_H2_STREAMS:-10}
if [ "$h2" = 1 ]; then
    conns=${BENCH_CONNS:-4}
    bench_require nginx h2load openssl python3
else
    bench_require nginx wrk python3
fi
bench_setup "$@"

mkdir -p "$work/www" "$work/tmp"
head -c 1024 /dev/urandom > "$work/www/f.bin"
listen="listen 127.0.0.1:$port;"
if [ "$h2" = 1 ]; then
    head -c 606 /dev/zero | tr '\0' a > "$work/www/f.html"
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    listen="listen 127.0.0.1:$port ssl http2; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
        keepalive_requests 100000000; http2_max_requests 100000000;"
fi
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root root;"   # workers must be able to write the log dir
cat > "$work/nginx.conf" <<CONF
$user_line
daemon off;
master_process on;
worker_processes 1;
pid $bench_pidfile;
error_log $work/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    sendfile on;
    keepalive_timeout 65s;
    server {
        $listen
        root $work/www;
    }
}
CONF

# measure MODE N: start a fresh nginx in MODE, wrk it for $secs s, stop it (bench_record).
measure() {
    local mode=$1 n=$2 i logs="$work/logs-$1-$2" out="$work/wrk-$1-$2.txt" a b
    bench_prepare "$mode" "$logs"
    "${srv_cpu[@]}" "${bench_pre[@]}" nginx -p "$work" -e "$work/error.log" -c "$work/nginx.conf" \
        >"$work/nginx.out" 2>&1 &
    server_pid=$!
    # nginx writes its pid file once it listens (under strace, the pid is nginx's, not strace's)
    for i in $(seq 1 200); do
        [ -s "$bench_pidfile" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "nginx exited: $(tail -5 "$work/nginx.out" "$work/error.log")" >&2; exit 2; }
        sleep 0.05
    done
    [ -s "$bench_pidfile" ] || { echo "nginx did not start in 10 s" >&2; exit 2; }
    sleep 0.3   # the worker is forked after the pid file is written
    a=$(bench_snap)
    if [ "$h2" = 1 ]; then bench_h2load "https://127.0.0.1:$port/f.html" "$out"; else bench_wrk "http://127.0.0.1:$port/f.bin" "$out"; fi
    b=$(bench_snap)
    kill -QUIT "$(cat "$bench_pidfile")"   # graceful: the worker finishes and exits normally
    wait "$server_pid" || true
    server_pid=
    if [ "$h2" = 1 ]; then bench_h2load_record "$mode" "$n" "$out" "$a" "$b" "$logs"; else bench_wrk_record "$mode" "$n" "$out" "$a" "$b" "$logs"; fi
}

if [ "$h2" = 1 ]; then load_version=$(h2load --version 2>&1 | head -1); else load_version="wrk $(wrk -v 2>&1 | head -1 | awk '{ print $2 }')"; fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); $(nginx -v 2>&1 | sed 's/.*: //'), $load_version"
echo "# library: $lib (sha256 $(sha256sum "$lib" | cut -c1-12))${BENCH_WEDJAT_ENV:+, with wedjat: $BENCH_WEDJAT_ENV}"
if [ "$h2" = 1 ]; then
    echo "# nginx: master + 1 worker, 606-byte file, TLS + HTTP/2; h2load -c$conns -m$h2_streams -D${secs}; $runs rounds;" \
         "$([ "$pin" = 1 ] && echo "server on CPU 0, h2load on CPU 1" || echo "no CPU pinning")"
else
    echo "# nginx: master + 1 worker, 1 KiB file, keep-alive; wrk -t1 -c$conns -d${secs}s; $runs rounds;" \
         "$([ "$pin" = 1 ] && echo "server on CPU 0, wrk on CPU 1" || echo "no CPU pinning")"
fi
measure without 0   # warm-up (page cache, first start of nginx), not counted
bench_rounds
