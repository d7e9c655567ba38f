# Popular runtimes and tools start, run and exit exactly as without wedjat (stdout, stderr,
# exit status), including ones that make network connections; each watched program's logs
# are valid. Programs that are not installed are skipped (listed), not failed.
. "$WJ_LIB/common.sh"

# a local HTTP server for the programs that fetch something
mkdir -p www; echo "hello from the test server" > www/hello.txt
bg_start server "$PYTHON" "$WJ_LIB/httpserver.py" www port
wait_file port || fail "server did not start"
port=$(cat port)
url=http://127.0.0.1:$port/hello.txt

cat > script.sh <<'SH'
#!/bin/bash
set -e
total=0
for i in $(seq 1 100); do total=$((total + i)); done
echo "sum=$total"
printf '%s\n' c b a | sort | tr '\n' ' '
echo
ls / >/dev/null
exit 7
SH
chmod +x script.sh

ran=0 skipped=()
compare() {
    # [NEED=binary] compare NAME cmd args...   (skipped when NEED, default cmd, is not installed)
    local name=$1
    shift
    local need=${NEED:-$1}
    if ! command -v "$need" >/dev/null 2>&1; then skipped+=("$name"); return 0; fi
    local d=logs_$name
    plain "$@" > "$name.p.out" 2> "$name.p.err"; local rp=$?
    wj "$d" "$@" > "$name.w.out" 2> "$name.w.err"; local rw=$?
    [ $rp = $rw ] || soft_fail "$name: exit status $rp without, $rw with the preload ($(head -c 300 "$name.w.err"))"
    cmp -s "$name.p.out" "$name.w.out" || { diff "$name.p.out" "$name.w.out" | head -5; soft_fail "$name: stdout differs"; }
    cmp -s "$name.p.err" "$name.w.err" || { diff "$name.p.err" "$name.w.err" | head -5; soft_fail "$name: stderr differs"; }
    if [ -d "$d" ]; then
        python3 "$WJ_LIB/logs.py" check "$d" > "$name.check" || soft_fail "$name: $(cat "$name.check")"
    else
        soft_fail "$name: no logs written"
    fi
    ran=$((ran + 1))
    echo "$name: exit $rp, $(wc -c < "$name.p.out") bytes out, $(wc -c < "$name.p.err") bytes err, $(ls "$d" 2>/dev/null | wc -l) logs"
}

NEED=python3 compare python "$PYTHON" -c 'import json, sys, urllib.request; print(json.dumps({"a": [1, 2]})); print(urllib.request.urlopen(sys.argv[1]).read().decode().strip()); sys.exit(4)' "$url"
compare perl perl -e 'use strict; my %h = (a => 1, b => 2); print join(",", map { "$_=$h{$_}" } sort keys %h), "\n"; warn "to stderr\n"; exit 5'
compare git git --version
NEED=git compare git_init sh -c 'rm -rf repo && git init -q repo && cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m && git log --format=%s'
compare node node -e 'console.log(1); console.error("err"); process.exitCode = 6'
compare node_http node -e 'require("http").get(process.argv[1], r => { let b = ""; r.on("data", d => b += d); r.on("end", () => console.log(r.statusCode, b.trim())); })' "$url"
compare java java -version
compare bash_script bash ./script.sh
compare nginx_v nginx -v
compare redis_v redis-server --version
compare curl curl -sS "$url"
compare curl_refused curl -sS "http://127.0.0.1:1/"
NEED=python3 compare python_refused "$PYTHON" -c '
import socket
try:
    socket.create_connection(("127.0.0.1", 1), timeout=None)
except ConnectionRefusedError as e:
    print("refused", e.errno)
'

# connections made by the watched runtimes are in their logs, with the server as peer
pylogs "$port" <<'PY'
port = int(sys.argv[1])
for d, exe in [("logs_python", None), ("logs_node_http", "node"), ("logs_curl", "curl")]:
    import os
    if not os.path.isdir(d):
        continue
    logs = load_dir(d)
    conns = [c for c in records(logs, "connection") if c["peer"] == f"127.0.0.1:{port}"]
    expect_eq(len(conns), 1, f"{d}: connections to the test server")
    if conns:
        expect(conns[0]["bytes_in"] > 27, f"{d}: bytes_in {conns[0]['bytes_in']}")
# a refused connect is a connection record with error ECONNREFUSED, blocking (python) or
# non-blocking (curl: connect returns EINPROGRESS, the failure shows in poll + SO_ERROR)
for d in ("logs_python_refused", "logs_curl_refused"):
    if os.path.isdir(d):
        c = records(load_dir(d), "connection", transport="tcp")
        expect(len(c) >= 1, f"{d}: no connection record for the refused connect")
        for x in c:
            expect_eq((x["peer"], x["error"], x["bytes_in"], x["bytes_out"]),
                      ("127.0.0.1:1", "ECONNREFUSED", 0, 0), f"{d}: (peer, error, bytes_in, bytes_out)")
PY
[ $? = 0 ] || soft_fail "connection checks (above)"


[ ${#skipped[@]} = 0 ] || note "not installed, skipped: ${skipped[*]}"
[ $ran -gt 0 ] || skip "none of the programs is installed"
finish
