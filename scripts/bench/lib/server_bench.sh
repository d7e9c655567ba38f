# The frame that nginx.sh and redis.sh share: settings, checks, the temp dir and its cleanup,
# the libraries, CPU pinning, runs retried while the machine is busy, alternating rounds and
# the closing summary. A script sets bench_name (the server: nginx, redis), bench_unit (what
# its CPU time is counted per: request, command) and bench_metrics (the names of its req/s
# columns: "" for one, or SET GET), sources this file, calls `bench_setup "$@"` and defines
# `measure MODE N`, which starts a fresh server in MODE (without, with, strace: see
# bench_prepare), loads it, stops it and ends with bench_record.
# shellcheck shell=bash
bench_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$bench_lib/../../.." && pwd)
runs=${BENCH_RUNS:-5} conns=${BENCH_CONNS:-32} target=${BENCH_TARGET:-0.97}
pin=${BENCH_TASKSET:-1} use_strace=${BENCH_STRACE:-1} max_foreign=${BENCH_MAX_FOREIGN:-10}
quiet_wait=${BENCH_QUIET_WAIT:-300}
read -r -a wedjat_env <<< "${BENCH_WEDJAT_ENV:-}"

# bench_require TOOL...: exit 2 naming the first one missing.
bench_require() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$bench_name.sh: $tool is not installed" >&2; exit 2; }
    done
}

# bench_setup [LIBDIR]: the work dir ($work, with the server's pid file at $bench_pidfile),
# the library ($lib: LIBDIR's, or built into the work dir), pinning (srv_cpu, load_cpu) and a
# free loopback port ($port).
bench_setup() {
    if [ "$use_strace" = 1 ] && ! command -v strace >/dev/null; then
        echo "$bench_name.sh: strace is not installed: no strace column" >&2
        use_strace=0
    fi
    if [ "$pin" = 1 ] && { ! command -v taskset >/dev/null || [ "$(nproc)" -lt 2 ]; }; then
        echo "$bench_name.sh: taskset missing or fewer than 2 CPUs: no pinning" >&2
        pin=0
    fi
    work=$(mktemp -d "/tmp/wedjat-bench-$bench_name.XXXXXX")
    bench_pidfile=$work/server.pid
    server_pid=
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
    if [ $# -ge 1 ]; then
        libdir=$(cd "$1" && pwd)
    else
        libdir=$work/lib
        echo "# building the libraries into $libdir (scripts/build-lib.sh)"
        "$root/scripts/build-lib.sh" "$libdir" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 2; }
    fi
    lib=$libdir/libwedjat.so
    [ -f "$lib" ] && [ -f "$libdir/libwedjat-agent.so" ] || { echo "$bench_name.sh: no $lib or libwedjat-agent.so" >&2; exit 2; }
    srv_cpu=() load_cpu=()
    if [ "$pin" = 1 ]; then
        srv_cpu=(taskset -c 0)
        load_cpu=(taskset -c 1)
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
}

# Stops only the server (or strace) this script started, by its PID.
bench_cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        [ -s "$bench_pidfile" ] && kill -TERM "$(cat "$bench_pidfile")" 2>/dev/null
        sleep 0.5
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}

# bench_prepare MODE LOGS: bench_pre becomes the command prefix of MODE (with: the preload,
# logging to LOGS; strace: strace -f), and waits for the machine to be quiet.
bench_prepare() {
    bench_pre=()
    case $1 in
    with) bench_pre=(env WEDJAT_DIR="$2" LD_PRELOAD="$lib" "${wedjat_env[@]}") ;;
    strace) bench_pre=(strace -f -o /dev/null) ;;
    esac
    rm -rf "$bench_pidfile" "$2"
    local t0=$SECONDS w
    w=$(python3 "$bench_lib/cpu.py" quiet "$quiet_wait")
    quiet_wait=$(( quiet_wait > SECONDS - t0 ? quiet_wait - (SECONDS - t0) : 0 ))
    if [ "$w" != 0 ]; then echo "  (waited $w s for other programs to finish)"; fi
}

# bench_snap: cpu.py snap of the server.
bench_snap() { python3 "$bench_lib/cpu.py" snap "$server_pid"; }

# bench_record MODE N UNITS SNAP_BEFORE SNAP_AFTER LOAD_TICKS LOGS REQS_PER_S...: sets $line
# to the run's result (summary.py's columns but the attempt): the server's CPU time per unit,
# the CPU other programs used meanwhile (the machine's busy time minus the server's and the
# load generator's LOAD_TICKS, in % of a CPU), and with wedjat what its logs say and its
# thread's CPU time per unit. Removes LOGS.
bench_record() {
    local mode=$1 n=$2 units=$3 before=$4 after=$5 load=$6 logs=$7 extra="- - -"
    shift 7
    if [ "$mode" = with ]; then
        extra=$(python3 "$bench_lib/cpu.py" logs "$logs")
        rm -rf "$logs"
    fi
    line=$(echo "$mode $n $units $before $after $load $extra $*" | awk '{
        # fields: mode n units  busy0 u0 s0 agent0 t0  busy1 u1 s1 agent1 t1  load  records drops unended  req/s...
        ticks = ($10 - $5) + ($11 - $6)
        cpu_us = ticks * 10000 / $3
        foreign = (($9 - $4) - ticks - $14) / ($13 - $8)
        if (foreign < 0) foreign = 0
        agent = ($1 == "with") ? sprintf("%.3f", ($12 - $7) / 1000 / $3) : "-"
        out = sprintf("%s %s %.2f %.0f %s %s %s %s", $1, $2, cpu_us, foreign, $15, $16, $17, agent)
        for (i = 18; i <= NF; i++) out = out " " $i
        print out }')
}

# bench_run MODE N: measure, again while other programs took more than max_foreign % of a CPU
# (at most 3 attempts: the last counts, flagged).
bench_run() {
    local attempt row
    for attempt in 1 2 3; do
        measure "$1" "$2"
        [ "$(echo "$line" | awk -v m="$max_foreign" '{ print ($4 > m) }')" = 0 ] && break
        if [ $attempt -lt 3 ]; then echo "  (run $2 $1: other programs used $(echo "$line" | awk '{ print $4 }')% of a CPU: again)"; fi
    done
    row=$(echo "$line" | awk -v a="$attempt" '{ $2 = $2 " " a; print }')
    echo "$row" >> "$work/results"
    echo "$row" | awk -v names="${bench_metrics[*]}" -v unit="$bench_unit" '{
        # fields: mode n attempt cpu_us foreign records drops unended agent_us req/s...
        k = split(names, name, " ")
        rates = ""
        for (i = 10; i <= NF; i++) rates = rates sprintf("  %s%8.0f req/s", (k ? name[i - 9] " " : ""), $i)
        printf "  run %s %-8s%s  %5.2f us CPU/%s  others %3d%% CPU%s%s\n", $2, $1, rates, $4, unit, $5,
            ($3 > 1 ? " (attempt " $3 ")" : ""),
            ($6 == "-" ? "" : "  records " $6 ", lost " $7 ", logs without process_end " $8 ", wedjat thread " $9 " us/" unit) }'
}

# bench_rounds: runs rounds of without and with (their order alternating, so that drift
# cancels) and strace, then the summary; exits with its status.
bench_rounds() {
    : > "$work/results"
    local n
    for n in $(seq 1 "$runs"); do
        if [ $((n % 2)) = 1 ]; then bench_run without "$n"; bench_run with "$n"; else bench_run with "$n"; bench_run without "$n"; fi
        if [ "$use_strace" = 1 ]; then bench_run strace "$n"; fi
    done
    local status=0
    python3 "$bench_lib/summary.py" "$work/results" "$target" "$max_foreign" "$bench_name" "$bench_unit" "${bench_metrics[@]}" || status=$?
    exit "$status"
}

# wrk servers (nginx.sh, node.sh). bench_wrk URL OUT: wrk -t1 -c$conns -d${secs}s on the load
# generator's CPU, its output in OUT and its own CPU time (the cutime/cstime of the sh that
# waited for it) in OUT.stat.
bench_wrk() {
    "${load_cpu[@]}" sh -c 'wrk -t1 -c"$1" -d"$2"s "$3" > "$4" 2>&1; rc=$?; cat /proc/$$/stat > "$4.stat"; exit $rc' \
        sh "$conns" "$secs" "$1" "$2" \
        || { echo "wrk failed: $(tail -5 "$2")" >&2; exit 2; }
}

# bench_wrk_record MODE N OUT A B LOGS: the run's figures from wrk's output (bench_record).
bench_wrk_record() {
    local out=$3
    if grep -qE 'Socket errors|Non-2xx' "$out"; then echo "# $1 run $2: wrk: $(grep -E 'Socket errors|Non-2xx' "$out" | tr -s ' ')" >&2; fi
    bench_record "$1" "$2" "$(awk '/requests in/ { print $1 }' "$out")" "$4" "$5" \
        "$(awk '{ print $16 + $17 }' "$out.stat")" "$6" "$(awk '/^Requests\/sec:/ { print $2 }' "$out")"
}

# The HTTP/2 load (nginx.sh with BENCH_H2=1). bench_h2load URL OUT: h2load -c$conns
# -m$h2_streams -D${secs} (one thread) on the load generator's CPU, as bench_wrk.
bench_h2load() {
    "${load_cpu[@]}" sh -c 'h2load -c"$1" -m"$2" -D"$3" "$4" > "$5" 2>&1; rc=$?; cat /proc/$$/stat > "$5.stat"; exit $rc' \
        sh "$conns" "$h2_streams" "$secs" "$1" "$2" \
        || { echo "h2load failed: $(tail -5 "$2")" >&2; exit 2; }
}

# bench_h2load_record MODE N OUT A B LOGS: the run's figures from h2load's output; the unit is
# a request that succeeded.
bench_h2load_record() {
    local out=$3
    grep -q "Application protocol: h2" "$out" || { echo "h2load did not negotiate h2: $(tail -5 "$out")" >&2; exit 2; }
    if grep -qE '[1-9][0-9]* (failed|errored)' "$out"; then echo "# $1 run $2: h2load: $(grep '^requests:' "$out")" >&2; fi
    bench_record "$1" "$2" "$(awk '/^requests:/ { print $8 }' "$out")" "$4" "$5" \
        "$(awk '{ print $16 + $17 }' "$out.stat")" "$6" "$(awk '/^finished in/ { print $4 }' "$out")"
}
