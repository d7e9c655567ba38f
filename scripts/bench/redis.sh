#!/usr/bin/env bash
# Throughput of redis-server under wedjat: redis-benchmark -t get,set -n BENCH_REQUESTS -c 32
# -P 1 (no pipelining: one request, one reply, one read and one write per command) against a
# fresh redis-server per run; BENCH_RUNS rounds, each one run without wedjat, one with
# LD_PRELOAD=LIBDIR/libwedjat.so and one under `strace -f -o /dev/null` (for scale: what a
# ptrace-based tracer costs the same server). The order of the first two alternates between
# rounds so that drift cancels. Per run it prints the SET and GET req/s, the server's CPU
# time per command (utime + stime of redis-server's threads, and strace's under strace), the
# CPU other programs used meanwhile (busy time not ours: see BENCH_MAX_FOREIGN) and, with
# wedjat, the connection records and drops in its log; then the medians, with/without and
# strace/without for SET and GET.
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
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${BENCH_RUNS:-5} nreq=${BENCH_REQUESTS:-200000} conns=${BENCH_CONNS:-32} target=${BENCH_TARGET:-0.97}
pin=${BENCH_TASKSET:-1} use_strace=${BENCH_STRACE:-1} max_foreign=${BENCH_MAX_FOREIGN:-10}
quiet_wait=${BENCH_QUIET_WAIT:-300}
read -r -a wedjat_env <<< "${BENCH_WEDJAT_ENV:-}"
for tool in redis-server redis-benchmark python3; do
    command -v "$tool" >/dev/null || { echo "redis.sh: $tool is not installed" >&2; exit 2; }
done
if [ "$use_strace" = 1 ] && ! command -v strace >/dev/null; then
    echo "redis.sh: strace is not installed: no strace column" >&2
    use_strace=0
fi
if [ "$pin" = 1 ] && { ! command -v taskset >/dev/null || [ "$(nproc)" -lt 2 ]; }; then
    echo "redis.sh: taskset missing or fewer than 2 CPUs: no pinning" >&2
    pin=0
fi

work=$(mktemp -d /tmp/wedjat-bench-redis.XXXXXX)
server_pid=
cleanup() {
    # only the redis-server (or strace) this script started, by its PID
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        [ -s "$work/redis.pid" ] && kill -TERM "$(cat "$work/redis.pid")" 2>/dev/null
        sleep 0.5
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ $# -ge 1 ]; then
    libdir=$(cd "$1" && pwd)
else
    libdir=$work/lib
    echo "# building the libraries into $libdir (scripts/build-lib.sh)"
    "$root/scripts/build-lib.sh" "$libdir" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 2; }
fi
lib=$libdir/libwedjat.so
[ -f "$lib" ] && [ -f "$libdir/libwedjat-agent.so" ] || { echo "redis.sh: no $lib or libwedjat-agent.so" >&2; exit 2; }

# cpu.py quiet SECS: wait for an idle second. cpu.py snap PID: "U T S": the machine's
# busy time (user, nice, system, irq, softirq: a task's utime+stime includes the softirq work
# done while it ran), and utime and stime summed over PID and its descendants (clock ticks).
# cpu.py logs DIR: "records drops unended" of a wedjat log directory.
cat > "$work/cpu.py" <<'PY'
import json, os, sys, time
def children(p):
    out = []
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                out += [int(x) for x in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out
def times(p):
    try:
        s = open(f"/proc/{p}/stat").read()
        f = s[s.rindex(")") + 2:].split()
        return int(f[11]), int(f[12])
    except (OSError, ValueError):
        return 0, 0
if sys.argv[1] == "quiet":
    def busy():
        f = [int(x) for x in open("/proc/stat").readline().split()[1:8]]
        return f[0] + f[1] + f[2] + f[5] + f[6]
    deadline, waited = time.monotonic() + float(sys.argv[2]), 0
    while True:
        b0, t0 = busy(), time.monotonic()
        time.sleep(1)
        pct = (busy() - b0) / (time.monotonic() - t0)
        if pct < 15 or time.monotonic() > deadline:
            break
        waited += 1
    print(waited)
elif sys.argv[1] == "snap":
    tree, i = [int(sys.argv[2])], 0
    while i < len(tree):
        tree += [c for c in children(tree[i]) if c not in tree]
        i += 1
    u = sum(times(p)[0] for p in tree)
    s = sum(times(p)[1] for p in tree)
    f = open("/proc/stat").readline().split()
    print(sum(int(f[i]) for i in (1, 2, 3, 6, 7)), u, s, time.monotonic())
else:
    d = sys.argv[2]
    records = drops = ends = files = 0
    for name in os.listdir(d):
        files += 1
        for line in open(os.path.join(d, name)):
            r = json.loads(line)
            if r["type"] == "connection":
                records += 1
            elif r["type"] == "process_end":
                ends += 1
                drops += r["dropped_events"] + r["dropped_records"] + r.get("untracked_connections", 0)
    print(records, drops, files - ends)
PY

srv_cpu=() load_cpu=()
if [ "$pin" = 1 ]; then
    srv_cpu=(taskset -c 0)
    load_cpu=(taskset -c 1)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# measure MODE N: start a fresh redis-server in MODE (without|with|strace), run the benchmark,
# stop it. Sets $line to "MODE N set_rps get_rps cpu_us_per_command foreign_pct records drops unended".
measure() {
    local mode=$1 n=$2 pre=() i logs="$work/logs-$1-$2" out="$work/bench-$1-$2.csv" a b
    case $mode in
    with) pre=(env WEDJAT_DIR="$logs" LD_PRELOAD="$lib" "${wedjat_env[@]}") ;;
    strace) pre=(strace -f -o /dev/null) ;;
    esac
    rm -rf "$work/redis.pid" "$work/redis.log" "$logs"
    local t0=$SECONDS w
    w=$(python3 "$work/cpu.py" quiet "$quiet_wait")
    quiet_wait=$(( quiet_wait > SECONDS - t0 ? quiet_wait - (SECONDS - t0) : 0 ))
    if [ "$w" != 0 ]; then echo "  (waited $w s for other programs to finish)"; fi
    "${srv_cpu[@]}" "${pre[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid" --daemonize no \
        >"$work/redis.out" 2>&1 &
    server_pid=$!
    for i in $(seq 1 200); do
        grep -q 'Ready to accept connections' "$work/redis.log" 2>/dev/null && [ -s "$work/redis.pid" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "redis-server exited: $(tail -5 "$work/redis.out" "$work/redis.log")" >&2; exit 2; }
        sleep 0.05
    done
    grep -q 'Ready to accept connections' "$work/redis.log" || { echo "redis-server did not start in 10 s" >&2; exit 2; }
    a=$(python3 "$work/cpu.py" snap "$server_pid")
    # redis-benchmark's own CPU time: the cutime/cstime of the sh that waited for it
    "${load_cpu[@]}" sh -c 'redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$2" -c "$3" -P 1 -q --csv > "$4" 2>&1; rc=$?; cat /proc/$$/stat > "$4.stat"; exit $rc' \
        sh "$port" "$nreq" "$conns" "$out" \
        || { echo "redis-benchmark failed: $(tail -5 "$out")" >&2; exit 2; }
    b=$(python3 "$work/cpu.py" snap "$server_pid")
    kill -TERM "$(cat "$work/redis.pid")"   # redis-server shuts down cleanly on SIGTERM
    wait "$server_pid" || true
    server_pid=
    grep -q 'ready to exit, bye bye' "$work/redis.log" || echo "# $mode run $n: redis-server did not shut down cleanly" >&2
    local set_rps get_rps bench_u extra="- - -"
    set_rps=$(awk -F'"' '$2 == "SET" { print $4 }' "$out")
    get_rps=$(awk -F'"' '$2 == "GET" { print $4 }' "$out")
    [ -n "$set_rps" ] && [ -n "$get_rps" ] || { echo "no SET/GET results: $(cat "$out")" >&2; exit 2; }
    bench_u=$(awk '{ print $16 + $17 }' "$out.stat")    # cutime + cstime: redis-benchmark's CPU time
    if [ "$mode" = with ]; then
        extra=$(python3 "$work/cpu.py" logs "$logs")
        rm -rf "$logs"
    fi
    line=$(echo "$mode $n $set_rps $get_rps $((2 * nreq)) $a $b $bench_u $extra" | awk '{
        # fields: mode n set get cmds  U0 u0 s0 m0  U1 u1 s1 m1  bench_u  records drops unended
        cpu_us = (($11 - $7) + ($12 - $8)) * 10000 / $5
        foreign = (($10 - $6) - ($11 - $7) - ($12 - $8) - $14) / ($13 - $9)
        if (foreign < 0) foreign = 0
        printf "%s %s %.0f %.0f %.2f %.0f %s %s %s\n", $1, $2, $3, $4, cpu_us, foreign, $15, $16, $17 }')
}

# run MODE N: measure, again while other programs took more than max_foreign % of a CPU.
run() {
    local attempt
    for attempt in 1 2 3; do
        measure "$1" "$2"
        [ "$(echo "$line" | awk -v m="$max_foreign" '{ print ($6 > m) }')" = 0 ] && break
        if [ $attempt -lt 3 ]; then echo "  (run $2 $1: other programs used $(echo "$line" | awk '{ print $6 }')% of a CPU: again)"; fi
    done
    echo "$line $attempt" >> "$work/results"
    echo "$line $attempt" | awk '{
        printf "  run %s %-8s SET %8.0f req/s  GET %8.0f req/s  %5.2f us CPU/command  others %3d%% CPU%s%s\n", $2, $1, $3, $4, $5, $6,
            ($10 > 1 ? " (attempt " $10 ")" : ""),
            ($7 == "-" ? "" : "  records " $7 ", drops " $8 ", logs without process_end " $9) }'
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); redis-server $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"
if [ -n "${BENCH_SECONDS:-}" ]; then
    nreq=20000
    measure without 0
    nreq=$(echo "$line" | awk -v s="$BENCH_SECONDS" '{ n = int(($3 < $4 ? $3 : $4) * s / 1000) * 1000; print (n < 1000 ? 1000 : n) }')
else
    measure without 0   # warm-up, not counted
fi
echo "# library: $lib (sha256 $(sha256sum "$lib" | cut -c1-12))${BENCH_WEDJAT_ENV:+, with wedjat: $BENCH_WEDJAT_ENV}"
echo "# redis-benchmark -t set,get -n $nreq -c $conns -P 1; $runs rounds;" \
     "$([ "$pin" = 1 ] && echo "server on CPU 0, redis-benchmark on CPU 1" || echo "no CPU pinning")"
: > "$work/results"
for n in $(seq 1 "$runs"); do
    if [ $((n % 2)) = 1 ]; then run without "$n"; run with "$n"; else run with "$n"; run without "$n"; fi
    if [ "$use_strace" = 1 ]; then run strace "$n"; fi
done

python3 - "$work/results" "$target" "$max_foreign" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
target, max_foreign = float(sys.argv[2]), float(sys.argv[3])
modes = [m for m in ("without", "with", "strace") if any(r[0] == m for r in rows)]
med = lambda m, i: statistics.median(float(r[i]) for r in rows if r[0] == m)
setr = {m: med(m, 2) for m in modes}
getr = {m: med(m, 3) for m in modes}
cpu = {m: med(m, 4) for m in modes}
by = {(r[0], r[1]): r for r in rows}
names = {"without": "without", "with": "with wedjat", "strace": "strace -f"}
flag = lambda r: "*" if r[9] == "3" and float(r[5]) > max_foreign else ""
print()
print("| run | " + " | ".join(f"{t} {names[m]}" for t in ("SET", "GET") for m in modes) + " | "
      + " | ".join(f"CPU us/cmd {names[m]}" for m in modes) + " |")
print("|---" * (1 + 3 * len(modes)) + "|")
for n in sorted({r[1] for r in rows}, key=int):
    cells = [f"{float(by[(m, n)][i]):.0f}{flag(by[(m, n)])}" if (m, n) in by else "-" for i in (2, 3) for m in modes]
    cells += [f"{float(by[(m, n)][4]):.2f}" if (m, n) in by else "-" for m in modes]
    print(f"| {n} | " + " | ".join(cells) + " |")
print("| median | " + " | ".join(f"{d[m]:.0f}" for d in (setr, getr) for m in modes) + " | "
      + " | ".join(f"{cpu[m]:.2f}" for m in modes) + " |")
print()
ok = True
for name, d in (("SET", setr), ("GET", getr)):
    ratio = d["with"] / d["without"]
    ok = ok and ratio >= target
    print(f"redis {name} req/s with/without: {ratio:.3f} (target >= {target}): {'OK' if ratio >= target else 'BELOW TARGET'}"
          + (f"; strace -f/without: {d['strace'] / d['without']:.3f}" if "strace" in d else ""))
print(f"redis CPU per command with/without: {cpu['with'] / cpu['without']:.3f}"
      + (f"; strace -f/without: {cpu['strace'] / cpu['without']:.2f}x" if "strace" in cpu else ""))
recs = [int(r[6]) for r in rows if r[0] == "with"]
drops = sum(int(r[7]) for r in rows if r[0] == "with")
unended = sum(int(r[8]) for r in rows if r[0] == "with")
print(f"wedjat logs: {min(recs)}..{max(recs)} connection records per run; drops (events + records + untracked)"
      f" in all runs: {drops}; logs without process_end: {unended}")
disturbed = [f"{r[0]} {r[1]}" for r in rows if flag(r)]
retried = sum(int(r[9]) - 1 for r in rows)
print(f"runs repeated because other programs used more than {max_foreign:.0f}% of a CPU meanwhile: {retried}"
      + (f"; still disturbed after 3 attempts: {', '.join(disturbed)}" if disturbed else ""))
sys.exit(0 if ok else 1)
PY
