#!/usr/bin/env bash
# What wedjat adds, counted in instructions instead of timed: valgrind's cachegrind counts the
# user-space instructions of every thread (the program's and wedjat's own) exactly, and the
# count does not move with the neighbours' load. Two sizes of each run, their difference
# divided by the extra work: start-up cancels.
#   1. Per socket call: sockloop.c, 1-byte send+recv pairs on a stream that is not HTTP
#      (AF_UNIX socketpair and loopback TCP), 100,000 and 300,000 pairs: plain, the floor
#      interposer (../shared/bench/floor.c, always-storing variant: two clock reads and a
#      32-byte ring store per call) when it is there, wedjat with WEDJAT_HTTP=0 and default;
#      and plain and the floor again with an idle second thread (floor+thread): what glibc's
#      multi-threaded path costs any interposer that has a thread of its own, as wedjat has.
#      The same with both ends O_NONBLOCK (unix-nonblock, tcp-nonblock), as an event loop's
#      sockets are: wedjat calls the kernel directly there (docs/PERFORMANCE.md).
#   2. Per HTTP request: nginx (one process, master_process off) serving a 606-byte file to
#      h2load --h1 -c 8 (keep-alive), 3,000 and 13,000 requests: plain, WEDJAT_HTTP=0, default,
#      and counted (WEDJAT_HTTP_RECORDS=0: every exchange only counted in http_summary, as
#      nearly all are at a real server's rate; under cachegrind nginx serves ~700 a second, so
#      the default budget makes a quarter of the measured requests full records).
#   3. Per HTTP request: a Node.js http server (600-byte responses), the same two sizes, when
#      node is installed.
#   4. Per exchange, the C HTTP/1 framer alone (h1_framer.c: nginx's request and response bytes
#      as the server's calls see them, every exchange counted), 2,000 and 12,000 exchanges:
#      the framer's share of the nginx figure, without nginx and the hooks (seconds to run).
# Prints instructions per call / per request, what wedjat adds (and in % of plain), and for
# the socket calls the ratio to the floor's addition.
#   scripts/bench/http_instructions.sh LIBDIR [--cache-sim] [--only sock|nginx|node|framer]
# --cache-sim: also D1 and LL (last level) data misses and I1 (instruction) misses per call /
# request (slower).
# Targets (issue: HTTP at line rate): nginx with HTTP parsing <= +25% instructions per
# request (stretch +10%), WEDJAT_HTTP=0 <= +5%; per socket call <= 1.5x the floor's addition.
# Talks only to 127.0.0.1; every server it starts is stopped by its PID.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [--cache-sim] [--only sock|nginx|node|framer]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
shift
cache_sim=no only=
while [ $# -gt 0 ]; do
    case $1 in
        --cache-sim) cache_sim=yes ;;
        --only) only=$2; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (scripts/deps.sh installs it)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-instr.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -o "$work/sockloop" "$here/sockloop.c"
floor_src=${WEDJAT_FLOOR_C:-$root/../shared/bench/floor.c}
floor=
if [ -f "$floor_src" ]; then
    gcc -O2 -shared -fPIC -DRING_OVERWRITE -o "$work/floor.so" "$floor_src" -ldl && floor=$work/floor.so
fi

# cg_summary FILE: a cachegrind output's totals, "instructions d1_misses ll_misses i1_misses"
# (all threads; misses 0 without --cache-sim). I1: where the program's own code is large (node's
# JIT and V8), wedjat's hot path is fetched into the instruction cache again every request.
cg_summary() {
    awk '/^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
         /^summary:/ { for (i = 2; i <= NF; i++) v[name[i]] = $i }
         END { printf "%d %d %d %d\n", v["Ir"], v["D1mr"] + v["D1mw"], v["DLmr"] + v["DLmw"], v["I1mr"] }' "$1"
}

# counts OUT CMD...: runs CMD under cachegrind; prints its cg_summary.
counts() {
    local out=$1
    shift
    valgrind --tool=cachegrind --trace-children=yes --cache-sim="$cache_sim" --cachegrind-out-file="$out" "$@" >/dev/null 2>"$out.err" ||
        { echo "failed: $* ($(tail -3 "$out.err"))" >&2; return 1; }
    cg_summary "$out"
}

# per PREFIX UNITS: counts of the two sizes -> per-unit figures "ir d1 ll i1"
per() {
    read -r i1 d1 l1 c1 < "$work/$1.small"
    read -r i2 d2 l2 c2 < "$work/$1.big"
    awk -v a="$i1" -v b="$i2" -v c="$d1" -v d="$d2" -v e="$l1" -v f="$l2" -v g="$c1" -v h="$c2" -v u="$2" \
        'BEGIN { printf "%.1f %.2f %.3f %.2f\n", (b - a) / u, (d - c) / u, (f - e) / u, (h - g) / u }'
}

report() {  # report LABEL UNIT PLAIN_PREFIX PREFIX...
    local label=$1 unit=$2 base=$3
    shift 3
    read -r bi bd bl bc <<< "$(per "$base" "$units")"
    printf "%s\n  %-22s %10.1f instructions/%s" "$label" "plain" "$bi" "$unit"
    [ "$cache_sim" = yes ] && printf "  D1 misses %.2f  LL misses %.3f  I1 misses %.2f" "$bd" "$bl" "$bc"
    printf "\n"
    for p in "$@"; do
        [ -f "$work/$p.small" ] || continue
        read -r i d l c <<< "$(per "$p" "$units")"
        printf "  %-22s %10.1f instructions/%s  added %+8.1f (%+.1f%%)" "${p#*.}" "$i" "$unit" \
            "$(awk -v a="$i" -v b="$bi" 'BEGIN { print a - b }')" "$(awk -v a="$i" -v b="$bi" 'BEGIN { print (a / b - 1) * 100 }')"
        [ "$cache_sim" = yes ] && printf "  D1 misses %+.2f  LL misses %+.3f  I1 misses %+.2f" \
            "$(awk -v a="$d" -v b="$bd" 'BEGIN { print a - b }')" "$(awk -v a="$l" -v b="$bl" 'BEGIN { print a - b }')" \
            "$(awk -v a="$c" -v b="$bc" 'BEGIN { print a - b }')"
        printf "\n"
    done
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); cachegrind $(valgrind --version); cache-sim $cache_sim"

# ---------------------------------------------------------------- 1. socket calls
if [ -z "$only" ] || [ "$only" = sock ]; then
    units=400000   # (300,000 - 100,000) pairs x 2 calls
    for kind in unix tcp unix-nonblock tcp-nonblock; do
        for cfg in plain floor floor+thread http0 default; do
            envs=() extra=()
            case $kind in *-nonblock) extra=(nonblock) ;; esac
            case $cfg in
                plain) ;;
                floor) [ -n "$floor" ] || continue; envs=(LD_PRELOAD="$floor") ;;
                floor+thread) [ -n "$floor" ] || continue; envs=(LD_PRELOAD="$floor"); extra+=(thread) ;;
                http0) envs=(WEDJAT_DIR="$work/logs" WEDJAT_HTTP=0 LD_PRELOAD="$lib") ;;
                default) envs=(WEDJAT_DIR="$work/logs" LD_PRELOAD="$lib") ;;
            esac
            counts "$work/cg" env "${envs[@]}" "$work/sockloop" "${kind%-nonblock}" 100000 "${extra[@]}" > "$work/$kind.$cfg.small"
            grep -h "retries" "$work/cg.err" >&2 || true
            counts "$work/cg" env "${envs[@]}" "$work/sockloop" "${kind%-nonblock}" 300000 "${extra[@]}" > "$work/$kind.$cfg.big"
            grep -h "retries" "$work/cg.err" >&2 || true
        done
        report "socket calls, $kind (1-byte send+recv, not HTTP):" call "$kind.plain" "$kind.floor" "$kind.floor+thread" "$kind.http0" "$kind.default"
        if [ -n "$floor" ]; then
            read -r pi _ < <(per "$kind.plain" "$units")
            read -r fl _ < <(per "$kind.floor" "$units")
            read -r ft _ < <(per "$kind.floor+thread" "$units")
            read -r di _ < <(per "$kind.default" "$units")
            awk -v p="$pi" -v f="$fl" -v t="$ft" -v d="$di" 'BEGIN {
                printf "  wedjat adds %.2fx what the floor adds (target <= 1.5); %.2fx what the floor with a thread adds\n", (d - p) / (f - p), (d - p) / (t - p) }'
        fi
    done
fi

# ---------------------------------------------------------------- 2. nginx
port_of() {  # port_of PIDFILE_OR_FILE: waits for a listening port written by a server
    local i
    for i in $(seq 100); do [ -s "$1" ] && { cat "$1"; return 0; }; sleep 0.1; done
    return 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve_count PREFIX SIZE ENV...: one server under cachegrind, SIZE requests from h2load, then
# the server stopped (SIGQUIT for nginx: graceful, so cachegrind writes its counts).
nginx_run() {
    local prefix=$1 n=$2
    shift 2
    local port conf=$work/nginx.$prefix.$n.conf
    port=$(free_port)
    mkdir -p "$work/www" "$work/ngx-tmp"
    head -c 606 /dev/zero | tr '\0' a > "$work/www/f.html"
    cat > "$conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.$prefix.$n.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $work/ngx-tmp/body;
    proxy_temp_path $work/ngx-tmp/proxy;
    fastcgi_temp_path $work/ngx-tmp/fastcgi;
    uwsgi_temp_path $work/ngx-tmp/uwsgi;
    scgi_temp_path $work/ngx-tmp/scgi;
    keepalive_requests 1000000;
    server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
    env "$@" valgrind --tool=cachegrind --trace-children=yes --cache-sim="$cache_sim" --cachegrind-out-file="$work/cg.$prefix.$n" \
        nginx -c "$conf" >/dev/null 2>"$work/cg.$prefix.$n.err" &
    local pid=$!
    pids+=("$pid")
    local up=
    for _ in $(seq 300); do
        if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null; then up=1; break; fi
        sleep 0.1
    done
    [ -n "$up" ] || { echo "nginx under valgrind did not start: $(tail -3 "$work/cg.$prefix.$n.err")" >&2; return 1; }
    h2load --h1 -n "$n" -c 8 "http://127.0.0.1:$port/f.html" > "$work/h2load.$prefix.$n" 2>&1
    grep -q "succeeded, 0 failed" "$work/h2load.$prefix.$n" || grep -q " 0 errored" "$work/h2load.$prefix.$n" ||
        { echo "h2load: $(grep requests: "$work/h2load.$prefix.$n")" >&2; }
    kill -QUIT "$pid"
    wait "$pid" || true
    cg_summary "$work/cg.$prefix.$n"
}

if { [ -z "$only" ] || [ "$only" = nginx ]; } && command -v nginx >/dev/null && command -v h2load >/dev/null; then
    units=10000
    for cfg in plain http0 default counted; do
        envs=()
        case $cfg in
            plain) envs=(WEDJAT_UNUSED=1) ;;
            http0) envs=(WEDJAT_DIR="$work/logs-$cfg" WEDJAT_HTTP=0 LD_PRELOAD="$lib") ;;
            default) envs=(WEDJAT_DIR="$work/logs-$cfg" LD_PRELOAD="$lib") ;;
            counted) envs=(WEDJAT_DIR="$work/logs-$cfg" WEDJAT_HTTP_RECORDS=0 LD_PRELOAD="$lib") ;;
        esac
        nginx_run "$cfg" 3000 "${envs[@]}" > "$work/nginx.$cfg.small"
        nginx_run "$cfg" 13000 "${envs[@]}" > "$work/nginx.$cfg.big"
    done
    report "nginx, 606-byte file, h2load --h1 -c 8 (keep-alive):" request nginx.plain nginx.http0 nginx.default nginx.counted
    if [ -d "$work/logs-default" ]; then
        python3 "$here/lib/exchanges.py" "$work/logs-default" "  exchanges logged by the default runs (h2load sent 16,000):"
    fi
elif [ -z "$only" ] || [ "$only" = nginx ]; then
    echo "nginx: skipped (needs nginx and h2load: Debian nginx, nghttp2-client)"
fi

# ---------------------------------------------------------------- 3. Node.js
if { [ -z "$only" ] || [ "$only" = node ]; } && command -v node >/dev/null && command -v h2load >/dev/null; then
    units=10000
    node_run() {
        local prefix=$1 n=$2
        shift 2
        rm -f "$work/node.port"
        env "$@" valgrind --tool=cachegrind --trace-children=yes --cache-sim="$cache_sim" --cachegrind-out-file="$work/cg.node.$prefix.$n" \
            node "$here/lib/node_server.js" 0 "$work/node.port" >/dev/null 2>"$work/cg.node.$prefix.$n.err" &
        local pid=$! port
        pids+=("$pid")
        port=$(port_of "$work/node.port") || { echo "node did not start" >&2; return 1; }
        h2load --h1 -n "$n" -c 8 "http://127.0.0.1:$port/" > "$work/h2load.node.$prefix.$n" 2>&1
        kill -TERM "$pid"
        wait "$pid" || true
        cg_summary "$work/cg.node.$prefix.$n"
    }
    for cfg in plain http0 default; do
        envs=()
        case $cfg in
            plain) envs=(WEDJAT_UNUSED=1) ;;
            http0) envs=(WEDJAT_DIR="$work/logs-node-$cfg" WEDJAT_HTTP=0 LD_PRELOAD="$lib") ;;
            default) envs=(WEDJAT_DIR="$work/logs-node-$cfg" LD_PRELOAD="$lib") ;;
        esac
        node_run "$cfg" 3000 "${envs[@]}" > "$work/node.$cfg.small"
        node_run "$cfg" 13000 "${envs[@]}" > "$work/node.$cfg.big"
    done
    report "Node.js http server, 600-byte responses, h2load --h1 -c 8 (keep-alive):" request node.plain node.http0 node.default
fi

# ---------------------------------------------------------------- 4. the framer alone
if [ -z "$only" ] || [ "$only" = framer ]; then
    units=10000
    ${CC:-cc} -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -I "$root/CShims/common/include" -I "$root/CShims/common" \
        "$here/h1_framer.c" "$root/CShims/common/http1.c" "$root/CShims/common/http_counts.c" -o "$work/h1_framer"
    counts "$work/cg.framer" "$work/h1_framer" 2000 > "$work/framer.small"
    counts "$work/cg.framer" "$work/h1_framer" 12000 > "$work/framer.big"
    read -r fi_ fd_ fl_ _ < <(per framer "$units")
    printf "C HTTP/1 framer alone (nginx's exchange, counted):\n  %-22s %10.1f instructions/exchange" framer "$fi_"
    [ "$cache_sim" = yes ] && printf "  D1 misses %.2f  LL misses %.3f" "$fd_" "$fl_"
    printf "\n"
fi
