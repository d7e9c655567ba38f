#!/usr/bin/env bash
# Throughput of redis-server under wedjat: redis-benchmark -t get,set -n BENCH_REQUESTS -c 32
# -P 1 (no pipelining: one request, one reply, one read and one write per command) against a
# fresh redis-server per run; BENCH_RUNS rounds, each one run without wedjat, one with
# LD_PRELOAD=LIBDIR/libwedjat.so and one under `strace -f -o /dev/null` (for scale: what a
# ptrace-based tracer costs the same server). The order of the first two alternates between
# rounds so that drift cancels. Per run it prints the SET and GET req/s, the server's CPU
# time per command (utime + stime of redis-server's threads, and strace's under strace), the
# CPU other programs used meanwhile (busy time not ours: see BENCH_MAX_FOREIGN) and, with
# wedjat, the CPU time of wedjat's own thread per command and the connection records and
# drops in its log; then the medians, with/without (also per round) and strace/without for
# SET and GET. The frame is shared with nginx.sh: lib/server_bench.sh.
#   scripts/bench/redis.sh [LIBDIR]     (default: build the libraries into a temp dir)
# Exit status 1 when the median req/s with wedjat / without is below BENCH_TARGET for SET or
# for GET, else 0.
# Environment (defaults):
#   BENCH_RUNS=5 BENCH_REQUESTS=200000 (per test: -n) BENCH_CONNS=32 BENCH_TARGET=0.97
#   BENCH_SECONDS          instead of BENCH_REQUESTS: about this many seconds per test (the
#                          request count is taken from a 1-second calibration run)
#   BENCH_TASKSET=1        redis-server (and strace, and wedjat's agent thread) on CPU 0,
#                          redis-benchmark on CPU 1; 0: no pinning.
#   BENCH_STRACE=1         0: no strace runs.
#   BENCH_WEDJAT_ENV=      extra VAR=VALUE settings (space-separated) for the runs with wedjat,
#                          e.g. "WEDJAT_HTTP=0" to measure without byte capture / HTTP parsing.
#   BENCH_MAX_FOREIGN=10   a run during which other programs used more than this much CPU
#                          (% of one CPU: the machine's busy time minus that of the server
#                          and the load generator) is run again, up to 3 attempts (the last counts,
#                          flagged): the machine may be shared (builds).
#   BENCH_QUIET_WAIT=300   before each run, wait (at most this many seconds in all) until the
#                          machine has been idle for a second (< 15% of a CPU busy).
# Needs redis-server, redis-benchmark, python3 (strace, taskset). Writes only to a fresh temp
# dir, talks only to 127.0.0.1, stops every redis-server it started by its PID.
set -euo pipefail
bench_name=redis bench_unit=command bench_metrics=(SET GET)
# shellcheck source=lib/server_bench.sh
. "$(dirname "$0")/lib/server_bench.sh"
nreq=${BENCH_REQUESTS:-200000}
bench_require redis-server redis-benchmark python3
bench_setup "$@"

# measure MODE N: start a fresh redis-server in MODE, run the benchmark, stop it (bench_record).
measure() {
    local mode=$1 n=$2 i logs="$work/logs-$1-$2" out="$work/bench-$1-$2.csv" a b
    bench_prepare "$mode" "$logs"
    rm -f "$work/redis.log"
    "${srv_cpu[@]}" "${bench_pre[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$work" --logfile "$work/redis.log" --pidfile "$bench_pidfile" --daemonize no \
        >"$work/redis.out" 2>&1 &
    server_pid=$!
    for i in $(seq 1 200); do
        grep -q 'Ready to accept connections' "$work/redis.log" 2>/dev/null && [ -s "$bench_pidfile" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "redis-server exited: $(tail -5 "$work/redis.out" "$work/redis.log")" >&2; exit 2; }
        sleep 0.05
    done
    grep -q 'Ready to accept connections' "$work/redis.log" || { echo "redis-server did not start in 10 s" >&2; exit 2; }
    a=$(bench_snap)
    # redis-benchmark's own CPU time: the cutime/cstime of the sh that waited for it
    "${load_cpu[@]}" sh -c 'redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$2" -c "$3" -P 1 -q --csv > "$4" 2>&1; rc=$?; cat /proc/$$/stat > "$4.stat"; exit $rc' \
        sh "$port" "$nreq" "$conns" "$out" \
        || { echo "redis-benchmark failed: $(tail -5 "$out")" >&2; exit 2; }
    b=$(bench_snap)
    kill -TERM "$(cat "$bench_pidfile")"   # redis-server shuts down cleanly on SIGTERM
    wait "$server_pid" || true
    server_pid=
    grep -q 'ready to exit, bye bye' "$work/redis.log" || echo "# $mode run $n: redis-server did not shut down cleanly" >&2
    local set_rps get_rps
    set_rps=$(awk -F'"' '$2 == "SET" { print $4 }' "$out")
    get_rps=$(awk -F'"' '$2 == "GET" { print $4 }' "$out")
    [ -n "$set_rps" ] && [ -n "$get_rps" ] || { echo "no SET/GET results: $(cat "$out")" >&2; exit 2; }
    bench_record "$mode" "$n" $((2 * nreq)) "$a" "$b" "$(awk '{ print $16 + $17 }' "$out.stat")" "$logs" "$set_rps" "$get_rps"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); redis-server $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"
if [ -n "${BENCH_SECONDS:-}" ]; then
    nreq=20000
    measure without 0
    # the slower of SET and GET (the last two columns of $line) sets the request count
    nreq=$(echo "$line" | awk -v s="$BENCH_SECONDS" '{ r = ($(NF - 1) < $NF ? $(NF - 1) : $NF); n = int(r * s / 1000) * 1000; print (n < 1000 ? 1000 : n) }')
else
    measure without 0   # warm-up, not counted
fi
echo "# library: $lib (sha256 $(sha256sum "$lib" | cut -c1-12))${BENCH_WEDJAT_ENV:+, with wedjat: $BENCH_WEDJAT_ENV}"
echo "# redis-benchmark -t set,get -n $nreq -c $conns -P 1; $runs rounds;" \
     "$([ "$pin" = 1 ] && echo "server on CPU 0, redis-benchmark on CPU 1" || echo "no CPU pinning")"
bench_rounds
