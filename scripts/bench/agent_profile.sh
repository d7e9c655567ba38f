#!/usr/bin/env bash
# Where wedjat's instructions go, function by function, on a busy server: nginx (one process,
# master_process off), or node (--node), under callgrind (--separate-threads=yes --dump-instr=yes), loaded by
# h2load, then each thread's exclusive instructions per request by function, the agent's
# functions named although valgrind cannot name them (lib/callgrind_symbols.py). The method of
# docs/PERFORMANCE.md's HTTP/2 sections, as a script.
#   scripts/bench/agent_profile.sh LIBDIR [--h1 | --node] [--records | --all-records] [--requests N] [--top K] [--keep DIR]
# LIBDIR: scripts/build-lib.sh's output; the agent's symbols come from .build-lib/embedded/
# libwedjat-agent.so (the same build: its GNU build id is checked). Default: nginx TLS +
# HTTP/2, 606-byte file, h2load -c 4 -m 10, 13,000 requests, every stream only counted
# (WEDJAT_HTTP_RECORDS=0, as at a real server's rate); --h1: HTTP/1.1 in clear text (h2load
# --h1 -c 8); --node: a Node.js http server (600-byte responses, h2load --h1 -c 8; wedjat's
# functions on node's main thread are what matter there: V8's own threads are listed too);
# --records: the default record budget; --all-records: every exchange a record (the
# cost of one record, against the default run). The per-request figures include start-up
# and the TLS handshakes (a few hundred instructions a request at 13,000); h2_instructions.sh
# gives the exact totals. --keep DIR: leaves callgrind's outputs there (for callgrind_annotate
# --auto=yes on libwedjat.so's lines, which has its debug information).
# Talks only to 127.0.0.1; the server it starts is stopped by its PID.
set -euo pipefail
usage() { echo "usage: $0 LIBDIR [--h1 | --node] [--records | --all-records] [--requests N] [--top K] [--keep DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
root=$(cd "$(dirname "$0")/../.." && pwd)
libdir=$(cd "$1" && pwd)
shift
h1=0 node=0 records=0 n=13000 top=30 keep=
while [ $# -gt 0 ]; do
    case $1 in
        --h1) h1=1 ;;
        --node) node=1 h1=1 ;;
        --records) records=1 ;;
        --all-records) records=2 ;;
        --requests) n=$2; shift ;;
        --top) top=$2; shift ;;
        --keep) keep=$2; shift ;;
        *) usage ;;
    esac
    shift
done
for t in valgrind h2load openssl python3 nm readelf $([ "$node" = 1 ] && echo node || echo nginx); do
    command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || { echo "needs $t (scripts/deps.sh)" >&2; exit 2; }
done
agent_syms=$root/.build-lib/embedded/libwedjat-agent.so
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ { print $3 }'; }
[ -f "$agent_syms" ] || { echo "no $agent_syms: run scripts/build-lib.sh" >&2; exit 2; }
[ "$(build_id "$agent_syms")" = "$(build_id "$libdir/libwedjat-agent.so")" ] ||
    { echo "$libdir/libwedjat-agent.so is not the build of $agent_syms (build ids differ): run scripts/build-lib.sh $libdir" >&2; exit 2; }
init_offset=$(nm -D --defined-only "$agent_syms" | awk '$3 == "wedjat_agent_init" { print $1 }')

work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-agent-profile.XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 606 /dev/zero | tr '\0' a > "$work/www/f.html"
listen="listen 127.0.0.1:$port;"
url="http://127.0.0.1:$port/f.html"
load=(h2load --h1 -c 8)
if [ "$h1" = 0 ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    listen="listen 127.0.0.1:$port ssl http2; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
    url="https://127.0.0.1:$port/f.html"
    load=(h2load -c 4 -m 10)
fi
cat > "$work/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    keepalive_requests 1000000;
    http2_max_requests 1000000;
    server { $listen root $work/www; }
}
CONF
envs=(WEDJAT_DIR="$work/logs" LD_PRELOAD="$libdir/libwedjat.so")
[ "$records" = 0 ] && envs+=(WEDJAT_HTTP_RECORDS=0)
[ "$records" = 2 ] && envs+=(WEDJAT_HTTP_RECORDS=1000000)
server=(nginx -c "$work/nginx.conf")
if [ "$node" = 1 ]; then
    server=(node "$root/scripts/bench/lib/node_server.js" "$port")
    url="http://127.0.0.1:$port/"
fi
env "${envs[@]}" valgrind --tool=callgrind --separate-threads=yes --dump-instr=yes \
    --callgrind-out-file="$work/cg.out" "${server[@]}" > "$work/valgrind.log" 2>&1 &
pid=$!
up=
for _ in $(seq 300); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null; then up=1; break; fi
    sleep 0.1
done
[ -n "$up" ] || { echo "${server[0]} under valgrind did not start: $(tail -3 "$work/valgrind.log")" >&2; exit 1; }
"${load[@]}" -n "$n" "$url" > "$work/load.txt" 2>&1
grep -q "$n succeeded" "$work/load.txt" || echo "load: $(grep requests: "$work/load.txt")" >&2
kill -QUIT "$pid"
wait "$pid" || true
pid=
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(valgrind --version); ${server[0]} $([ "$h1" = 1 ] && echo "HTTP/1.1" || echo "TLS + HTTP/2"), ${load[*]} -n $n;" \
     "$(case $records in 0) echo "WEDJAT_HTTP_RECORDS=0" ;; 1) echo "default record budget" ;; *) echo "every exchange a record" ;; esac); per request:"
python3 "$root/scripts/bench/lib/callgrind_symbols.py" "$n" "$agent_syms" "$init_offset" "$top" "$work"/cg.out-*
python3 "$root/scripts/bench/lib/exchanges.py" "$work/logs" "exchanges logged:"
if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$work"/cg.out-* "$keep"/ && echo "callgrind outputs in $keep"; fi
