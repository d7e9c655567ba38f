#!/usr/bin/env bash
# What watching costs per process, where users pay it: a short networked process (one curl GET
# to a loopback server), fork+execve, posix_spawn and fork+_exit children of a watched parent,
# and /bin/true alone; plus the memory a watched process has: RSS and the size of its fd table
# (FDSize), also under RLIMIT_NOFILE 1048576. Every figure is watched minus plain, both taken
# in the same run, alternating, over ROUNDS rounds (medians), once with the logs on tmpfs (what
# wedjat itself costs) and once under $TMPDIR (a disk: file creation included).
#   scripts/bench/process_cost.sh LIBDIR [ROUNDS]
# Targets (issue: runtime core): curl <= 1 ms added; each child <= 0.3 ms added; /bin/true
# <= 0.2 ms added.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [ROUNDS]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
rounds=${2:-15}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-proc.XXXXXX")
shm=$(mktemp -d /dev/shm/wedjat-bench-proc.XXXXXX)
srv=
cleanup() { [ -n "$srv" ] && { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; }; rm -rf "$work" "$shm"; }
trap cleanup EXIT
gcc -O2 -o "$work/proc_cost" "$here/proc_cost.c"
gcc -O2 -o "$work/spawn_timer" "$here/spawn_timer.c"

# A loopback HTTP server, unwatched: a 600-byte file.
# shellcheck source=lib/file_server.sh
. "$here/lib/file_server.sh"
file_server_start "$work"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# series NAME LOGDIR: every scenario, ROUNDS alternating rounds. Wall time is what the
# targets are about; CPU time (the process's threads and children) is the instrument that does
# not move with the neighbours' load: when the two disagree, the machine was busy.
series() {
    local name=$1 dir=$2 r m
    echo "# logs in $dir ($(df -T "$dir" | awk 'NR == 2 { print $2 }'))"
    for m in fork_exec spawn fork_exit; do
        : > "$work/$m.plain"; : > "$work/$m.wj"
        for r in $(seq "$rounds"); do
            "$work/proc_cost" "$m" 40 >> "$work/$m.plain"
            WEDJAT_DIR="$dir/logs" LD_PRELOAD="$lib" "$work/proc_cost" "$m" 40 >> "$work/$m.wj"
        done
        paste "$work/$m.plain" "$work/$m.wj" | awk -v m="$m" -v n="$name" '
            { w0[NR] = $1; c0[NR] = $2; w1[NR] = $3; c1[NR] = $4 }
            function med(a, k,   i, j, t, v) { for (i = 1; i <= k; i++) v[i] = a[i]
                for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }
            END { a = med(w0, NR); b = med(w1, NR); ca = med(c0, NR); cb = med(c1, NR)
                printf "%-6s %-10s plain %8.1f us  watched %8.1f us  added %7.3f ms per child (target <= 0.300); CPU added %7.3f ms\n", n, m, a, b, (b - a) / 1000, (cb - ca) / 1000 }'
    done
    "$work/spawn_timer" $((rounds * 20)) WEDJAT_DIR="$dir/logs" LD_PRELOAD="$lib" -- /bin/true > "$work/true.txt"
    report_timer "$name" /bin/true 0.200 "$work/true.txt"
    # As many curls as /bin/trues: over 48 (four a round) the added time moved by 0.3 ms.
    "$work/spawn_timer" $((rounds * 20)) WEDJAT_DIR="$dir/logs" LD_PRELOAD="$lib" -- curl -s -o /dev/null "$url" > "$work/curl.txt"
    report_timer "$name" "curl GET" 1.000 "$work/curl.txt"
}
# report_timer NAME WHAT TARGET FILE: one line from spawn_timer's output
report_timer() {
    awk -v n="$1" -v what="$2" -v target="$3" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%-6s %-10s plain %8.3f ms  watched %8.3f ms  added %7.3f ms (target <= %s); CPU added %7.3f ms\n", n, what, v["median_without_ms"], v["median_with_ms"], v["added_ms"], target, v["cpu_added_ms"] }' "$4"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r), RLIMIT_NOFILE $(ulimit -n); $rounds rounds"
series tmpfs "$shm"
series disk "$work"

# Memory of a watched process that lived long enough to have wedjat's thread (a 1.5 s sleep
# after one connection): RSS and the kernel's fd table size, plain and watched.
mem() {  # LIMIT: prints "rss_kb fdsize" of plain and of watched
    local limit=$1 envs=("${@:2}")
    prlimit --nofile="$limit:$limit" env "${envs[@]}" python3 -c "
import socket, time, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); s.close()
time.sleep(1.5)
st = dict(l.split(':', 1) for l in open('/proc/self/status'))
print(st['VmRSS'].split()[0], st['FDSize'].strip())" "$(cat "$work/port")"
}
for limit in 1024 1048576; do
    # A soft limit above the hard one cannot be set without privileges (this VM's hard limit
    # is 20000): said, not measured.
    if ! prlimit --nofile="$limit:$limit" true 2>/dev/null; then
        echo "memory    RLIMIT_NOFILE $limit: cannot be set here (hard limit $(ulimit -Hn)); not measured"
        continue
    fi
    read -r rss0 fd0 <<< "$(mem $limit WEDJAT_DISABLE=1)"
    read -r rss1 fd1 <<< "$(mem $limit WEDJAT_DIR="$shm/logs" LD_PRELOAD="$lib")"
    echo "memory    RLIMIT_NOFILE $limit: RSS plain ${rss0} KiB, watched ${rss1} KiB (+$((rss1 - rss0)) KiB); fd table (FDSize) plain $fd0, watched $fd1"
done
