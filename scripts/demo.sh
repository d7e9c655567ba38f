#!/usr/bin/env bash
# The main job, end to end on a bundled demo: installs what is missing, builds and installs
# wedjat into .build-demo/, starts a local HTTP server on 127.0.0.1 (itself watched), runs
# real clients (curl, python3) under `wedjat run`, stops the server and prints the report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
prefix="$root/.build-demo"
echo "== building and installing wedjat into $prefix" >&2
"$root/scripts/install.sh" --prefix "$prefix" >&2
wedjat="$prefix/bin/wedjat"

# The interpreter itself, not a version manager's shell shim (which would fill the report).
py=$(python3 -c 'import sys; print(sys.executable)')
work=$(mktemp -d)
logs="$work/logs"
mkdir -p "$work/site" "$logs"
head -c 1048576 /dev/urandom > "$work/site/blob.bin"
echo "hello from wedjat's demo" > "$work/site/index.html"

server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== starting a watched HTTP server on 127.0.0.1" >&2
WEDJAT_DIR="$logs" LD_PRELOAD="$prefix/lib/libwedjat.so" \
 "$py" "$root/scripts/demo/server.py" "$work/site" > "$work/port" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(cat "$work/port")
[ -n "$port" ] || { echo "demo: the server did not start" >&2; exit 1; }

echo "== clients under wedjat run" >&2
for i in 1 2 3; do
  "$wedjat" run --dir "$logs" -- curl -s -o /dev/null -w "curl: %{http_code} %{size_download} bytes in %{time_total}s\n" "http://127.0.0.1:$port/blob.bin"
done
"$wedjat" run --dir "$logs" -- curl -s -o /dev/null -w "curl: %{http_code} after %{time_starttransfer}s\n" "http://127.0.0.1:$port/slow?ms=300"
"$wedjat" run --dir "$logs" -- "$py" -c "
import urllib.request
for _ in range(5):
    body = urllib.request.urlopen('http://127.0.0.1:$port/index.html').read()
print('python: 5 requests,', len(body), 'bytes each')"
# A refused connection: the report shows it as an error.
"$wedjat" run --dir "$logs" -- curl -s -o /dev/null "http://127.0.0.1:1/" || echo "curl: refused (exit $?), as expected"

kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
echo "== report" >&2
"$wedjat" report "$logs"
