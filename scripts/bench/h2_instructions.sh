#!/usr/bin/env bash
# What wedjat adds to an HTTP/2 server, counted in instructions (issue 16): valgrind's
# cachegrind counts the user-space instructions of every thread exactly (method:
# ../shared/bench/README.md). nginx (one process, master_process off) serving a 606-byte file
# over TLS with HTTP/2 (ALPN h2) to h2load -c 4 -m 10 (unwatched), 3,000 and 13,000 requests:
# the difference divided by 10,000 is per request, start-up and TLS handshakes cancel. Runs
# plain, with WEDJAT_HTTP=0, default and counted (WEDJAT_HTTP_RECORDS=0: every stream only
# counted in http_summary, as nearly all are at a real server's rate; under cachegrind the
# default budget makes a third of the measured streams full records); prints instructions per request and what wedjat adds
# (target: <= +25% with HTTP/2 decoding), and what the default run logged.
#   scripts/bench/h2_instructions.sh LIBDIR [--cache-sim] [--rounds N]
#   scripts/bench/h2_instructions.sh --decoder
# --rounds N (default 3): the four configurations N times, interleaved; each printed figure is
# the median of its N series, with their range: one series moves by up to 500 instructions a
# request with h2load's batching (how many requests one TLS record carries).
# --decoder: the aggregator's HTTP/2 decoder alone, deterministic (no TLS, no scheduling):
# `wedjat-http-bench --h2` (release, built into a temp dir) under cachegrind, 10,000 nginx-like
# exchanges decoded in one round and in three, the difference per exchange decoded (building
# the frames cancels out; until 2026-12-07 the figure included it: 2,000 against 12,000; built
# without the exclusivity checks, as the agent is, since the second session of 2026-12-07).
# Every stream of this bench is detailed (a record's path); the nginx series moves by about 500
# instructions a request between runs with h2load's batching: a decoder change smaller than
# that is measured here.
# (To be folded into scripts/bench/http_instructions.sh as `--only h2`.)
# Talks only to 127.0.0.1; every server it starts is stopped by its PID.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [--cache-sim] [--rounds N] | --decoder" >&2; exit 2; }
if [ "$1" = --decoder ]; then
    command -v valgrind >/dev/null || { echo "needs valgrind (scripts/deps.sh)" >&2; exit 2; }
    root=$(cd "$(dirname "$0")/../.." && pwd)
    work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-h2dec.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    # Built as the agent is (scripts/build-lib.sh): without the dynamic exclusivity checks.
    swift build -c release --package-path "$root" --scratch-path "$work/build" --product wedjat-http-bench \
        -Xswiftc -enforce-exclusivity=unchecked >"$work/build.log" 2>&1 ||
        { tail -5 "$work/build.log" >&2; exit 1; }
    # valgrind 3.19 gives up on the release binary's DWARF: the symbols are enough here.
    strip --strip-debug -o "$work/bench" "$work/build/release/wedjat-http-bench"
    # The same 10,000 exchanges decoded once and three times: building them cancels out.
    for r in 1 3; do
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$work/cg.$r" "$work/bench" --h2 --messages 10000 --rounds "$r" \
            >/dev/null 2>"$work/vg.$r" || { tail -3 "$work/vg.$r" >&2; exit 1; }
    done
    a=$(awk '/^summary:/ { print $2 }' "$work/cg.1")
    b=$(awk '/^summary:/ { print $2 }' "$work/cg.3")
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) cachegrind $(valgrind --version)"
    echo "HTTP/2 decoder (wedjat-http-bench --h2): $(( (b - a) / 20000 )) instructions an exchange"
    exit 0
fi
lib=$(cd "$1" && pwd)/libwedjat.so
cache_sim=no
rounds=3
shift
while [ $# -gt 0 ]; do
    case $1 in
        --cache-sim) cache_sim=yes ;;
        --rounds) rounds=$2; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
for t in valgrind nginx h2load openssl; do
    command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || { echo "needs $t (scripts/deps.sh)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-h2.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
mkdir -p "$work/www" "$work/ngx-tmp"
head -c 606 /dev/zero | tr '\0' a > "$work/www/f.html"

# nginx_run PREFIX N ENV...: nginx under cachegrind, N requests from h2load, then SIGQUIT
# (graceful: cachegrind writes its counts). Prints "instructions d1_misses ll_misses".
nginx_run() {
    local prefix=$1 n=$2
    shift 2
    local port conf=$work/nginx.$prefix.$n.conf
    port=$(free_port)
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
    http2_max_requests 1000000;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $work/cert.pem;
        ssl_certificate_key $work/key.pem;
        root $work/www;
    }
}
CONF
    env "$@" valgrind --tool=cachegrind --trace-children=yes --cache-sim="$cache_sim" --cachegrind-out-file="$work/cg.$prefix.$n" \
        nginx -c "$conf" >/dev/null 2>"$work/cg.$prefix.$n.err" &
    local pid=$!
    pids+=("$pid")
    local up=
    for _ in $(seq 300); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null; then up=1; break; fi
        sleep 0.1
    done
    [ -n "$up" ] || { echo "nginx under valgrind did not start: $(tail -3 "$work/cg.$prefix.$n.err")" >&2; return 1; }
    h2load -n "$n" -c 4 -m 10 "https://127.0.0.1:$port/f.html" > "$work/h2load.$prefix.$n" 2>&1
    grep -q "$n succeeded" "$work/h2load.$prefix.$n" || echo "h2load: $(grep requests: "$work/h2load.$prefix.$n")" >&2
    grep -q "Application protocol: h2" "$work/h2load.$prefix.$n" || echo "h2load did not negotiate h2" >&2
    kill -QUIT "$pid"
    wait "$pid" || true
    awk '/^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
         /^summary:/ { for (i = 2; i <= NF; i++) v[name[i]] = $i }
         END { printf "%d %d %d\n", v["Ir"], v["D1mr"] + v["D1mw"], v["DLmr"] + v["DLmw"] }' "$work/cg.$prefix.$n"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r); cachegrind $(valgrind --version); cache-sim $cache_sim"
units=10000
for r in $(seq "$rounds"); do
    for cfg in plain http0 default counted; do
        envs=()
        case $cfg in
            plain) envs=(WEDJAT_UNUSED=1) ;;
            http0) envs=(WEDJAT_DIR="$work/logs-$cfg" WEDJAT_HTTP=0 LD_PRELOAD="$lib") ;;
            default) rm -rf "$work/logs-$cfg"; envs=(WEDJAT_DIR="$work/logs-$cfg" LD_PRELOAD="$lib") ;;
            counted) envs=(WEDJAT_DIR="$work/logs-$cfg" WEDJAT_HTTP_RECORDS=0 LD_PRELOAD="$lib") ;;
        esac
        nginx_run "$cfg" 3000 "${envs[@]}" > "$work/$cfg.small"
        nginx_run "$cfg" 13000 "${envs[@]}" > "$work/$cfg.big"
        read -r i1 d1 l1 < "$work/$cfg.small"
        read -r i2 d2 l2 < "$work/$cfg.big"
        awk -v a="$i1" -v b="$i2" -v c="$d1" -v d="$d2" -v e="$l1" -v f="$l2" -v u="$units" \
            'BEGIN { printf "%.1f %.2f %.3f\n", (b - a) / u, (d - c) / u, (f - e) / u }' >> "$work/$cfg.per"
    done
done
# per CFG: the median series' "instructions d1 ll" (by instructions) and the instructions' range.
per() {
    sort -n "$work/$1.per" | awk '{ v[NR] = $0; i[NR] = $1 } END { m = int((NR + 1) / 2); printf "%s %.1f %.1f\n", v[m], i[1], i[NR] }'
}
read -r bi bd bl blo bhi <<< "$(per plain)"
echo "nginx, 606-byte file, TLS + HTTP/2, h2load -c 4 -m 10 (median of $rounds series, range in brackets):"
printf "  %-10s %10.1f instructions/request [%.0f..%.0f]" plain "$bi" "$blo" "$bhi"
[ "$cache_sim" = yes ] && printf "  D1 misses %.2f  LL misses %.3f" "$bd" "$bl"
printf "\n"
for cfg in http0 default counted; do
    read -r i d l lo hi <<< "$(per "$cfg")"
    printf "  %-10s %10.1f instructions/request [%.0f..%.0f]  added %+8.1f (%+.1f%%)" "$cfg" "$i" "$lo" "$hi" \
        "$(awk -v a="$i" -v b="$bi" 'BEGIN { print a - b }')" "$(awk -v a="$i" -v b="$bi" 'BEGIN { print (a / b - 1) * 100 }')"
    [ "$cache_sim" = yes ] && printf "  D1 misses %+.2f  LL misses %+.3f" \
        "$(awk -v a="$d" -v b="$bd" 'BEGIN { print a - b }')" "$(awk -v a="$l" -v b="$bl" 'BEGIN { print a - b }')"
    printf "\n"
done
python3 - "$work/logs-default" <<'PY'
import json, os, sys
d = sys.argv[1]
http = summ = h2conns = 0
for f in os.listdir(d):
    for line in open(os.path.join(d, f)):
        r = json.loads(line)
        if r["type"] == "http": http += 1
        elif r["type"] == "http_summary": summ += r["count"]
        elif r["type"] == "connection" and r.get("http_version") == "HTTP/2": h2conns += 1
print(f"  default runs logged {http} http records + {summ} in http_summary over {h2conns} HTTP/2 connections"
      f" (h2load sent 16,000; 0 means the decoder is not wired)")
PY
